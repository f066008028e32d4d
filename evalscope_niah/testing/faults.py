"""The faults and lies the test server can be told to tell: what goes wrong (a 500, a hang, a reply dripped byte by
byte, an echoed key) and what is false (usage, finish_reason, a context window, tokenize counts).

Plain data checked on construction; the server (:mod:`.handler`) reads them per request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ['FAULT_KINDS', 'HUGE_SHAPES', 'TOKENIZE_LIES', 'FaultPlan', 'Lies']

#: Fault names, in the order their rates are stacked when one is picked.
FAULT_KINDS: tuple[str, ...] = (
    'http_500',
    'http_429',
    'hang',
    'drop',
    'malformed_json',
    'empty_content',
    'length',
    'drip',
    'long_body',
    'huge_reply',
)

#: What a 'huge_reply' fills its bytes with: one answer that long, or copies of the right choice.
HUGE_SHAPES: tuple[str, ...] = ('content', 'choices')


@dataclass(frozen=True)
class FaultPlan:
    """Faults to inject into one model's chat requests.

    Each rate is a probability in [0, 1]; the rates must sum to at most 1. For every request
    to the model one number is rolled from the model's ``random.Random`` (seeded from the
    server's ``seed`` and the model name), and the rates are stacked in :data:`FAULT_KINDS`
    order to pick at most one fault. The k-th request to a model therefore always gets the
    same fault for the same seed, whatever other models receive.

    ``fail_first_n`` makes the first N requests to the model fail with HTTP 500 whatever the
    roll (the roll is still made, so later requests are unaffected).

    ``drip`` sends the headers, then the (non-streamed) reply one byte every ``drip_interval_s``; it stops after
    ``drip_seconds`` by closing the connection (a reply finished late, or never). ``long_body`` declares a
    Content-Length larger than the reply it sends, then holds the connection for ``hang_seconds``. Both keep every
    read of the client short: only a deadline for the whole request gives up on them.

    ``huge_reply`` answers a 200 of ``huge_bytes`` bytes sent in 1 MiB chunks (chunked transfer, no Content-Length,
    so only counting what arrives bounds it; ``huge_declared`` also declares its length): ``huge_shape`` 'content' is
    the right answer followed by that many bytes of text in one choice, 'choices' that many bytes of copies of the
    right choice (10**6 choices are 188 MB); ``huge_content_type`` is the type it is labelled with (a JSON body
    labelled ``text/event-stream`` is still parsed as JSON by the SDK). The server never holds the body whole.

    ``outage_prompt_tokens`` ``(low, high)`` answers HTTP 500 to every request whose prompt has ``low <= tokens <
    high`` (as the server counts ``usage.prompt_tokens``), whatever the roll: an outage that hits one length of a
    grid (a replica that cannot hold it), every time, however often the client retries.

    ``echo_key_status`` (401, 500, ...) answers every request to the model with that HTTP status and an error
    message quoting the request's ``Authorization`` header and its bearer key verbatim (servers that echo a rejected
    key exist; a 5xx is retried by the client, a 401 is not): what the client stores or prints of that error must
    not hold the key.
    """

    http_500: float = 0.0
    http_429: float = 0.0
    hang: float = 0.0
    drop: float = 0.0
    malformed_json: float = 0.0
    empty_content: float = 0.0
    length: float = 0.0
    fail_first_n: int = 0
    retry_after_seconds: float = 1
    hang_seconds: float = 30.0
    drip: float = 0.0
    long_body: float = 0.0
    drip_interval_s: float = 0.2
    drip_seconds: float = 60.0
    echo_key_status: int | None = None
    huge_reply: float = 0.0
    huge_bytes: int = 200_000_000
    huge_shape: str = 'content'
    huge_declared: bool = False
    huge_content_type: str = 'application/json'
    outage_prompt_tokens: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        for name in FAULT_KINDS:
            rate = getattr(self, name)
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f'FaultPlan.{name} must be in [0, 1], got {rate!r}')
        total = sum(getattr(self, name) for name in FAULT_KINDS)
        if total > 1.0 + 1e-9:
            raise ValueError(f'FaultPlan rates must sum to at most 1, got {total!r}')
        if self.fail_first_n < 0:
            raise ValueError('FaultPlan.fail_first_n must be >= 0')
        if self.retry_after_seconds < 0:
            raise ValueError('FaultPlan.retry_after_seconds must be >= 0')
        if self.hang_seconds < 0:
            raise ValueError('FaultPlan.hang_seconds must be >= 0')
        if self.huge_bytes < 0 or self.huge_shape not in HUGE_SHAPES:
            raise ValueError(f'FaultPlan.huge_bytes must be >= 0 and huge_shape one of {HUGE_SHAPES}')
        if self.drip_interval_s <= 0 or self.drip_seconds < 0:
            raise ValueError('FaultPlan.drip_interval_s must be > 0 and drip_seconds >= 0')
        outage = self.outage_prompt_tokens
        if outage is not None and not 0 <= outage[0] < outage[1]:
            raise ValueError(f'FaultPlan.outage_prompt_tokens must be (low, high), 0 <= low < high, got {outage!r}')

    def pick(self, roll: float) -> str | None:
        """The fault for a uniform roll in [0, 1), or None."""
        edge = 0.0
        for name in FAULT_KINDS:
            edge += getattr(self, name)
            if roll < edge:
                return name
        return None


#: What ``Lies.tokenize`` can make the tokenize routes do.
TOKENIZE_LIES: tuple[str, ...] = ('wrong_count', 'garbage', 'silent')


@dataclass(frozen=True)
class Lies:
    """What a lying server says instead of the truth; the defaults tell the truth.

    Chat replies (non-streamed) to the models in ``liars`` (empty: every model): ``usage`` entries replace the true
    ones (any JSON value: ``{'prompt_tokens': -7}``; a ``usage`` that is no mapping replaces the whole object),
    ``finish_reason`` and ``model_name`` replace the true ones when not None, and ``reply_tail`` is appended to the
    reply as raw bytes inside the JSON string (10 MB of text, or bytes that are not UTF-8; it must hold no ``"`` or
    ``\\``). ``message_json`` maps fields of the reply's message (``content``,
    ``reasoning_content``, ...) to raw JSON text sent as their value, the answer replaced: a lone surrogate
    (``'"\\ud83d"'``), a number, ``null``, a list, an object, thousands of brackets deep. ``every`` tells the lies in
    one chat reply of that many per model (the others are true).

    ``window`` (when not None) is the context window /v1/models and /props give, any JSON value. ``tokenize``
    (one of :data:`TOKENIZE_LIES`): 'wrong_count' answers vLLM's ``count`` off by 7 and llama.cpp's plain id list
    one token short; 'garbage' answers tokens that are no token ids; 'silent' never answers (until the server
    closes).
    """

    liars: tuple[str, ...] = ()
    usage: Any = None
    finish_reason: Any = None
    model_name: Any = None
    reply_tail: bytes = b''
    message_json: Mapping[str, str] = field(default_factory=dict)
    every: int = 1
    window: Any = None
    tokenize: str | None = None

    def __post_init__(self) -> None:
        if self.tokenize is not None and self.tokenize not in TOKENIZE_LIES:
            raise ValueError(f'Lies.tokenize must be one of {TOKENIZE_LIES} or None, got {self.tokenize!r}')
        if b'"' in self.reply_tail or b'\\' in self.reply_tail:
            raise ValueError('Lies.reply_tail must hold no quote or backslash: it goes inside a JSON string as is')
        if self.every < 1:
            raise ValueError('Lies.every must be >= 1')

    def lies_for(self, model: str) -> bool:
        """Whether a chat reply to ``model`` lies in any field."""
        lying = self.usage is not None or self.finish_reason is not None or self.model_name is not None
        lying = lying or bool(self.message_json)
        return (lying or bool(self.reply_tail)) and (not self.liars or model in self.liars)
