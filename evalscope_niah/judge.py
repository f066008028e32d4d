"""LLM-judge prompt, verdict parsing and rubric mapping.

The judge sees only the question, the reference answer (the needle) and the model's answer, never the haystack:
grading is a short-text comparison, and a long context would make the judge itself a long-context model under test.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from evalscope_niah.scoring import strip_reasoning

__all__ = [
    'ALLOWED_RATINGS',
    'JUDGE_SYSTEM_PROMPT',
    'JUDGE_USER_TEMPLATE',
    'RUBRIC',
    'Verdict',
    'build_judge_messages',
    'parse_verdict',
    'rating_to_accuracy',
]

# Kamradt's needle-in-a-haystack rubric.
RUBRIC: Mapping[int, str] = MappingProxyType(
    {
        1: 'The response is completely unrelated to the reference.',
        3: 'The response has minor relevance but does not align with the reference.',
        5: 'The response has moderate relevance but contains inaccuracies.',
        7: 'The response aligns with the reference but has minor omissions.',
        10: 'The response is completely accurate and aligns perfectly with the reference.',
    }
)
ALLOWED_RATINGS: tuple[int, ...] = (1, 3, 5, 7, 10)
_MIN_RATING = 1
_MAX_RATING = 10

# Kamradt's rubric, abridged: the judge is called once per sample and its prompt is most of what judging costs.
_RUBRIC_SHORT = {
    1: 'unrelated',
    3: 'minor relevance, does not align',
    5: 'moderate relevance, inaccurate',
    7: 'aligns, minor omissions',
    10: 'completely accurate',
}
_RUBRIC_LINES = '; '.join(f'{rating} {text}' for rating, text in _RUBRIC_SHORT.items())

JUDGE_SYSTEM_PROMPT = f"""Rate how well the answer states the reference's facts (content only; the reference is \
correct; extra facts earn nothing): {_RUBRIC_LINES}. Reply only with JSON: \
{{"reasoning": "<one sentence>", "rating": <1, 3, 5, 7 or 10>}}"""

# Only the three placeholders: the template is filled with str.format, so it must contain no other braces.
JUDGE_USER_TEMPLATE = """Question: {question}
Reference: {reference}
Answer: {answer}"""


def build_judge_messages(*, question: str, reference: str, answer: str) -> list[dict[str, str]]:
    """OpenAI-style chat messages for one judgement (system rubric + user task)."""
    user = JUDGE_USER_TEMPLATE.format(question=question, reference=reference, answer=answer)
    return [{'role': 'system', 'content': JUDGE_SYSTEM_PROMPT}, {'role': 'user', 'content': user}]


def rating_to_accuracy(rating: float) -> float:
    """Map a 1..10 rating linearly to 0..1 (1 → 0.0, 10 → 1.0), clamped to that range."""
    return min(1.0, max(0.0, (rating - _MIN_RATING) / (_MAX_RATING - _MIN_RATING)))


@dataclass(frozen=True)
class Verdict:
    """A parsed judge reply.

    ``reason`` explains why a reply is unparsable; for an ``ok`` verdict it carries the judge's own reasoning
    when the reply gave one (else '').
    """

    status: Literal['ok', 'unparsable']
    rating: float | None
    accuracy: float | None
    reason: str


# --- parsing -----------------------------------------------------------------------------------------------------

# A number not glued to other digits, dots or slashes ("1/3/5/7/10" lists and dates are not ratings).
_NUM = r'(?<![\d./])(-?\d+(?:\.\d+)?)(?![\d]|\.\d|\s*%)'
_RATING_PATTERNS = (
    # "Rating: 7", "**Rating:** 10", "Final score = 7", "Rating (1-10): 7", "'rating': 7" (non-JSON dicts).
    re.compile(
        r'\b(?:rating|score|grade|verdict)\b\s*(?:\([^)\n]{0,20}\))?\s*(?:\*\*|__)?\s*["\']?\s*[:=]\s*'
        r'(?:\*\*|__)?\s*["\']?\[*\s*' + _NUM,
        re.IGNORECASE,
    ),
    # "[[7]]"
    re.compile(r'\[\[\s*' + _NUM + r'\s*\]\]'),
    # "7/10", "7 out of 10"
    re.compile(_NUM + r'\s*(?:/|out\s+of)\s*10(?![\d/]|\.\d)', re.IGNORECASE),
    # Prose: "I would rate it a 7", "give this response a 10", "rated the answer 3".
    re.compile(
        r'\b(?:rate|rated|rating|give|giving|gave|assign|assigning|award|awarding)\s+'
        r'(?:it|this|that|the\s+\w+|this\s+\w+)\s+(?:(?:a|an)\s+)?(?:(?:rating|score|grade)\s+of\s+)?' + _NUM,
        re.IGNORECASE,
    ),
    # Prose: "the rating is 7", "a rating of 7", "my score would be 10", "deserves a 7".
    re.compile(
        r'\b(?:(?:rating|score|grade)\s+(?:is|of|would\s+be|should\s+be)|deserves?)\s+(?:(?:a|an)\s+)?' + _NUM,
        re.IGNORECASE,
    ),
)
# The whole reply is a rating: "7", "**7**", "Rating 7", "10.".
_BARE = re.compile(r'^[\s*_"\'`\[(]*(?:(?:final\s+)?(?:rating|score)\s*:?\s*)?' + _NUM + r'[\s*_"\'`\]).]*$', re.I)
_REFUSAL = re.compile(
    r"\b(?:cannot|can't|can\s*not|unable\s+to|won't|will\s+not|not\s+able\s+to)\s+"
    r'(?:evaluate|assess|rate|grade|judge|determine|provide)',
    re.IGNORECASE,
)
_RATING_KEYS = ('rating', 'score', 'grade')
_REASON_KEYS = ('reasoning', 'reason', 'explanation', 'rationale')


def _number(value: Any) -> float | None:
    """A JSON rating value as a float: numbers, or the first number in a string ("7", "7/10")."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        match = re.search(_NUM, value)
        return float(match.group(1)) if match else None
    return None


def _json_objects(text: str) -> list[tuple[int, int, dict[str, Any]]]:
    """Every top-level JSON object in the text (in code fences or prose) as (start, end, object)."""
    decoder = json.JSONDecoder()
    found: list[tuple[int, int, dict[str, Any]]] = []
    pos = text.find('{')
    while pos != -1:
        try:
            obj, end = decoder.raw_decode(text, pos)
        except RecursionError:
            # Absurdly deep nesting: no sane verdict; stop rather than re-decode it from every later brace.
            break
        except ValueError:
            pos = text.find('{', pos + 1)
            continue
        if isinstance(obj, dict):
            found.append((pos, end, obj))
        pos = text.find('{', end)
    return found


_MISSING = object()


def _key(obj: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    """The value of the first key in ``names`` (case-insensitive), or ``_MISSING``; ``null`` stays ``None``."""
    lowered = {str(k).strip().casefold(): v for k, v in obj.items()}
    return next((lowered[n] for n in names if n in lowered), _MISSING)


def _fmt(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)


def _unparsable(reason: str) -> Verdict:
    return Verdict(status='unparsable', rating=None, accuracy=None, reason=reason)


def parse_verdict(text: str) -> Verdict:
    """Parse a judge reply into a rating; never raises.

    Reads JSON objects with a ``rating`` (also ``score``/``grade``) key anywhere in the reply, then labelled or
    conventional forms outside those objects ("Rating: 7", "[[7]]", "7/10", "I would rate it a 7"), and finally a
    reply that is just a number. Reasoning blocks are ignored. The verdict is unparsable when there is no rating,
    when the reply holds different ratings, or when the rating lies outside 1..10. Ratings inside 1..10 that are
    not in the rubric (8, 7.5) are accepted and mapped linearly like the rubric values.
    """
    if not text or not text.strip():
        return _unparsable('empty reply')
    body = strip_reasoning(text)
    if not body:
        return _unparsable('no final answer after the reasoning block')

    found: list[tuple[int, float]] = []  # (position, rating) in order of appearance
    reasoning = ''
    rest = body
    for start, end, obj in _json_objects(body):
        value = _key(obj, _RATING_KEYS)
        if value is _MISSING:
            continue
        rating = _number(value)
        if rating is None:
            return _unparsable(f'JSON rating is not a number: {value!r}')
        found.append((start, rating))
        if not reasoning and isinstance(why := _key(obj, _REASON_KEYS), str):
            reasoning = why.strip()
        # Blank the object out (same length keeps positions) so numbers in its reasoning are not read as ratings.
        rest = rest[:start] + ' ' * (end - start) + rest[end:]

    for pattern in _RATING_PATTERNS:
        found.extend((m.start(), float(m.group(1))) for m in pattern.finditer(rest))
    if not found and (bare := _BARE.match(rest.strip())):
        found.append((0, float(bare.group(1))))

    if not found:
        if _REFUSAL.search(body):
            return _unparsable('judge declined to rate')
        return _unparsable('no rating found')

    distinct: list[float] = []
    for _, rating in sorted(found):
        if rating not in distinct:
            distinct.append(rating)
    if len(distinct) > 1:
        names = [_fmt(r) for r in distinct]
        count = 'two' if len(names) == 2 else str(len(names))
        return _unparsable(f'{count} different ratings: {", ".join(names[:-1])} and {names[-1]}')

    rating = distinct[0]
    if not _MIN_RATING <= rating <= _MAX_RATING:
        return _unparsable(f'rating {_fmt(rating)} is outside {_MIN_RATING}..{_MAX_RATING}')
    return Verdict(status='ok', rating=rating, accuracy=rating_to_accuracy(rating), reason=reasoning)
