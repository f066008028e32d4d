"""The judge's reply read as a :class:`Verdict`: ``parse_verdict`` reads the rating in time linear in the reply's
length and refuses what it cannot read for certain (two different ratings, another scale) instead of guessing. It
reads exactly the reply the prompt (``judge``) asks for."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..scoring.reasoning_tags import strip_reasoning
from .rubric import MAX_RATING, MIN_RATING, RUBRIC_SHORT, rating_to_accuracy

__all__ = ['MAX_REPLY_CHARS', 'MAX_VERDICT_CHARS', 'Verdict', 'parse_verdict']


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


# --- reasoning blocks --------------------------------------------------------------------------------------------

# Case-insensitive for ASCII only: the tags and labels are ASCII, and full case-insensitivity makes every regex
# step lower-case the character under it, a cost per character on non-Latin text (~10x slower on random Unicode).
_ASCII_CI = re.IGNORECASE | re.ASCII

# Blocks are stripped by scoring.reasoning_tags.strip_reasoning, the one stripper for model and judge replies.
# The closing tag spelt backwards: the last closing tag is the first match in the reversed text, found in one
# forward pass. Only used to tell whether the part of a very long reply that is read may still be reasoning.
_CLOSE_REVERSED = re.compile(r'>\s{0,3}(?:gni)?kniht\s{0,3}/\s{0,3}<', _ASCII_CI)


def _last_close_end(text: str) -> int | None:
    match = _CLOSE_REVERSED.search(text[::-1])
    return None if match is None else len(text) - match.start()


# --- parsing -----------------------------------------------------------------------------------------------------

# Only the end of a reply is read: its last MAX_REPLY_CHARS characters for reasoning blocks (a judge's reply is
# a verdict, at most after some pages of reasoning: 100,000 characters is ~25k tokens), then the last
# MAX_VERDICT_CHARS of what follows the reasoning for the verdict. Both bounds keep every step cheap however long
# the reply is.
MAX_REPLY_CHARS = 100_000
# A reply longer than MAX_REPLY_CHARS whose reasoning may run into the part that is read: the usual spellings of
# the tag word, searched for in what is cut off (plain substring searches, fast on any text).
_THINK_WORDS = ('think', 'THINK', 'Think')
# The verdict sits at the end of a reply; a judge that writes more than this after its reasoning block is rambling.
MAX_VERDICT_CHARS = 8_000

# The text is normalised first (full-width colons, digits and brackets become ASCII; every whitespace run becomes
# one space or one newline), so every pattern below allows at most one whitespace character per gap and
# uses no nested or adjacent unbounded repeats: each match attempt does bounded work.
#
# A rating value: a number, optionally "out of N" or a percentage (both kept to refuse other scales), or a
# letter grade (kept to refuse it).
_VALUE = (
    r'(?P<value>-?\d+(?:\.\d+)?(?:\s?(?:/|out of)\s?\d+(?:\.\d+)?)?(?:\s?%)?(?![\d.]\d|[eE][+-]?\d)'
    r'|(?-i:[A-F])[+-]?(?![\w+-]))'
)
_MARK = r'(?:\s?(?:\*\*|__|[*_"\'`]))'
_EN_LABEL = r'\b(?:rating|score|grade|verdict)\b'
_ZH_LABEL = r'(?:评分|分数|得分|打分|评级)'
_PAREN = r'(?:\s?\([^()\n]{0,24}\))?'
_STRONG_PATTERNS = (
    # "Rating: 7", "**Rating:** 10", "Final score = 7", "Rating (1-10): 3", "'rating': 7" (non-JSON dicts).
    re.compile(_EN_LABEL + _PAREN + _MARK + '{0,3}' + r'\s?[:=]' + _MARK + r'{0,3}\s?\[?\s?' + _VALUE, _ASCII_CI),
    # "评分：7", "评分为7分", "得分: 10", "**评分**：7".
    re.compile(_ZH_LABEL + _PAREN + _MARK + r'{0,3}\s?(?:为|是)?\s?[:=]?' + _MARK + r'{0,3}\s?\[?\s?' + _VALUE),
    # "[[7]]"
    re.compile(r'\[\[\s?' + _VALUE + r'\s?\]\]'),
    # "<rating>7</rating>", "<score> 10 </score>", "<评分>7</评分>".
    re.compile(
        r'<\s?(?:rating|score|grade|评分)\s?>\s?' + _VALUE + r'\s?<\s?/\s?(?:rating|score|grade|评分)\s?>',
        _ASCII_CI,
    ),
    # "7/10", "7 out of 10"; not one of "1/3/5/7/10" (a list of the rubric's ratings).
    re.compile(
        r'(?<![\w./-])(?P<value>-?\d+(?:\.\d+)?\s?(?:/|out of)\s?10)(?![\d/]|\.\d|\s?%)',
        _ASCII_CI,
    ),
    # Prose: "I would rate it a 7", "give this response a 10", "rated the answer 3".
    re.compile(
        r'\b(?:rate|rated|rating|give|giving|gave|assign|assigning|assigned|award|awarding|awarded)\s'
        r'(?:it|this|that|the\s\w+|this\s\w+)\s(?:(?:a|an)\s)?(?:(?:rating|score|grade)\s(?:of\s)?)?' + _VALUE,
        _ASCII_CI,
    ),
    # Prose: "the rating is 7", "a rating of 7", "my score would be 10", "deserves a 7".
    re.compile(
        r'\b(?:(?:rating|score|grade)\s(?:is|of|would\sbe|should\sbe|will\sbe)|deserves?)\s(?:(?:a|an)\s)?' + _VALUE,
        _ASCII_CI,
    ),
    # Chinese prose: "我给7分", "打10分", "评为3分".
    re.compile(r'(?:给出|给|打|评为|应得|获得)了?\s?' + _VALUE + r'\s?分'),
)
# Weak forms count only when no strong form is present: a judge that echoes the rubric ("1 unrelated; 3 minor
# relevance; ...") before its "Rating: 7" has stated one rating, not six.
# "10 completely accurate" (the rubric's own wording, number and words agreeing).
_RUBRIC_PHRASE = re.compile(
    r'(?<![\w./-])(10|7|5|3|1)\s?(?:[-:=.)(–—]\s?)?(?:\*\*\s?)?'
    r'(completely accurate|aligns|moderate relevance|minor relevance|unrelated)',
    _ASCII_CI,
)
_RUBRIC_WORDS = {words.split(',')[0]: rating for rating, words in RUBRIC_SHORT.items()}
# A line that is only a rating: "7", "**10**", "Rating 7", "评分 7分", "3.". Applied to one line at a time.
_BARE_LINE = re.compile(
    r'[*_"\'`\[(#]{0,6}\s?(?:(?:final\s)?(?:rating|score)\s?:?\s?|(?:评分|分数|得分)\s?:?\s?)?[*_"\'`\[(]{0,4}\s?'
    + _VALUE
    + r'\s?分?[*_"\'`\]).。]{0,6}',
    _ASCII_CI,
)
_VALUE_ONLY = re.compile(r'\s?' + _VALUE)
_REFUSAL = re.compile(
    r"\b(?:cannot|can't|can\snot|unable\sto|won't|will\snot|not\sable\sto)\s"
    r'(?:evaluate|assess|rate|grade|judge|determine|provide)',
    _ASCII_CI,
)
# Full-width ASCII (U+FF01..U+FF5E) to ASCII, and the ideographic space to a space.
_FULL_WIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)} | {0x3000: ord(' ')}
_SPACES = re.compile(r'[^\S\n]+')
_NEWLINES = re.compile(r' ?\n\s*')

# What may follow a final JSON verdict: whitespace and the end of a code fence.
_AFTER_FINAL_JSON = ' \n`'
_RATING_KEYS = ('rating', 'score', 'grade', '评分', '分数', '得分')
_REASON_KEYS = ('reasoning', 'reason', 'explanation', 'rationale', '理由')


@dataclass(frozen=True)
class _Reading:
    """One stated rating: a number on the 1..10 scale, or ``other_scale`` naming why it is not one."""

    position: int
    rating: float | None
    other_scale: str = ''


def _number_reading(position: int, number: str, denominator: str) -> _Reading:
    if denominator and float(denominator) != MAX_RATING:
        return _Reading(position, None, f'{number}/{denominator} is out of {denominator}, not 10')
    rating = float(number)
    if '.' in number and abs(rating) <= 1 and not denominator:
        # "0.7" or "1.0": a 0..1 score, where 1.0 is the best answer and on our scale the worst.
        return _Reading(position, None, f'{number} looks like a 0..1 score')
    return _Reading(position, rating)


def _split_value(value: str) -> tuple[str, str]:
    """A numeric value as (number, denominator or '')."""
    for separator in ('/', 'out of'):
        head, found, tail = value.partition(separator)
        if found:
            return head.strip(), tail.strip()
    return value.strip(), ''


def _classify(position: int, value: str) -> _Reading:
    """Classify a matched value ("7", "7/10", "4/5", "80%", "0.7", "B+")."""
    value = value.strip()
    if value[:1].isalpha():
        return _Reading(position, None, f'letter grade {value}')
    if value.endswith('%'):
        return _Reading(position, None, f'percentage {value.replace(" ", "")}')
    number, denominator = _split_value(value.casefold())
    return _number_reading(position, number, denominator)


def _json_reading(position: int, value: Any) -> _Reading | str:
    """A JSON rating value as a reading, or why it is not a number."""
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        return f'JSON rating is not a number: {json.dumps(value)[:40]}'
    if isinstance(value, int):
        # A huge JSON integer would overflow float(); anything past the scale is just out of range.
        return _Reading(position, float(max(-1_000_000, min(1_000_000, value))))
    if isinstance(value, float):
        if not math.isfinite(value):
            return f'JSON rating is not a number: {value!r}'
        if abs(value) <= 1:
            return _Reading(position, None, f'{value} looks like a 0..1 score')
        return _Reading(position, value)
    text = _normalise(str(value)[:100])
    match = _VALUE_ONLY.match(text)
    if match is None:
        return f'JSON rating is not a number: {text[:40]!r}'
    return _classify(position, match.group('value'))


# --- JSON objects, found in one pass -----------------------------------------------------------------------------

_JSON_SYNTAX = re.compile(r'[{}"\\\n]')


def _brace_spans(text: str) -> list[tuple[int, int]]:
    """Candidate JSON objects: balanced ``{...}`` spans, outermost first, in one pass.

    Returns the outermost closed spans, and for each the closed spans directly inside it (tried when the outer
    one is not JSON, e.g. prose braces around a verdict). Every character lies in at most two candidates, so
    decoding them all stays linear. Braces inside JSON strings do not count; a string ends at a newline too,
    so one stray quote cannot hide the rest of the reply.
    """
    stack: list[tuple[int, list[tuple[int, int]]]] = []
    outermost: list[tuple[int, int, list[tuple[int, int]]]] = []
    in_string = False
    escaped_at = -1
    # Positions first, then one tight loop: this runs once per brace or quote of the verdict text.
    for at in [match.start() for match in _JSON_SYNTAX.finditer(text)]:
        char = text[at]
        if in_string:
            if at == escaped_at:
                continue
            if char == '\\':
                escaped_at = at + 1
            elif char == '"' or char == '\n':
                in_string = False
        elif char == '{':
            stack.append((at, []))
        elif char == '}':
            if stack:
                start, children = stack.pop()
                if stack:
                    stack[-1][1].append((start, at + 1))
                else:
                    outermost.append((start, at + 1, children))
        elif char == '"' and stack:
            in_string = True
    # Spans inside a brace that never closed have no closed parent: they are outermost.
    for _start, children in stack:
        outermost.extend((child_start, child_end, []) for child_start, child_end in children)
    spans: list[tuple[int, int]] = []
    for start, end, children in sorted(outermost):
        spans.append((start, end))
        spans.extend(children)
    return spans


def _json_objects(text: str) -> list[tuple[int, int, dict[str, Any]]]:
    """Every JSON object in the text (in code fences or prose) as (start, end, object), outermost wins."""
    found: list[tuple[int, int, dict[str, Any]]] = []
    covered_until = -1
    for start, end in _brace_spans(text):
        if start < covered_until:
            continue  # inside an object already decoded
        try:
            obj = json.loads(text[start:end])
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            found.append((start, end, obj))
            covered_until = end
    return found


_MISSING = object()


def _key(obj: Mapping[str, Any], names: tuple[str, ...], *, depth: int = 1) -> Any:
    """The value of the first key in ``names`` (case-insensitive), also one object deep; else ``_MISSING``."""
    lowered = {_key_name(k): v for k, v in obj.items()}
    value = next((lowered[n] for n in names if n in lowered), _MISSING)
    if value is _MISSING and depth > 0:
        # {"evaluation": {"rating": 7}}
        for nested in obj.values():
            if isinstance(nested, dict) and (value := _key(nested, names, depth=depth - 1)) is not _MISSING:
                break
    return value


def _key_name(key: str) -> str:
    return (key if key.isascii() else unicodedata.normalize('NFKC', key)).strip().casefold()


def _normalise(text: str) -> str:
    # Full-width forms only (what Chinese replies use: "评分：７"), not full NFKC, which costs ~10x more per
    # character on arbitrary text and folds nothing else a rating is written with.
    text = text.translate(_FULL_WIDTH)
    return _NEWLINES.sub('\n', _SPACES.sub(' ', text))


def _fmt(value: float) -> str:
    if not math.isfinite(value) or abs(value) >= 1_000_000:
        return f'{value:.3g}'
    return str(int(value)) if value.is_integer() else str(value)


def _unparsable(reason: str) -> Verdict:
    return Verdict(status='unparsable', rating=None, accuracy=None, reason=reason)


def _decide(readings: list[_Reading]) -> Verdict | float:
    """The one rating the readings agree on, or why they do not."""
    others = [r.other_scale for r in readings if r.rating is None]
    if others:
        return _unparsable(f'rating on another scale: {others[0]}')
    distinct: list[float] = []
    for reading in sorted(readings, key=lambda r: r.position):
        if reading.rating not in distinct:
            distinct.append(reading.rating)  # type: ignore[arg-type]
    if len(distinct) > 1:
        names = [_fmt(r) for r in distinct]
        count = 'two' if len(names) == 2 else str(len(names))
        return _unparsable(f'{count} different ratings: {", ".join(names[:-1])} and {names[-1]}')
    return distinct[0]


def parse_verdict(text: str) -> Verdict:
    """Parse a judge reply into a rating; never raises, and takes time linear in the reply's length.

    Only the last ``MAX_REPLY_CHARS`` characters are read; reasoning blocks (``<think>...</think>``) are removed
    from them, then only the last ``MAX_VERDICT_CHARS`` characters of the rest are read. Accepted, in English and
    Chinese: JSON objects with a ``rating``/``score``/``grade`` (评分/分数/得分) key, also one object deep;
    labelled forms ("Rating: 7", "rating = 7", "评分：7", "评分为7分"); "[[7]]"; "<rating>7</rating>"; "7/10" and
    "7 out of 10"; prose ("I would rate it a 7", "我给7分"); and, only when none of those is present, the rubric's
    own wording ("10 completely accurate") or a first or last line that is just a rating ("7", "**10**"). Ratings
    inside 1..10 that are not rubric values (8, 7.5) are mapped linearly.

    A reply that ends with a JSON verdict (the format the prompt asks for) is read from that object alone: the
    text before it is the judge's reasoning, which may quote other ratings.

    Unparsable, with the reason: no rating, different ratings, a rating outside 1..10, or one on another scale
    ("4/5", "80%", "0.7", "B+"), which would otherwise be misread as a rating out of 10.
    """
    body = _verdict_text(text)
    if isinstance(body, Verdict):
        return body
    found = _json_verdicts(body)
    if isinstance(found, Verdict):
        return found
    verdicts, rest = found
    readings, reasoning = _readings(body, verdicts, rest)
    if not readings:
        if _REFUSAL.search(body):
            return _unparsable('judge declined to rate')
        return _unparsable('no rating found')
    decided = _decide(readings)
    if isinstance(decided, Verdict):
        return decided
    if not MIN_RATING <= decided <= MAX_RATING:
        return _unparsable(f'rating {_fmt(decided)} is outside {MIN_RATING}..{MAX_RATING}')
    return Verdict(status='ok', rating=decided, accuracy=rating_to_accuracy(decided), reason=reasoning)


def _verdict_text(text: str) -> str | Verdict:
    """The part of the reply that holds the verdict, normalised: the reply's end with its reasoning blocks removed,
    cut to its end again; or why there is none (an empty reply, nothing after the reasoning, or a reply so long
    that what is read may still be reasoning)."""
    if not text or not text.strip():
        return _unparsable('empty reply')
    read = text[-MAX_REPLY_CHARS:]
    if (
        len(text) > MAX_REPLY_CHARS
        and _last_close_end(read) is None
        and any(text.find(word, 0, len(text) - len(read)) != -1 for word in _THINK_WORDS)
    ):
        # Whether the part read lies inside a reasoning block depends on what was cut off: do not guess.
        return _unparsable(
            f'reply of {len(text):,} characters: its last {MAX_REPLY_CHARS:,} may still be reasoning (no closing '
            'tag among them)'
        )
    body = strip_reasoning(read)
    if not body:
        return _unparsable('no final answer after the reasoning block')
    return _normalise(body[-MAX_VERDICT_CHARS:]).strip()


# A JSON object that states a rating: where it ends, its reading, and the judge's reasoning it holds ('' if none).
_JsonVerdict = tuple[int, _Reading, str]


def _json_verdicts(body: str) -> tuple[list[_JsonVerdict], str] | Verdict:
    """The JSON objects that state a rating, and the body with each of them blanked out (same length, so positions
    hold) so numbers in their reasoning are not read as ratings; or why a JSON rating is not a number."""
    verdicts: list[_JsonVerdict] = []
    pieces: list[str] = []
    pos = 0
    for start, end, obj in _json_objects(body):
        value = _key(obj, _RATING_KEYS)
        if value is _MISSING:
            continue
        reading = _json_reading(start, value)
        if isinstance(reading, str):
            return _unparsable(reading)
        why = _key(obj, _REASON_KEYS)
        verdicts.append((end, reading, why.strip() if isinstance(why, str) else ''))
        pieces += [body[pos:start], ' ' * (end - start)]
        pos = end
    return verdicts, ''.join(pieces) + body[pos:]


def _readings(body: str, verdicts: list[_JsonVerdict], rest: str) -> tuple[list[_Reading], str]:
    """Every rating the reply states, in the documented order of precedence, and the judge's reasoning."""
    if verdicts and not body[verdicts[-1][0] :].strip(_AFTER_FINAL_JSON):
        # The reply ends with the JSON verdict the prompt asks for: that is the verdict, and what precedes it is
        # the judge's reasoning, which may quote other ratings (an answer's injected '"rating": 10' among them).
        return [verdicts[-1][1]], verdicts[-1][2]
    strong = [reading for _, reading, _ in verdicts]
    for pattern in _STRONG_PATTERNS:
        strong.extend(_classify(m.start(), m.group('value')) for m in pattern.finditer(rest))
    return strong or _weak_readings(rest), next((why for _, _, why in verdicts if why), '')


def _weak_readings(rest: str) -> list[_Reading]:
    readings = [
        _Reading(m.start(), float(m.group(1)))
        for m in _RUBRIC_PHRASE.finditer(rest)
        if _RUBRIC_WORDS.get(m.group(2).casefold()) == int(m.group(1))
    ]
    # The first and the last line only: a rating stated alone on a line opens or closes the reply. Whitespace
    # runs are single characters by now, so after stripping neither line is blank.
    text = rest.strip()
    first_end, last_start = text.find('\n'), text.rfind('\n') + 1
    lines = {0: text if first_end == -1 else text[:first_end], last_start: text[last_start:]}
    for position, line in lines.items():
        if bare := _BARE_LINE.fullmatch(line.strip()):
            readings.append(_classify(position, bare.group('value')))
    return readings
