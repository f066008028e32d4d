"""How much of a server's reply is read, and how much of it a run keeps.

A reply is hostile input: a server answering 10**6 choices (188 MB) or one 50 MB answer held a run for minutes at
gigabytes of memory, and every copy EvalScope writes of it (two in the prediction row, three in the review row) went
to disk whole. So a reply is bounded twice:

- **read**: at most ``max_reply_bytes`` bytes of body are read (:mod:`.deadline`'s transport counts them, within the
  same request deadline); a body declared or grown larger, a compressed body (its decoded size is unknown until it is
  decoded), or a JSON reply with more choices than were asked for is refused before anything parses it, as a server
  fault (:class:`ReplyTooLarge`): the client retries it like a dropped connection, and a sample whose every try is
  refused is recorded as an error, never scored. Choices are counted as the client will parse the body, whatever
  its declared content type (:class:`ReplyChoices`): a JSON body whole, a stream of events one event at a time.
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
    'ReplyChoices',
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


def extra_choices(body: bytes, max_choices: int, *, by_index: bool = False) -> int | None:
    """The number of choices in a JSON chat reply when it holds more than ``max_choices``, else None (also for a
    body that is no JSON object: the client's own parsing reports that). ``by_index``: a streamed chunk, whose
    choices the client gathers by their ``index``: a choice numbered ``max_choices`` or above counts as that many."""
    try:
        reply = json.loads(body)
    except (ValueError, RecursionError):
        return None
    choices = reply.get('choices') if isinstance(reply, dict) else None
    if not isinstance(choices, list):
        return None
    count = len(choices)
    if by_index:
        indices = [c['index'] for c in choices if isinstance(c, dict) and type(c.get('index')) is int]
        count = max([count, *(index + 1 for index in indices)])
    return count if count > max_choices else None


class ReplyChoices:
    """The choices of a reply counted as its bytes arrive, the way the client will parse them, whatever its declared
    content type: a body whose first byte (after whitespace) is ``{`` is JSON (the SDK parses a non-streamed reply
    as JSON even when it is labelled ``text/event-stream``): held whole, counted, then passed on; any other body is
    server-sent events (what a streamed request parses): passed on as it comes (time to first token stays
    measurable), each event's choices counted as it completes. Memory is bounded by the byte cap, counted apart."""

    def __init__(self, max_choices: int) -> None:
        self.max_choices = max_choices
        self._kind: str | None = None  # 'json' or 'events', once the first byte that is no whitespace came
        self._held: list[bytes] = []  # a JSON body, or the whitespace before the first byte
        self._line = bytearray()  # the event-stream line not yet ended
        self._carried_cr = False  # a chunk ended in CR: CRLF may be split across two chunks
        self._data: list[bytes] = []  # the data lines of the event not yet dispatched

    def feed(self, chunk: bytes) -> tuple[bytes, int | None]:
        """The bytes to pass on now, and the choice count of an event over the limit (else None)."""
        if self._kind is None:
            self._held.append(chunk)
            start = chunk.lstrip()  # the chunks before were all whitespace
            if not start:
                return b'', None
            self._kind = 'json' if start[:1] == b'{' else 'events'
            if self._kind == 'json':
                return b'', None
            chunk, self._held = b''.join(self._held), []
        if self._kind == 'json':
            self._held.append(chunk)
            return b'', None
        return chunk, self._scan(chunk)

    def finish(self) -> tuple[bytes, int | None]:
        """At the body's end: what was held, and the choice count over the limit (a JSON body, a last event)."""
        body, self._held = b''.join(self._held), []
        if self._kind == 'json':
            return body, extra_choices(body, self.max_choices)
        if self._kind == 'events':
            return body, self._scan(b'\n\n' if self._line or self._data else b'')
        return body, None

    def _scan(self, chunk: bytes) -> int | None:
        if self._carried_cr:
            chunk = b'\r' + chunk
        self._carried_cr = chunk.endswith(b'\r')
        if self._carried_cr:
            chunk = chunk[:-1]
        lines = chunk.replace(b'\r\n', b'\n').replace(b'\r', b'\n').split(b'\n')
        self._line.extend(lines[0])
        if len(lines) == 1:
            return None
        found = None
        for line in [bytes(self._line), *lines[1:-1]]:
            if not line:  # an event ends: its data lines joined, as the client reads them
                data, self._data = b'\n'.join(self._data), []
                if data and data.strip() != b'[DONE]':
                    found = found or extra_choices(data, self.max_choices, by_index=True)
            elif line.startswith(b'data:'):
                self._data.append(line[6:] if line.startswith(b'data: ') else line[5:])
        self._line = bytearray(lines[-1])
        return found


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
