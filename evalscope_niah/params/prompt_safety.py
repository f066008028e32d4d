"""Inputs a request cannot carry, or that would change the prompt's structure, refused before any request.

A lone surrogate (a JSON '\\ud800' escape with no partner, a Python string built by hand) cannot be encoded as
UTF-8: the first request would die in the HTTP client with a UnicodeEncodeError naming no parameter. A needle or
question holding the prompt's own delimiters (the template's ``<text>``, ``</text>``, ``<question>`` ...) or the
judge's answer fence (``<answer>``) would end the document early, ask a second question or open a fake answer:
the model, or the judge, would be shown another prompt than the one the benchmark defines.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import NiahConfigError, quoted
from ..escaping import inert_logger

__all__ = [
    'check_no_delimiters',
    'check_sendable',
    'check_sendable_values',
    'template_tag_names',
    'warn_judge_instructions',
]

logger = inert_logger(__name__)

_SURROGATE = re.compile('[\ud800-\udfff]')
# A tag as a model reads one: case and inner spaces do not matter ('</ TEXT >' closes <text> too).
_TAG = re.compile(r'<\s{0,8}/?\s{0,8}([A-Za-z][\w-]{0,40})\s{0,8}>')
# The fence around the answer in the judge's prompt (judge.py): a needle or question is shown to the judge too.
JUDGE_FENCE_TAG = 'answer'
# Words of the judge's verdict contract: a needle using them may be read by the judge as an instruction.
_JUDGE_WORDS = re.compile(
    r'"rating"|\brat(?:e|ing)\b[^.\n]{0,40}\b(?:10|ten)\b|\bignore\b[^.\n]{0,40}\b(?:rubric|instructions?|above)\b'
    r'|\b(?:to|dear|note to) the (?:grader|judge)\b|评分',
    re.IGNORECASE,
)


def check_sendable(param: str, text: str, *, what: str) -> str:
    """``text`` unchanged, or NiahConfigError naming ``param`` when it holds a lone surrogate."""
    match = _SURROGATE.search(text)
    if match is not None:
        raise NiahConfigError(
            param,
            f'{what} holds a lone surrogate (U+{ord(match.group()):04X} at character {match.start()}: '
            f'{quoted(text[max(0, match.start() - 20) : match.start() + 20])}): it cannot be encoded as UTF-8, so no '
            'request could carry it. Write the character itself (in JSON a surrogate pair such as \\ud83d\\ude00 is '
            'one character; half a pair is none)',
        )
    return text


def check_sendable_values(values: Mapping[str, Any], *, prefix: str = '') -> None:
    """Every string in ``values`` (nested mappings and lists too) checked by ``check_sendable``, the parameter named
    by its path of keys ('subsets.chinese.needles')."""
    for key, value in values.items():
        param = f'{prefix}{key}'
        if isinstance(value, str):
            check_sendable(param, value, what='the value')
        elif isinstance(value, Mapping):
            check_sendable_values(value, prefix=f'{param}.')
        elif isinstance(value, list | tuple):
            for item in value:
                if isinstance(item, Mapping):
                    check_sendable_values(item, prefix=f'{param}.')
                elif isinstance(item, str):
                    check_sendable(param, item, what='a value')


def template_tag_names(template: str) -> set[str]:
    """The tag names in the literal text of a user template ('text', 'question' for the default one), lower-cased."""
    literal = ''.join(text for text, _, _, _ in string.Formatter().parse(template))
    return {match.group(1).casefold() for match in _TAG.finditer(literal)}


def check_no_delimiters(param: str, texts: Iterable[str], *, tag_names: set[str], what: str) -> None:
    """NiahConfigError naming ``param`` when a text holds one of the tags (opening or closing) of ``tag_names``."""
    names = tag_names | {JUDGE_FENCE_TAG}
    for text in texts:
        for match in _TAG.finditer(text):
            if match.group(1).casefold() in names:
                role = (
                    "the judge's answer fence: the judge would read an answer where the benchmark put none"
                    if match.group(1).casefold() == JUDGE_FENCE_TAG
                    else 'a delimiter of the prompt template: the model would be shown another document or question '
                    'than the benchmark defines'
                )
                raise NiahConfigError(
                    param,
                    f'{what} {quoted(text)} holds {match.group()!r}, {role}. Write it without angle brackets '
                    f'(delimiters in use: {", ".join(f"<{name}>" for name in sorted(names))})',
                )


def warn_judge_instructions(param: str, texts: Iterable[str], *, what: str) -> None:
    """Warn once per text that reads like an instruction to the judge (the judge sees needles as the reference)."""
    for text in dict.fromkeys(texts):
        match = _JUDGE_WORDS.search(text)
        if match is not None:
            logger.warning(
                'needle_haystack: %s: %s %s mentions %r: the judge reads it as the reference answer, unfenced; an '
                'instruction there can sway its ratings. Use a plain fact, or score by rule',
                param,
                what,
                quoted(text),
                match.group(),
            )
