"""Needle recall: the share of a needle's fact units an answer holds, the rule score of a needle with no short
answer and the recall reported beside every single-needle verdict."""

from __future__ import annotations

from collections.abc import Sequence

from ..languages import CJK_CHAR
from .bounds import CERTAIN_PASS, RECALL_LENGTH_FACTOR, RECALL_LENGTH_MARGIN, UNCERTAIN_LOW
from .text import check_language, en_facts, en_words, stem, zh_facts, zh_present, zh_units

__all__ = ['needle_recall', 'rule_is_certain']


def _length_penalty(answer_len: int, needle_len: int) -> float:
    """Factor <= 1 that scales recall down for answers much longer than the needle (pasted context)."""
    allowed = max(RECALL_LENGTH_FACTOR * needle_len, needle_len + RECALL_LENGTH_MARGIN)
    return 1.0 if answer_len <= allowed else allowed / answer_len


def needle_recall(
    answer: str, *, needles: Sequence[str], question: str, language: str, penalise_length: bool = True
) -> float:
    """Share of the needles' fact units that the answer contains, in [0, 1].

    Fact units are the needle's content words (English: lowercase word tokens minus stopwords; Chinese: character
    bigrams, see ``zh_fact_units``) minus whatever the question already says, so echoing the question earns
    nothing. Recall is over the union of all needles' fact units. Answers longer than
    ``max(3 × needle length, needle length + 40)`` units (words for English, characters for Chinese) are scaled by
    ``allowed / answer length``, so pasting the context back does not earn full marks; ``penalise_length`` False
    leaves that to the caller (the verdicts measure a paste by evidence, see ``paste_evidence``).
    """
    check_language(language)
    if isinstance(needles, str):
        # A bare string would silently be read as one needle per character.
        raise TypeError('needles must be a sequence of strings, not a string')
    if not needles:
        raise ValueError('needles must not be empty')

    if language == 'en':
        q_stems = frozenset(stem(w) for w in en_words(question))
        facts: set[str] = set().union(*(en_facts(n, q_stems) for n in needles))
        answer_tokens = en_words(answer)
        answer_stems = {stem(w) for w in answer_tokens}
        found = sum(1 for f in facts if f in answer_stems)
        needle_len = sum(len(en_words(n)) for n in needles)
    else:
        facts = set().union(*(zh_facts(n, question) for n in needles))
        answer_tokens = zh_units(answer)
        answer_norm = ''.join(answer_tokens)  # drops whitespace/punctuation so bigrams match across them
        answer_words = {u for u in answer_tokens if not CJK_CHAR.fullmatch(u)}
        found = sum(1 for f in facts if zh_present(f, answer_norm, answer_words))
        needle_len = sum(len(zh_units(n)) for n in needles)

    if not facts or not answer_tokens:
        return 0.0
    penalty = _length_penalty(len(answer_tokens), needle_len) if penalise_length else 1.0
    return found / len(facts) * penalty


def rule_is_certain(recall: float) -> bool:
    """True when the recall is clear enough that the ``llm_recall`` strategy can skip the judge."""
    return recall >= CERTAIN_PASS or recall <= UNCERTAIN_LOW
