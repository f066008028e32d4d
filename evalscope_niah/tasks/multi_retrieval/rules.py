"""The multi-value task's rule: recall x precision of the needle values an answer states, computed once."""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence

from ..kit import (
    MAX_SCAN_CHARS,
    NUMBER_WORDS,
    UNCERTAIN_SCORE_CAP,
    Paste,
    PromptText,
    RuleScore,
    check_language,
    negated_values,
    paste_evidence,
)

__all__ = ['multi_retrieval_score']

_DIGIT_RUN = re.compile(r'[0-9]+')
# One character between digit groups that may be a thousands separator: '4,821,937', '4 821 937', "4'821'937".
_GROUP_SEPARATORS = frozenset(",. '_\u00a0\u2009\u202f")


def _digit_chains(text: str) -> list[list[re.Match[str]]]:
    """Maximal digit runs, grouped into chains of runs joined by exactly one separator character."""
    chains: list[list[re.Match[str]]] = []
    for run in _DIGIT_RUN.finditer(text):
        if chains:
            last = chains[-1][-1]
            gap = text[last.end() : run.start()]
            if len(gap) == 1 and gap in _GROUP_SEPARATORS:
                chains[-1].append(run)
                continue
        chains.append([run])
    return chains


def _is_grouped(text: str, chain: Sequence[re.Match[str]]) -> bool:
    """True when the chain reads as one number with thousands separators: '4,821,937', not '4821937,1234567'."""
    if len(chain) < 2 or not 1 <= len(chain[0].group()) <= 3:
        return False
    if any(len(run.group()) != 3 for run in chain[1:]):
        return False
    separators = {text[a.end() : b.start()] for a, b in itertools.pairwise(chain)}
    return len(separators) == 1


def _number_candidates(text: str, lengths: frozenset[int]) -> set[str]:
    """Distinct numbers in the text whose digit count is one of ``lengths``.

    A chain such as '4,821,937' is merged into '4821937' only when it is a well-formed grouping (first group of
    1-3 digits, then groups of exactly 3, one separator throughout) *and* the merged number has a wanted length;
    otherwise its runs count separately, so '4821937, 1234567' or '123 456' with 3-digit values stay two numbers.
    """
    candidates: set[str] = set()
    for chain in _digit_chains(text):
        merged = ''.join(run.group() for run in chain)
        if _is_grouped(text, chain) and len(merged) in lengths:
            candidates.add(merged)
            continue
        candidates.update(run.group() for run in chain if len(run.group()) in lengths)
    return candidates


def _digit_values(values: Sequence[str], param: str) -> tuple[str, ...]:
    if isinstance(values, str):
        raise TypeError(f'{param} must be a sequence of strings, not a string')
    cleaned = tuple(dict.fromkeys(unicodedata.normalize('NFKC', v).strip() for v in values))
    bad = [v for v in cleaned if not _DIGIT_RUN.fullmatch(v)]
    if bad:
        raise ValueError(f'{param} must be digit strings, got {bad!r}')
    return cleaned


def multi_retrieval_score(
    answer: str,
    *,
    values: Sequence[str],
    distractor_values: Sequence[str] = (),
    reference: str | None = None,
    needles: Sequence[str] = (),
    question: str = '',
    language: str = 'en',
    prompt: PromptText | None = None,
) -> RuleScore:
    """Recall x precision of the needle values (digit strings) that the final answer states, with both reported.

    Candidates are the distinct numbers in the answer (full-width digits folded) that have the length of some needle
    or distractor value, so counts such as '3 numbers' are ignored. Precision is over those candidates: a distractor
    value (the same kind of fact for another key, placed in the haystack) or any other number of that length is
    wrong, so enumerating every number seen is not rewarded. A number glued into a longer digit run
    ('48219371234567') does not count. An answer that pastes the prompt (``paste_evidence``: verbatim runs of the
    haystack beyond the needles and question) has its precision scaled by the share of it that is not pasted (a
    pasted context states every value and no other); without ``prompt`` only the last-resort length bound scales
    it. ``reference`` defaults to the values joined by ', '. Certain, except when the answer has no digits of the
    values' length but spells numbers out (words or Chinese numerals), which a judge can read.

    ``values``: acc (recall x precision: stricter than F1 on number dumps, 1.0 only for every value and nothing
    else), rule_recall, precision; ``evidence``: found (needle order), wrong (sorted), distractors_named, f1,
    length_factor.
    """
    check_language(language)
    wanted = _digit_values(values, 'values')
    if not wanted:
        raise ValueError('values must not be empty')
    distractors = frozenset(_digit_values(distractor_values, 'distractor_values')) - set(wanted)
    reference = ', '.join(wanted) if reference is None else reference
    final = unicodedata.normalize('NFKC', answer)
    candidates, found, wrong, named = _stated_numbers(final, wanted, distractors)
    paste = paste_evidence(
        final, allowed=(*needles, question, reference, *wanted), prompt=prompt, language=language, reference=reference
    )
    recall = len(found) / len(wanted)
    precision = len(found) / len(candidates) * paste.factor if candidates else 0.0
    f1 = 2 * precision * recall / (precision + recall) if found else 0.0
    explanation = _explanation(found, wanted, wrong, named, paste=paste, language=language, stated=bool(candidates))
    score, certain, explanation, flags = _verdict(
        recall * precision,
        explanation,
        negations=negated_values(final, found, needles=needles, question=question, language=language),
        spelt_out=not found and not wrong and NUMBER_WORDS.search(answer[:MAX_SCAN_CHARS]) is not None,
        named=bool(named),
        paste_flag=('paste' if prompt is not None else 'long') if paste.factor < 1.0 else None,
    )
    return RuleScore(
        values={'acc': score, 'rule_recall': recall, 'precision': precision},
        certain=certain,
        explanation=explanation,
        flags=flags,
        evidence={'found': found, 'wrong': wrong, 'distractors_named': named, 'f1': f1, 'length_factor': paste.factor},
    )


def _verdict(
    score: float, explanation: str, *, negations: Sequence[str], spelt_out: bool, named: bool, paste_flag: str | None
) -> tuple[float, bool, str, tuple[str, ...]]:
    """Score, certainty, explanation and flags: a negated value is capped and uncertain, numbers spelt out are for a
    judge, anything else is certain."""
    if negations:
        # A value stated only to be denied is not given: capped as the single-needle rule caps it; a judge may read it.
        return min(score, UNCERTAIN_SCORE_CAP), False, f'{explanation}; negated ({negations[0]!r})', ('negation',)
    if spelt_out:
        return score, False, explanation + '; numbers spelt out: a judge decides', ('number_words',)
    flags = ('exact',) if score == 1.0 else ('distractor',) if named else ()
    return score, True, explanation, flags + ((paste_flag,) if paste_flag else ())


def _stated_numbers(
    final: str, wanted: Sequence[str], distractors: frozenset[str]
) -> tuple[set[str], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The numbers an answer states of the values' lengths: all of them, the values found (needle order), the wrong
    ones (sorted) and which of those are distractor values."""
    candidates = _number_candidates(final, frozenset(len(v) for v in (*wanted, *distractors)))
    found = tuple(v for v in wanted if v in candidates)
    wrong = tuple(sorted(candidates - set(wanted)))
    return candidates, found, wrong, tuple(v for v in wrong if v in distractors)


def _explanation(
    found: Sequence[str],
    wanted: Sequence[str],
    wrong: Sequence[str],
    named: Sequence[str],
    *,
    paste: Paste,
    language: str,
    stated: bool,
) -> str:
    """What the answer stated, in one line: values found, wrong numbers, the paste's scaling, no number at all."""
    parts = [f'{len(found)} of {len(wanted)} values stated']
    if wrong:
        parts.append(f'{len(wrong)} wrong number(s) ({len(named)} distractor value(s) of other keys)')
    if paste.factor < 1.0:
        parts.append(f'{paste.describe(language)} (precision x {paste.factor:.2f})')
    if not stated:
        parts.append("no number of the values' length in the answer")
    return '; '.join(parts)
