"""How much of a server's reply is read, and how much of it a run keeps.

A reply is hostile input: a server answering 10**6 choices (188 MB) or one 50 MB answer held a run for minutes at
gigabytes of memory, and every copy EvalScope writes of it (two in the prediction row, three in the review row) went
to disk whole. So a reply is bounded twice:

- **read**: at most ``max_reply_bytes`` bytes of body are read (:mod:`.deadline`'s transport counts them, within the
  same request deadline); a body declared or grown larger, a compressed body (its decoded size is unknown until it is
  decoded), or a JSON reply with more choices than were asked for is refused before anything parses it, as a server
  fault (:class:`ReplyTooLarge`): the client retries it like a dropped connection, and a sample whose every try is
  refused is recorded as an error, never scored.
- **kept**: the text of a reply that was read is cut to :data:`MAX_KEPT_REPLY_CHARS` where it enters the run's
  records (:func:`kept_text`), head and tail kept (a reasoning model's answer comes last) with a marker saying what
  was cut.

A reply's text is also made writable where it enters (:func:`whole_text`): JSON may carry a lone surrogate (half of a
``\\ud83d\\ude00`` pair) that Python decodes into a ``str`` no UTF-8 file can hold; EvalScope's writer then failed
after the reply was in, and the sample was lost without a row. Each is replaced by U+FFFD and counted.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = [
    'DEFAULT_MAX_REPLY_BYTES',
    'MAX_KEPT_REPLY_CHARS',
    'MIN_MAX_REPLY_BYTES',
    'ReplyTooLarge',
    'check_max_reply_bytes',
    'extra_choices',
    'kept_text',
    'whole_text',
]

# An honest non-streamed reply of 128k tokens is under 1 MB of JSON; streamed (stream: true), each token comes in an
# SSE event of about 250 bytes, so 16 MiB still holds about 64k streamed tokens. Logprobs cost more: raise it then.
DEFAULT_MAX_REPLY_BYTES = 16 * 1024 * 1024
# Below this an honest short reply (or a server's error page) could be refused.
MIN_MAX_REPLY_BYTES = 64 * 1024
# Characters of one reply's text (answer, reasoning) kept in predictions, reviews and results: half from its start,
# half from its end. Far above a needle answer, or a reasoning model's answer after 30k tokens of thought.
MAX_KEPT_REPLY_CHARS = 131_072
# A str code point that is a surrogate is always a lone one: JSON's escaped pairs decode to one character.
_SURROGATE = re.compile('[\ud800-\udfff]')
_CUT_MARKER = '\n…[cut: {total:,} chars, kept {kept:,}]…\n'


class ReplyTooLarge(Exception):
    """A reply refused before it was parsed: larger than the byte cap, compressed, or with more choices than asked
    for. A server fault. Raised as a subclass of the transport library's RemoteProtocolError too, so the client
    retries it as it does a broken connection."""


def check_max_reply_bytes(value: Any) -> int:
    """``max_reply_bytes`` as given, or ValueError saying what is allowed."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f'must be a whole number of bytes (at least {MIN_MAX_REPLY_BYTES:,}), got {value!r}')
    if value < MIN_MAX_REPLY_BYTES:
        raise ValueError(
            f'must be at least {MIN_MAX_REPLY_BYTES:,} bytes (an honest short reply could be refused below it), '
            f'got {value:,}; the default is {DEFAULT_MAX_REPLY_BYTES:,}'
        )
    return value


def extra_choices(body: bytes, max_choices: int) -> int | None:
    """The number of choices in a JSON chat reply when it holds more than ``max_choices``, else None (also for a
    body that is no JSON object: the client's own parsing reports that)."""
    try:
        reply = json.loads(body)
    except (ValueError, RecursionError):
        return None
    choices = reply.get('choices') if isinstance(reply, dict) else None
    return len(choices) if isinstance(choices, list) and len(choices) > max_choices else None


def kept_text(text: str, *, limit: int = MAX_KEPT_REPLY_CHARS) -> str:
    """``text`` when it is at most ``limit`` characters; else its first and last ``limit // 2`` characters around a
    marker naming the length cut and kept. Cutting a cut text again leaves it as it is."""
    if len(text) <= limit + len(_CUT_MARKER) + 40:  # a marker's worth of slack: a cut text stays as it is
        return text
    half = limit // 2
    return text[:half] + _CUT_MARKER.format(total=len(text), kept=2 * half) + text[-half:]


def whole_text(text: str) -> tuple[str, int]:
    """``text`` with each lone surrogate replaced by U+FFFD (REPLACEMENT CHARACTER), and how many were replaced: the
    text any UTF-8 file can hold. Text without one is returned as it is."""
    if text.isascii():  # the common case, checked at C speed
        return text, 0
    return _SURROGATE.subn('\ufffd', text)
