"""An answer that must assert exactly one of several known candidates (a reasoning chain's keyword, an associative
pair's name): the ladder both tasks score by, and the names an English answer guesses."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..languages import CJK_CHAR
from .bounds import LIST_GAP_CHARS, LISTED_NAME_SCORE, MAX_SCAN_CHARS, MAX_SPANS
from .cues import cue_near, cue_verdict, excluded_cue_text, is_list_item, other_language
from .paste import PromptText, paste_evidence
from .result import RuleScore
from .text import key_spans, normalise, read_answer, zh_key_spans

__all__ = ['en_names', 'one_candidate_score']

_EN_NAME = re.compile(r"\b[A-Z][\w']*(?:\s+[A-Z][\w']*)*")
# Capitalised words that start a sentence or a name's description rather than name a candidate.
_NOT_NAMES = frozenset(
    # A word block reads better than a 33-item literal.
    'the of a an in on at to last this that these those it its his her he she they their who what which when '  # noqa: SIM905
    'where why how every all one first only'.split()
)


def en_names(text: str) -> list[str]:
    names = []
    for match in _EN_NAME.finditer(text):
        words = match.group().split()
        while words and words[0].casefold() in _NOT_NAMES:
            words = words[1:]
        if words:
            names.append(' '.join(words).removesuffix("'s"))
    return names


def _candidate_spans(text: str, candidate: str) -> list[tuple[int, int]]:
    if CJK_CHAR.search(candidate):
        return zh_key_spans(text, candidate)
    pattern = r'(?<![^\W_])' + re.escape(normalise(candidate)).replace(r'\ ', r'\s+') + r'(?![^\W_])'
    return [m.span() for m in re.finditer(pattern, text)]


# What may stand between two names of a list: separators, 'and'/'or', '和'/'或', brackets, whitespace.
# Markdown emphasis and an article count as separators too: '_The bathroom_ / _The bedroom_' is a list of names.
_LIST_GAP = re.compile(
    r'(?:[\s,，、;；/|()（）\[\]&+*_-]|\band\b|\bor\b|(?<![a-z])the(?![a-z])|和|或者?|与|及)*', re.IGNORECASE
)


def _en_guessed_names(original: str) -> list[str]:
    """Capitalised names in an English answer, except a single word opening a sentence ('Yes', 'Definitely')."""
    names = []
    for match in _EN_NAME.finditer(original[:MAX_SCAN_CHARS]):
        # A word opening a sentence or a line ('Context:' after a blank line) is capitalised for that, not a name.
        before = original[: match.start()].rstrip(' \t')
        opening = not before.strip() or before[-1] in '.!?:;"\'(\n'
        if opening and ' ' not in match.group():
            continue
        names.extend(en_names(match.group()))
    return names


def _listed_neighbour(
    text: str,
    spans: Sequence[tuple[int, int]],
    *,
    keyword: str,
    candidates: Sequence[str],
    language: str,
    original: str,
) -> str | None:
    """The first other name that sits right next to the keyword with only list separators between them
    ('Jack La Giostra', '柯远山、唢呐', 'Jack and Pim'), or None. 'Corvin Halse likes the oboe best' names two
    candidates but asserts one: words stand between them."""
    pool = list(candidates)
    if language == 'en':
        # Capitalised names that are not candidates count too: a list of guessed names is still a list.
        pool += _en_guessed_names(original)
    names: list[tuple[int, int, str]] = []
    for name in dict.fromkeys(pool):
        if normalise(name) != normalise(keyword):
            names += [(*span, name) for span in _candidate_spans(text, name)[:MAX_SPANS]]
    names = [name for name in names if not any(name[0] < end and start < name[1] for start, end in spans)]
    for start, end in spans[:MAX_SPANS]:
        for name_start, name_end, name in names:
            gap = text[end:name_start] if name_start >= end else text[name_end:start]
            if len(gap) <= LIST_GAP_CHARS and _LIST_GAP.fullmatch(gap):
                return name
    return None


def one_candidate_score(
    answer: str,
    *,
    keyword: str,
    candidates: Sequence[str],
    language: str,
    reference: str | None = None,
    needles: Sequence[str] = (),
    question: str = '',
    prompt: PromptText | None = None,
) -> RuleScore:
    """Rule verdict for an answer (final, reasoning stripped) that must assert exactly one candidate, the keyword,
    plainly: a reasoning chain's keyword (``chain_answer_score``) or an associative pair's name.

    Fails (score <= 0.3) when the keyword is missing, when a negation/retraction/hedge cue is near it (uncertain:
    'it is not Jack'), when it is one of a list of names ('Jack, Pim or Osgood'; or two or more candidates with
    almost nothing else said), or when it pastes the prompt (``paste_evidence``: the links and question may be
    quoted, the haystack around them not; without ``prompt`` only the last-resort length bound). An
    explanation that walks the chain ('Jack makes it: the best restaurant is La Giostra, ...') passes: its other
    candidates come with their roles. A keyword-less answer in the other language is uncertain. ``candidates``
    come from the task (``chain_candidates``, the associative names); CDME's ``keyword_score`` stays a separate,
    reported metric.
    """
    read = read_answer(answer, language=language, keys=candidates, keys_name='candidates')
    if read is None:
        return RuleScore.no_final_answer()
    final, text = read.final, read.text
    spans = key_spans(text, normalise(keyword))
    if not spans:
        if other_language(final, language=language):
            return RuleScore.verdict(
                0.0, False, 'keyword not found; the answer is in the other language', ('other_language',)
            )
        return RuleScore.verdict(0.0, True, f'the keyword {keyword!r} is not in the answer', ('missing',))
    reference = reference if reference is not None else keyword
    paste = paste_evidence(
        final, allowed=(*needles, question, reference, keyword), prompt=prompt, language=language, reference=reference
    )
    if paste.found:
        return paste.verdict(language, certain=True)
    return _asserted_verdict(
        text, spans, keyword=keyword, candidates=candidates, language=language, reference=reference, original=final
    )


def _asserted_verdict(
    text: str,
    spans: Sequence[tuple[int, int]],
    *,
    keyword: str,
    candidates: Sequence[str],
    language: str,
    reference: str,
    original: str,
) -> RuleScore:
    """The keyword is named and nothing is pasted: a pass unless a cue is near it or it is listed among names."""
    hits = cue_near(text, spans, language=language, excluded=excluded_cue_text(reference, *candidates))
    if hits:
        return cue_verdict(hits, 'names the keyword')
    if is_list_item(text, spans, language=language):
        return RuleScore.verdict(LISTED_NAME_SCORE, True, 'the keyword is one item of a list of names', ('list',))
    neighbour = _listed_neighbour(
        text, spans, keyword=keyword, candidates=candidates, language=language, original=original
    )
    if neighbour:
        return RuleScore.verdict(
            LISTED_NAME_SCORE,
            True,
            f'the keyword is listed next to another name ({neighbour!r}) with nothing to pick one',
            ('list',),
        )
    return RuleScore.verdict(1.0, True, 'asserts the keyword, one candidate, plainly', ('exact',))
