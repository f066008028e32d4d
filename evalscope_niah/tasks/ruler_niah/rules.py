"""The ruler_niah rule: RULER's string_match_all (the share of the asked values the answer contains, its score for
every niah variant) reported as it is, and an accuracy that also refuses what string_match_all rewards: an answer
listing every value it saw, a paste of the prompt, a value stated only to be denied."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from ..kit import (
    LIST_ITEM_SCORE,
    MAX_SCAN_CHARS,
    NUMBER_WORDS,
    UNCERTAIN_SCORE_CAP,
    PromptText,
    RuleScore,
    negated_values,
    paste_evidence,
)
from .words import ADJECTIVES, NOUNS

__all__ = ['ruler_niah_score', 'string_match_all']

# What a value of each type looks like in an answer: a candidate the answer states.
_PATTERNS = {
    'numbers': re.compile(r'(?<![0-9])(?:[0-9]{7}|[0-9]([,.\u202f\u00a0 ])[0-9]{3}\1[0-9]{3})(?![0-9])'),
    'uuids': re.compile(r'(?<![0-9a-f])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![0-9a-f])'),
    'words': re.compile(r'(?<![a-z-])([a-z]+)-([a-z]+)(?![a-z-])'),
}
_WORDS = (frozenset(ADJECTIVES), frozenset(NOUNS))


def string_match_all(answer: str, values: Sequence[str]) -> float:
    """RULER's string_match_all for one sample: the share of ``values`` that occur in the answer, ignoring case."""
    lowered = answer.lower()
    return sum(value.lower() in lowered for value in values) / len(values)


def _candidates(final: str, kind: str) -> set[str]:
    """Distinct values of ``kind`` the answer states, in the form a value is picked in."""
    found: set[str] = set()
    for match in _PATTERNS[kind].finditer(final):
        text = match.group()
        if kind == 'numbers':
            found.add(re.sub(r'[^0-9]', '', text))
        elif kind == 'words':
            if match.group(1) in _WORDS[0] and match.group(2) in _WORDS[1]:
                found.add(text)
        else:
            found.add(text)
    return found


def ruler_niah_score(
    answer: str,
    *,
    values: Sequence[str],
    value_type: str,
    reference: str,
    keys: Sequence[str] = (),
    needles: Sequence[str] = (),
    question: str = '',
    prompt: PromptText | None = None,
) -> RuleScore:
    """``values``: acc (recall x precision of the values of ``value_type`` stated), rule_recall, precision and
    ruler_match (RULER's string_match_all, unguarded, for comparing with RULER's tables).

    Candidates are the distinct values of the type in the answer other than the asked ``keys`` (case folded,
    full-width folded; a seven-digit number may be grouped '4,821,937'); precision is the share of them that are
    asked values, scaled down by the share of the answer pasted from the prompt; one value asked and others offered
    beside it is a guess list (capped as a list item). Certain, except for a negated value (capped) or numbers
    spelt out.
    """
    final = unicodedata.normalize('NFKC', answer)[:MAX_SCAN_CHARS].lower()
    wanted = tuple(dict.fromkeys(value.lower() for value in values))
    # An asked key restated ('the uuid for <key> is <value>') is not a value given, whatever its type.
    candidates = _candidates(final, value_type) - {key.lower() for key in keys}
    found = tuple(value for value in wanted if value in candidates)
    wrong = tuple(sorted(candidates - set(wanted)))
    paste = paste_evidence(answer, allowed=(*needles, question, reference, *values), prompt=prompt, language='en')
    recall = len(found) / len(wanted)
    precision = len(found) / len(candidates) * paste.factor if candidates else 0.0
    score = recall * precision
    parts = [f'{len(found)} of {len(wanted)} values stated']
    if wrong:
        parts.append(f'{len(wrong)} other {value_type} stated')
    if paste.factor < 1.0:
        parts.append(f'{paste.describe("en")} (precision x {paste.factor:.2f})')
    explanation, certain, flags = '; '.join(parts), True, ('exact',) if score == 1.0 else ()
    negations = negated_values(final, found, needles=needles, question=question, language='en')
    if negations:
        score, certain = min(score, UNCERTAIN_SCORE_CAP), False
        explanation, flags = f'{explanation}; negated ({negations[0]!r})', ('negation',)
    elif not candidates and value_type == 'numbers' and NUMBER_WORDS.search(answer[:MAX_SCAN_CHARS]):
        certain, explanation, flags = False, explanation + '; numbers spelt out: a judge decides', ('number_words',)
    elif found and wrong and len(wanted) == 1:
        # One value asked, several offered: a guess list, scored as the single-needle rule scores a list item.
        score, explanation, flags = min(score, LIST_ITEM_SCORE), explanation + '; a list of guesses', ('list',)
    elif paste.factor < 1.0:
        flags += ('paste',) if prompt is not None else ('long',)
    return RuleScore(
        values={
            'acc': score,
            'rule_recall': recall,
            'precision': precision,
            'ruler_match': string_match_all(answer, values),
        },
        certain=certain,
        explanation=explanation,
        flags=flags,
        evidence={'found': found, 'wrong': wrong, 'length_factor': paste.factor},
    )
