"""OpenCompass CDME's string scores, kept beside the rule verdicts for comparability: Levenshtein similarity and
the reasoning needle's keyword score."""

from __future__ import annotations

import re

from .text import WHITESPACE

__all__ = ['keyword_score', 'levenshtein_score']


def _edit_distance(a: str, b: str) -> int:
    """Levenshtein distance with two rows: O(len(a)·len(b)) time, O(min) memory."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def levenshtein_score(answer: str, reference: str) -> float:
    """OpenCompass CDME score: ``1 − edit_distance / max(len)`` over characters with all whitespace removed.

    Both empty → 1.0 (identical strings, as CDME's ``max_len == 0`` branch); an empty answer to a non-empty
    reference → 0.0. Answers longer than ``4 × len(reference) + 200`` are truncated before the quadratic edit
    distance (a pasted context would otherwise cost seconds per sample); the cut tail is then charged as deletions,
    so the result is a lower bound that is exact when the answer starts with the reference and is at most
    ``len(reference) / len(answer)`` (near 0) in any case.
    """
    a = WHITESPACE.sub('', answer)
    r = WHITESPACE.sub('', reference)
    longest = max(len(a), len(r))
    if longest == 0:
        return 1.0
    cap = 4 * len(r) + 200
    distance = _edit_distance(a[:cap], r) + max(0, len(a) - cap)
    return max(0.0, 1.0 - distance / longest)


def keyword_score(answer: str, *, keyword: str, reference: str) -> float:
    """CDME reasoning-needle score: 1.0 if the keyword occurs in the answer, else ``0.2 × levenshtein_score``.

    The keyword match ignores case and all whitespace. Unlike CDME's plain substring test, a keyword that starts or
    ends with a Latin letter or digit must not run on into another one there: 'Jackie' (the essays' corpus has one)
    does not answer 'Jack'. Callers pass the final answer (reasoning stripped once, by ``strip_reasoning``).
    """
    key = WHITESPACE.sub('', keyword).casefold()
    if not key:
        raise ValueError('keyword must contain a non-whitespace character')
    pattern = r'\s*'.join(re.escape(character) for character in key)
    if _WORD_CHARACTER.match(key[0]):
        pattern = r'(?<![a-z0-9])' + pattern
    if _WORD_CHARACTER.match(key[-1]):
        pattern += r'(?![a-z0-9])'
    if re.search(pattern, answer.casefold()):
        return 1.0
    return 0.2 * levenshtein_score(answer, reference)


_WORD_CHARACTER = re.compile(r'[a-z0-9]')
