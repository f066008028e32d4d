# long because it is one server: the chat, tokenize and health routes, SSE and the injected faults share the request
# state and bounds (max_requests, the watchdog) that keep a test from running away.
"""A real, stdlib-only OpenAI-compatible chat-completions server for the tests and the benchmarks.

The server binds 127.0.0.1 on a free port, runs in a daemon thread and answers

* ``GET  /health``               -> 200 ``{"status": "ok"}``
* ``GET  /v1/models``            -> the registered model names (OpenAI list shape)
* ``GET  /v1/models/{id}``       -> one model, or 404
* ``POST /v1/chat/completions``  -> a chat completion (JSON, or SSE when ``"stream": true``)

With ``api_style='vllm'`` or ``'llama.cpp'`` (and ``tokenizer_dir``: a Hugging Face tokenizer, read with
transformers as vLLM does) it also answers the tokenize contract of that server:

* vLLM: ``POST /tokenize`` with ``{"model", "prompt"}`` or ``{"model", "messages"}`` (chat template applied)
  -> ``{"count", "tokens", "max_model_len", "token_strs"}``; ``max_model_len`` in the ``/v1/models`` entries;
* llama.cpp: ``POST /tokenize`` with ``{"content", "with_pieces"}`` -> ``{"tokens": [...]}`` (with pieces:
  ``{"id", "piece"}``, the piece a string, or a list of byte values when not valid UTF-8);
  ``POST /apply-template`` with ``{"messages"}`` -> ``{"prompt"}``; ``GET /props`` with ``n_ctx``.

``tokenize=False`` turns the tokenize routes off, ``context_window=None`` leaves the window unreported,
``usage=False`` omits ``usage`` from chat replies. ``prompt_cache=True`` reports, in each non-streamed reply, the
prompt tokens a one-slot prefix cache (llama-server's) would have reused from the previous request: llama.cpp's
``timings`` (``cache_n``, ``prompt_n``) with ``api_style='llama.cpp'``, else vLLM's
``usage.prompt_tokens_details.cached_tokens``.

Each model name maps to a *responder*: a function from the request's ``messages`` to the reply
text, or to a :class:`Reply` (content null, reasoning_content, tool calls; :func:`reasoning_only` and
:func:`tool_call_only` wrap a responder so). Two responders ship with it: :func:`needle_finder` (a
deterministic "model" that retrieves the sentence of the haystack that best matches the question) and
:func:`make_judge_responder` (a deterministic LLM judge answering ``{"reasoning": ..., "rating": N}``).

Faults can be injected per model with :class:`FaultPlan` (seeded, deterministic in request
order). Every chat request is recorded as a :class:`RecordedRequest`.

The server is bounded so a test can never run away: after ``max_requests`` requests it answers
503, and a watchdog shuts it down after ``max_seconds``.

Manual use::

    python -m evalscope_niah.testing.openai_server --port 0 --model needle-finder
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import random
import re
import socket
import string
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    'FAULT_KINDS',
    'JUDGE_FIELDS',
    'FaultPlan',
    'Lies',
    'OpenAICompatServer',
    'RecordedRequest',
    'Reply',
    'Responder',
    'make_judge_responder',
    'message_text',
    'needle_finder',
    'overlap_grader',
    'parse_judge_prompt',
    'reasoning_only',
    'tool_call_only',
]

HOST = '127.0.0.1'


@dataclass(frozen=True)
class Reply:
    """A responder's reply beyond plain text, as vLLM and SGLang send it: ``content`` None is sent as JSON null
    (their reasoning or tool parser took all of the text), ``reasoning_content`` is their reasoning field, and each
    of ``tool_calls`` is a (function name, JSON arguments) pair sent as an OpenAI tool call."""

    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: tuple[tuple[str, str], ...] = ()


Responder = Callable[[list[dict]], str | Reply]

#: Fault names, in the order their rates are stacked when one is drawn.
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
)

#: Placeholders of ``evalscope_niah.judging.judge.JUDGE_USER_TEMPLATE`` that the judge responder extracts.
JUDGE_FIELDS: tuple[str, ...] = ('question', 'reference', 'answer')

_MAX_BODY_BYTES = 64 * 1024 * 1024
_STREAM_PIECE_CHARS = 16


# --------------------------------------------------------------------------------------------
# Fault plans and recording
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FaultPlan:
    """Faults to inject into one model's chat requests.

    Each rate is a probability in [0, 1]; the rates must sum to at most 1. For every request
    to the model one number is drawn from the model's ``random.Random`` (seeded from the
    server's ``seed`` and the model name), and the rates are stacked in :data:`FAULT_KINDS`
    order to pick at most one fault. The k-th request to a model therefore always gets the
    same fault for the same seed, whatever other models receive.

    ``fail_first_n`` makes the first N requests to the model fail with HTTP 500 whatever the
    draw (the draw is still made, so later requests are unaffected).

    ``drip`` sends the headers, then the (non-streamed) reply one byte every ``drip_interval_s``; it stops after
    ``drip_seconds`` by closing the connection (a reply finished late, or never). ``long_body`` declares a
    Content-Length larger than the reply it sends, then holds the connection for ``hang_seconds``. Both keep every
    read of the client short: only a deadline for the whole request gives up on them.

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
        if self.drip_interval_s <= 0 or self.drip_seconds < 0:
            raise ValueError('FaultPlan.drip_interval_s must be > 0 and drip_seconds >= 0')

    def pick(self, draw: float) -> str | None:
        """The fault for a uniform draw in [0, 1), or None."""
        edge = 0.0
        for name in FAULT_KINDS:
            edge += getattr(self, name)
            if draw < edge:
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
    ``\\``).

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
    window: Any = None
    tokenize: str | None = None

    def __post_init__(self) -> None:
        if self.tokenize is not None and self.tokenize not in TOKENIZE_LIES:
            raise ValueError(f'Lies.tokenize must be one of {TOKENIZE_LIES} or None, got {self.tokenize!r}')
        if b'"' in self.reply_tail or b'\\' in self.reply_tail:
            raise ValueError('Lies.reply_tail must hold no quote or backslash: it goes inside a JSON string as is')

    def lies_for(self, model: str) -> bool:
        """Whether a chat reply to ``model`` lies in any field."""
        lying = self.usage is not None or self.finish_reason is not None or self.model_name is not None
        return (lying or bool(self.reply_tail)) and (not self.liars or model in self.liars)


@dataclass
class RecordedRequest:
    """One ``POST .../chat/completions`` request as the server saw it.

    ``status`` is the HTTP status answered (None while in flight, and for ``hang``/``drop``,
    which never answer). ``reply`` is the content sent (None when no completion was sent).
    """

    model: str | None
    messages: list[dict]
    raw_body: bytes
    fault: str | None
    status: int | None
    timestamp: float
    path: str = '/v1/chat/completions'
    stream: bool = False
    reply: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # names lower-cased (HTTP names are case-insensitive)

    @property
    def body(self) -> Any:
        """The request body parsed as JSON (None when it is not valid JSON)."""
        try:
            return json.loads(self.raw_body)
        except ValueError:
            return None

    @property
    def prompt_chars(self) -> int:
        return sum(len(message_text(m)) for m in self.messages if isinstance(m, Mapping))


# --------------------------------------------------------------------------------------------
# Text helpers shared by the responders
# --------------------------------------------------------------------------------------------

_CJK = '\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff'
_CJK_RE = re.compile(f'[{_CJK}]')
_WORD_RE = re.compile(r'[a-z0-9]+')
_SENTENCE_SPLIT_RE = re.compile(
    r'(?<=[.!?])\s+'  # English end of sentence, followed by whitespace
    r'|(?<=[.!?]["\'”’)\]])\s+'  # ... or by a closing quote/bracket, then whitespace
    r'|(?<=[。！？])(?![”’」』）"\'])\s*'  # Chinese end of sentence (no whitespace needed)
    r'|(?<=[。！？][”’」』）"\'])\s*'  # ... or followed by a closing quote/bracket
    r'|\n+'
)


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a chat message: its string content, or its text parts joined."""
    content = message.get('content')
    if content is None:
        return ''
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get('text'), str):
                parts.append(part['text'])
        return ''.join(parts)
    return str(content)


def _terms(text: str) -> set[str]:
    """Lowercase English words longer than 2 chars (and any number), plus each CJK character."""
    lowered = text.lower()
    words = {w for w in _WORD_RE.findall(lowered) if len(w) > 2 or w.isdigit()}
    return words | set(_CJK_RE.findall(text))


def _between(text: str, start: str, end: str) -> str | None:
    i = text.find(start)
    if i < 0:
        return None
    j = text.find(end, i + len(start))
    if j < 0:
        return None
    return text[i + len(start) : j]


def _split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_SPLIT_RE.split(text) if s and s.strip()]


def _last_user_text(messages: list[dict]) -> str:
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get('role') == 'user':
            return message_text(message)
    return '\n'.join(message_text(m) for m in messages if isinstance(m, Mapping))


# --------------------------------------------------------------------------------------------
# Ready-made responders
# --------------------------------------------------------------------------------------------


def needle_finder(messages: list[dict]) -> str:
    """Answer a NIAH prompt from the prompt itself, deterministically.

    The question is the text between ``<question>`` and ``</question>`` in the last user
    message (else its last non-empty line); the haystack is the text between ``<text>`` and
    ``</text>`` (else the whole user message less the question). The haystack is split into sentences (``.!?``
    and ``。！？``, and newlines) and the sentence sharing the most terms with the question is
    returned (English: lowercase words longer than 2 chars, plus numbers; Chinese: characters).
    Ties go to the first sentence. This simulates a model that retrieves well.
    """
    user = _last_user_text(messages)
    question = _between(user, '<question>', '</question>')
    if question is not None:
        rest = user.replace(f'<question>{question}</question>', '\n', 1)
    else:
        lines = user.splitlines()
        while lines and not lines[-1].strip():
            lines.pop()
        question = lines.pop() if lines else ''
        rest = '\n'.join(lines)
    context = _between(user, '<text>', '</text>')
    if context is None:
        context = rest  # the whole message, less the question (else it would match itself)
    wanted = _terms(question)
    best, best_score = '', -1
    for sentence in _split_sentences(context):
        score = len(wanted & _terms(sentence))
        if score > best_score:
            best, best_score = sentence, score
    return best


def overlap_grader(question: str, reference: str, answer: str) -> int:
    """Rate an answer 10/7/5/3/1 by the share of reference terms found in it.

    Terms are lowercase English words longer than 2 chars (and numbers) plus CJK characters.
    Share >= 0.9 -> 10, >= 0.7 -> 7, >= 0.5 -> 5, >= 0.3 -> 3, else 1. A reference without
    any term is compared to the answer as a whole (case-insensitive containment).
    ``question`` is accepted for the grader signature and ignored.
    """
    del question
    wanted = _terms(reference)
    if not wanted:
        ref = reference.strip().lower()
        return 10 if ref and ref in answer.lower() else 1
    share = len(wanted & _terms(answer)) / len(wanted)
    for threshold, rating in ((0.9, 10), (0.7, 7), (0.5, 5), (0.3, 3)):
        if share >= threshold:
            return rating
    return 1


def _literal_regex(literal: str) -> str:
    # Whitespace runs match any whitespace run, so re-wrapped templates still match.
    return r'\s+'.join(re.escape(chunk) for chunk in re.split(r'\s+', literal))


@functools.lru_cache(maxsize=32)
def _template_regex(template: str) -> re.Pattern[str]:
    parts: list[str] = []
    seen: set[str] = set()
    for literal, field_name, _spec, _conversion in string.Formatter().parse(template.strip()):
        if literal:
            parts.append(_literal_regex(literal))
        if field_name is None:
            continue
        if field_name in JUDGE_FIELDS:
            parts.append(f'(?P={field_name})' if field_name in seen else f'(?P<{field_name}>.*?)')
            seen.add(field_name)
        else:
            parts.append('.*?')
    return re.compile(''.join(parts), re.DOTALL)


def _judge_template() -> str:
    from ..judging import (
        judge,
    )  # lazy: serving needs only the standard library; the template only parsing a judge prompt

    return judge.JUDGE_USER_TEMPLATE


def parse_judge_prompt(prompt: str, template: str | None = None) -> dict[str, str] | None:
    """Extract question/reference/answer from a judge prompt rendered from ``template``.

    ``template`` defaults to ``evalscope_niah.judging.judge.JUDGE_USER_TEMPLATE`` (read at call time).
    The regex is built from the template, so wording changes need no change here. Returns a
    dict with the keys of :data:`JUDGE_FIELDS` ('' for a placeholder the template lacks), or
    None when the prompt does not match the template.
    """
    pattern = _template_regex(template if template is not None else _judge_template())
    match = pattern.fullmatch(prompt.strip())
    if match is None:
        return None
    found = match.groupdict()
    return {name: (found.get(name) or '').strip() for name in JUDGE_FIELDS}


def reasoning_only(responder: Responder) -> Responder:
    """``responder``'s answer sent in reasoning_content with content null: a vLLM or SGLang reasoning parser that
    never sees the model's end tag puts the whole reply there."""

    def respond(messages: list[dict]) -> Reply:
        return Reply(content=None, reasoning_content=str(responder(messages)))

    return respond


def tool_call_only(responder: Responder, *, name: str = 'answer') -> Responder:
    """``responder``'s answer sent as the arguments of one tool call ``name`` with content null (a tool parser or
    chat template that turns the answer into a call though the request offered no tool)."""

    def respond(messages: list[dict]) -> Reply:
        return Reply(content=None, tool_calls=((name, json.dumps({'answer': str(responder(messages))})),))

    return respond


def make_judge_responder(grader: Callable[[str, str, str], int]) -> Responder:
    """A responder for judge requests: ``{"reasoning": "...", "rating": grader(q, ref, ans)}``.

    It looks for the message (last first) that matches ``evalscope_niah.judging.judge.JUDGE_USER_TEMPLATE``
    and raises ValueError (the server answers 500) when none does.
    """

    def judge_responder(messages: list[dict]) -> str:
        template = _judge_template()
        for message in reversed(messages):
            if not isinstance(message, Mapping):
                continue
            fields_ = parse_judge_prompt(message_text(message), template)
            if fields_ is not None:
                rating = int(grader(fields_['question'], fields_['reference'], fields_['answer']))
                reasoning = f'Compared the answer with the reference answer; rating {rating}.'
                return json.dumps({'reasoning': reasoning, 'rating': rating}, ensure_ascii=False)
        raise ValueError('no message matches evalscope_niah.judging.judge.JUDGE_USER_TEMPLATE')

    return judge_responder


# --------------------------------------------------------------------------------------------
# HTTP plumbing
# --------------------------------------------------------------------------------------------


def _prompt_text(messages: list) -> str:
    return '\n'.join(f'{m.get("role")}: {message_text(m)}' for m in messages)


def _approx_tokens(text: str) -> int:
    return len(re.findall(rf'[{_CJK}]|[A-Za-z0-9_]+|[^\sA-Za-z0-9_]', text))


def _tool_calls(reply: Reply) -> list[dict]:
    return [
        {'id': f'call_{i}', 'type': 'function', 'function': {'name': name, 'arguments': arguments}}
        for i, (name, arguments) in enumerate(reply.tool_calls)
    ]


def _reply_message(text: str, extra: Reply | None) -> dict:
    """The assistant message of a non-streamed reply: ``text``, and what a :class:`Reply` adds."""
    message: dict[str, Any] = {'role': 'assistant', 'content': text}
    if extra is None:
        return message
    if extra.content is None:
        message['content'] = None
    if extra.reasoning_content is not None:
        message['reasoning_content'] = extra.reasoning_content
    if extra.tool_calls:
        message['tool_calls'] = _tool_calls(extra)
    return message


def _error_body(message: str, type_: str, code: str | None = None, param: str | None = None) -> dict:
    return {'error': {'message': message, 'type': type_, 'param': param, 'code': code}}


def _echo_key(authorization: str) -> dict:
    """A 401 body that quotes the rejected credentials, as some servers and proxies do."""
    key = authorization.removeprefix('Bearer ').strip()
    message = f'Incorrect API key provided: {key}. The request sent the header Authorization: {authorization}'
    return _error_body(message, 'invalid_request_error', 'invalid_api_key')


@functools.lru_cache(maxsize=1)
def _byte_level_decoder() -> dict[str, int]:
    """GPT-2 byte-level BPE: the printable character standing for each byte, inverted (character -> byte)."""
    keep = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    stand_ins = {byte: byte for byte in keep}
    for offset, byte in enumerate(b for b in range(256) if b not in stand_ins):
        stand_ins[byte] = 256 + offset
    return {chr(code): byte for byte, code in stand_ins.items()}


def _llama_piece(tokenizer: Any, token_id: int) -> str | list[int]:
    """A token's text as llama.cpp's /tokenize with_pieces gives it: a string, or its bytes when not UTF-8."""
    spelled = tokenizer.convert_ids_to_tokens(token_id)
    decoder = _byte_level_decoder()
    data = bytes(decoder[c] for c in spelled) if all(c in decoder for c in spelled) else spelled.encode('utf-8')
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError:
        return list(data)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, owner: OpenAICompatServer, port: int) -> None:
        self.owner = owner
        self._conns: set[socket.socket] = set()
        self._conn_threads: set[threading.Thread] = set()
        self._conn_lock = threading.Lock()
        super().__init__((HOST, port), _Handler)

    def process_request(self, request, client_address):  # type: ignore[override]
        if self.owner._stopping.is_set():
            self.shutdown_request(request)
            return
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name=f'openai-compat-conn-{client_address[1]}',
            daemon=True,
        )
        with self._conn_lock:
            self._conns.add(request)
            self._conn_threads.add(thread)
        thread.start()

    def process_request_thread(self, request, client_address):  # type: ignore[override]
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._conn_lock:
                self._conns.discard(request)
                self._conn_threads.discard(threading.current_thread())

    def handle_error(self, request, client_address):  # type: ignore[override]
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError) or self.owner._stopping.is_set():
            return  # a client went away, or we are shutting down: nothing to report
        super().handle_error(request, client_address)

    def close_connections(self, deadline: float) -> None:
        with self._conn_lock:
            conns = list(self._conns)
            threads = list(self._conn_threads)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'OpenAICompatTestServer/1.0'
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # ---- helpers -------------------------------------------------------------------------

    @property
    def owner(self) -> OpenAICompatServer:
        return self.server.owner

    def _path(self) -> str:
        path = urlsplit(self.path).path.rstrip('/')
        return path or '/'

    def _send_bytes(self, status: int, body: bytes, content_type: str, headers: Mapping[str, str] | None = None):
        self.send_response(status)
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _send_json(self, status: int, obj: Any, headers: Mapping[str, str] | None = None) -> None:
        body = json.dumps(obj, ensure_ascii=False).encode('utf-8')
        self._send_bytes(status, body, 'application/json', headers)

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(f'{len(data):X}\r\n'.encode('ascii') + data + b'\r\n')

    def _send_sse(self, events: list[str]) -> None:
        self.send_response(200)
        self.send_header('Content-Type', 'text/event-stream; charset=utf-8')
        self.send_header('Cache-Control', 'no-cache')
        self.send_header('Transfer-Encoding', 'chunked')
        self.end_headers()
        for event in events:
            self._send_chunk(f'data: {event}\n\n'.encode())
        self.wfile.write(b'0\r\n\r\n')

    def _over_limit(self) -> bool:
        if self.owner._count_request():
            return False
        self._send_json(503, _error_body('request limit reached', 'server_error', 'max_requests'))
        return True

    # ---- GET -----------------------------------------------------------------------------

    def do_GET(self) -> None:
        if self._over_limit():
            return
        path = self._path()
        if path == '/health':
            self._send_json(200, {'status': 'ok'})
        elif path == '/props' and self.owner.api_style == 'llama.cpp':
            window = self.owner._window()
            settings = {'n_ctx': window} if window is not None else {}
            self._send_json(200, {'default_generation_settings': settings, 'total_slots': 1})
        elif path in ('/v1/models', '/models'):
            self._send_json(200, {'object': 'list', 'data': [self.owner._model_card(m) for m in self.owner.models]})
        elif path.startswith(('/v1/models/', '/models/')):
            name = path.split('/models/', 1)[1]
            if name in self.owner.models:
                self._send_json(200, self.owner._model_card(name))
            else:
                self._send_json(404, self.owner._model_not_found(name))
        else:
            self._send_json(404, _error_body(f'Unknown path {path}', 'invalid_request_error', 'not_found'))

    # ---- POST ----------------------------------------------------------------------------

    def _read_body(self) -> bytes | None:
        try:
            length = int(self.headers.get('Content-Length') or 0)
        except ValueError:
            length = -1
        if length < 0 or length > _MAX_BODY_BYTES:
            self.close_connection = True
            self._send_json(413, _error_body('bad or too large Content-Length', 'invalid_request_error'))
            return None
        return self.rfile.read(length) if length else b''

    def do_POST(self) -> None:
        raw = self._read_body()
        if raw is None:
            return
        path = self._path()
        if path in ('/tokenize', '/apply-template') and self.owner._serves_tokenize():
            if not self._over_limit():
                self.owner._count_tokenize()
                self._tokenize_route(path, raw)
            return
        if path not in ('/v1/chat/completions', '/chat/completions'):
            if not self._over_limit():
                self._send_json(404, _error_body(f'Unknown path {path}', 'invalid_request_error', 'not_found'))
            return

        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        model = body.get('model') if isinstance(body, dict) else None
        messages = body.get('messages') if isinstance(body, dict) else None
        stream = bool(body.get('stream')) if isinstance(body, dict) else False
        record = RecordedRequest(
            model=model if isinstance(model, str) else None,
            messages=messages if isinstance(messages, list) else [],
            raw_body=raw,
            fault=None,
            status=None,
            timestamp=time.time(),
            path=path,
            stream=stream,
            headers={name.lower(): value for name, value in self.headers.items()},
        )
        self.owner._record(record)
        try:
            self._chat(record, body, stream)
        finally:
            self.owner._notify()

    def _prompt_tokens(self, messages: list) -> int:
        """What a real server reports as usage.prompt_tokens: the rendered chat counted by its tokenizer, when the
        server has one (vLLM / llama.cpp styles); else an approximation."""
        if self.owner.tokenizer_dir is None:
            return sum(_approx_tokens(message_text(m)) for m in messages)
        tokenizer = self.owner._tokenizer()
        text = tokenizer.apply_chat_template(
            [{'role': m.get('role'), 'content': message_text(m)} for m in messages],
            add_generation_prompt=True,
            tokenize=False,
        )
        return len(tokenizer(text, add_special_tokens=False)['input_ids'])

    def _tokenize_route(self, path: str, raw: bytes) -> None:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return self._send_json(400, _error_body('request body is not a JSON object', 'invalid_request_error'))
        tokenizer = self.owner._tokenizer()
        messages = body.get('messages')
        lie = self.owner.lies.tokenize
        if lie == 'silent':
            self.owner._stopping.wait(self.owner.max_seconds)
            self.close_connection = True
            return None
        if lie == 'garbage':
            return self._send_json(200, {'count': 3, 'tokens': ['many', None, {'id': 'x'}], 'max_model_len': 'big'})
        if self.owner.api_style == 'llama.cpp':
            if path == '/apply-template':
                if not isinstance(messages, list):
                    return self._send_json(400, _error_body('"messages" must be a list', 'invalid_request_error'))
                prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
                return self._send_json(200, {'prompt': prompt})
            content = body.get('content')
            if not isinstance(content, str):  # llama.cpp answers an empty list when there is no content
                return self._send_json(200, {'tokens': []})
            ids = tokenizer(content, add_special_tokens=bool(body.get('add_special')))['input_ids']
            if not body.get('with_pieces'):
                return self._send_json(200, {'tokens': ids[:-1] if lie == 'wrong_count' else ids})
            return self._send_json(200, {'tokens': [{'id': i, 'piece': _llama_piece(tokenizer, i)} for i in ids]})
        if path != '/tokenize':
            return self._send_json(404, _error_body(f'Unknown path {path}', 'invalid_request_error', 'not_found'))
        model = body.get('model')
        if model not in self.owner._responders:
            return self._send_json(404, self.owner._model_not_found(str(model)))
        if isinstance(messages, list):
            # vLLM renders the template, then tokenizes without adding special tokens (the template has them).
            text = tokenizer.apply_chat_template(
                messages, add_generation_prompt=body.get('add_generation_prompt', True), tokenize=False
            )
            ids = tokenizer(text, add_special_tokens=bool(body.get('add_special_tokens', False)))['input_ids']
        elif isinstance(body.get('prompt'), str):
            ids = tokenizer(body['prompt'], add_special_tokens=bool(body.get('add_special_tokens', True)))['input_ids']
        else:
            return self._send_json(400, _error_body('"prompt" or "messages" is required', 'BadRequestError'))
        answer: dict[str, Any] = {'count': len(ids) + 7 * (lie == 'wrong_count'), 'tokens': ids, 'token_strs': None}
        if self.owner._window() is not None:
            answer['max_model_len'] = self.owner._window()
        if body.get('return_token_strs'):
            answer['token_strs'] = tokenizer.convert_ids_to_tokens(ids)
        return self._send_json(200, answer)

    def _chat(self, record: RecordedRequest, body: Any, stream: bool) -> None:
        # long because it is one request's path in the order a real server takes it: checks, the drawn fault, reply.
        owner = self.owner

        def reject(status: int, error: dict, headers: Mapping[str, str] | None = None) -> None:
            record.status = status
            self._send_json(status, error, headers)

        if not owner._count_request() or owner._stopping.is_set():
            return reject(503, _error_body('request limit reached', 'server_error', 'max_requests'))
        if not isinstance(body, dict):
            return reject(400, _error_body('request body is not a JSON object', 'invalid_request_error'))
        model = record.model
        if model is None:
            return reject(400, _error_body('missing "model"', 'invalid_request_error', param='model'))
        if not isinstance(body.get('messages'), list) or not all(isinstance(m, dict) for m in body['messages']):
            return reject(400, _error_body('"messages" must be a list of objects', 'invalid_request_error'))
        key = owner.api_keys.get(model)
        if key is not None and record.headers.get('authorization') != f'Bearer {key}':
            return reject(401, _error_body('Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key'))
        responder = owner._responders.get(model)
        if responder is None:
            return reject(404, owner._model_not_found(model))

        number, fault, plan = owner._pick_fault(model)
        record.fault = fault
        if plan is not None and plan.echo_key_status is not None:
            return reject(plan.echo_key_status, _echo_key(record.headers.get('authorization', '')))
        if fault == 'http_500':
            return reject(500, _error_body('Injected fault: http_500', 'server_error', 'injected_http_500'))
        if fault == 'http_429':
            assert plan is not None
            seconds = plan.retry_after_seconds
            retry_after = str(int(seconds)) if float(seconds).is_integer() else str(seconds)
            return reject(
                429,
                _error_body('Injected fault: rate limited', 'rate_limit_error', 'rate_limit_exceeded'),
                {'Retry-After': retry_after},
            )
        if fault in ('hang', 'drop'):
            if fault == 'hang':
                assert plan is not None
                owner._stopping.wait(plan.hang_seconds)
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return None

        extra: Reply | None = None
        if fault == 'empty_content':
            reply = ''
        else:
            try:
                answer = responder(record.messages)
            except Exception as exc:
                return reject(500, _error_body(f'responder failed: {exc!r}', 'server_error', 'responder_error'))
            extra = answer if isinstance(answer, Reply) else None
            reply = (extra.content or '') if extra is not None else str(answer)
        finish_reason = 'tool_calls' if extra is not None and extra.tool_calls else 'stop'
        if fault == 'length':
            reply = reply[: max(1, len(reply) // 2)]
            finish_reason = 'length'

        completion_id = f'chatcmpl-{number:08d}'
        created = int(time.time())
        usage = {
            'prompt_tokens': self._prompt_tokens(record.messages),
            'completion_tokens': _approx_tokens(reply + ((extra.reasoning_content or '') if extra else '')),
        }
        usage['total_tokens'] = usage['prompt_tokens'] + usage['completion_tokens']
        record.status = 200
        record.reply = reply

        if stream:
            usage_sent = usage if owner.usage else None
            self._send_sse(
                self._stream_events(
                    body, completion_id, created, model, reply, finish_reason, usage_sent, fault, parts=extra
                )
            )
            return None
        completion = {
            'id': completion_id,
            'object': 'chat.completion',
            'created': created,
            'model': model,
            'choices': [
                {
                    'index': 0,
                    'message': _reply_message(reply, extra),
                    'logprobs': None,
                    'finish_reason': finish_reason,
                }
            ],
            'usage': usage,
        }
        if owner.prompt_cache:
            owner._report_prompt_cache(completion, record.messages)
        if not owner.usage:
            del completion['usage']
        if owner.lies.lies_for(model):
            return self._send_lies(completion, owner.lies)
        if fault == 'malformed_json':
            text = json.dumps(completion, ensure_ascii=False)
            self._send_bytes(200, text[: len(text) // 2].encode('utf-8'), 'application/json')
            return None
        if fault in ('drip', 'long_body'):
            assert plan is not None
            return self._send_slowly(completion, plan, fault)
        self._send_json(200, completion)
        return None

    def _send_slowly(self, completion: dict, plan: FaultPlan, fault: str) -> None:
        """The 'drip' and 'long_body' faults: headers at once, then a body that does not end in time."""
        owner = self.owner
        body = json.dumps(completion, ensure_ascii=False).encode('utf-8')
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body) + (1000 if fault == 'long_body' else 0)))
        self.end_headers()
        self.close_connection = True
        try:
            if fault == 'long_body':
                self.wfile.write(body)
                self.wfile.flush()
                owner._stopping.wait(plan.hang_seconds)
            else:
                self.wfile.flush()
                end = time.monotonic() + plan.drip_seconds
                for index in range(len(body)):
                    if time.monotonic() >= end or owner._stopping.wait(plan.drip_interval_s):
                        break
                    self.wfile.write(body[index : index + 1])
                    self.wfile.flush()
        except OSError:  # the client gave up and closed: what the fault is for
            pass
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _send_lies(self, completion: dict, lies: Lies) -> None:
        if isinstance(lies.usage, Mapping) and 'usage' in completion:
            completion['usage'].update(lies.usage)
        elif lies.usage is not None:  # not even an object: replaces the whole of usage
            completion['usage'] = lies.usage
        choice = completion['choices'][0]
        if lies.finish_reason is not None:
            choice['finish_reason'] = lies.finish_reason
        if lies.model_name is not None:
            completion['model'] = lies.model_name
        marker = '\x00tail\x00'  # escaped by json.dumps, so it cannot occur in the reply's own JSON text
        choice['message']['content'] += marker
        body = json.dumps(completion, ensure_ascii=False).encode('utf-8')
        escaped = json.dumps(marker)[1:-1].encode('ascii')
        self._send_bytes(200, body.replace(escaped, lies.reply_tail, 1), 'application/json')

    @staticmethod
    def _stream_events(
        body: dict,
        completion_id: str,
        created: int,
        model: str,
        reply: str,
        finish_reason: str,
        usage: dict | None,
        fault: str | None,
        *,
        parts: Reply | None = None,
    ) -> list[str]:
        def chunk(choices: list[dict], **extra: Any) -> str:
            obj = {
                'id': completion_id,
                'object': 'chat.completion.chunk',
                'created': created,
                'model': model,
                'choices': choices,
                **extra,
            }
            return json.dumps(obj, ensure_ascii=False)

        def delta(d: dict, finish: str | None = None) -> dict:
            return {'index': 0, 'delta': d, 'logprobs': None, 'finish_reason': finish}

        events = [chunk([delta({'role': 'assistant', 'content': ''})])]
        if fault == 'malformed_json':
            broken = chunk([delta({'content': reply})])
            return [*events, broken[: len(broken) // 2], '[DONE]']
        if parts is not None and parts.reasoning_content:
            events.append(chunk([delta({'reasoning_content': parts.reasoning_content})]))
        for i in range(0, len(reply), _STREAM_PIECE_CHARS):
            events.append(chunk([delta({'content': reply[i : i + _STREAM_PIECE_CHARS]})]))
        if parts is not None and parts.tool_calls:
            calls = [{'index': i, **call} for i, call in enumerate(_tool_calls(parts))]
            events.append(chunk([delta({'tool_calls': calls})]))
        events.append(chunk([delta({}, finish_reason)]))
        options = body.get('stream_options')
        if isinstance(options, dict) and options.get('include_usage') and usage is not None:
            events.append(chunk([], usage=usage))
        events.append('[DONE]')
        return events


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------


class OpenAICompatServer:
    """An OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

    Args:
        responders: model name -> function from the request's messages to the reply text.
        faults: model name -> :class:`FaultPlan`; the key ``'*'`` applies to models not listed.
        seed: seed for the fault draws (each model gets its own ``random.Random``).
        max_requests: HTTP requests answered normally (all endpoints); later ones get 503.
        max_seconds: a watchdog shuts the server down after this many seconds.
        port: port to bind on 127.0.0.1 (0: a free port).
        api_style: 'openai' (chat only), 'vllm' or 'llama.cpp' (their tokenize and context-window routes).
        tokenizer_dir: the Hugging Face tokenizer directory the tokenize routes use.
        context_window: reported in /v1/models (vllm) or /props (llama.cpp); None reports none.
        tokenize: False turns the tokenize routes of ``api_style`` off.
        usage: False omits ``usage`` from chat replies.
        prompt_cache: True reports the prompt tokens a one-slot prefix cache would have reused (see the module doc).
        lies: what the server says instead of the truth (:class:`Lies`); None tells the truth.
        api_keys: model name -> the API key its chat requests must carry (``Authorization: Bearer <key>``); a
            request with another key, or none, is answered 401 as OpenAI does. Models not listed take any key.

    The server starts serving in a daemon thread on construction. Use it as a context
    manager, or call :meth:`close`.
    """

    def __init__(
        self,
        responders: Mapping[str, Responder],
        faults: Mapping[str, FaultPlan] | None = None,
        seed: int = 0,
        *,
        max_requests: int = 5000,
        max_seconds: float = 600,
        port: int = 0,
        api_style: str = 'openai',
        tokenizer_dir: str | None = None,
        context_window: int | None = None,
        tokenize: bool = True,
        usage: bool = True,
        prompt_cache: bool = False,
        lies: Lies | None = None,
        api_keys: Mapping[str, str] | None = None,
    ) -> None:
        if api_style not in ('openai', 'vllm', 'llama.cpp'):
            raise ValueError("api_style must be 'openai', 'vllm' or 'llama.cpp'")
        if api_style != 'openai' and tokenize and tokenizer_dir is None:
            raise ValueError('the tokenize routes need tokenizer_dir')
        self.api_style = api_style
        self.tokenizer_dir = tokenizer_dir
        self.context_window = context_window
        self.tokenize = tokenize
        self.usage = usage
        self.prompt_cache = prompt_cache
        self._cached_prompt = ''  # the one slot: the last prompt's text
        self.lies = lies or Lies()
        self.api_keys = dict(api_keys or {})
        self._hf_tokenizer: Any = None
        self._tokenize_count = 0
        if max_requests < 0:
            raise ValueError('max_requests must be >= 0')
        if not max_seconds > 0:
            raise ValueError('max_seconds must be > 0')
        self._responders: dict[str, Responder] = dict(responders)
        self._faults: dict[str, FaultPlan] = dict(faults or {})
        self.seed = seed
        self.max_requests = max_requests
        self.max_seconds = max_seconds

        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._closed = False
        self._done = threading.Event()
        self._requests: list[RecordedRequest] = []
        self._request_count = 0
        self._chat_count = 0
        self._per_model_count: dict[str, int] = {}
        self._rngs: dict[str, random.Random] = {}
        self._fault_counts: dict[str, int] = dict.fromkeys(FAULT_KINDS, 0)
        self._start(port)

    def _start(self, port: int) -> None:
        """Bind 127.0.0.1, then serve and watch the time bound in daemon threads."""
        self._httpd = _HTTPServer(self, port)
        self.host, self.port = self._httpd.server_address[:2]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={'poll_interval': 0.05}, name='openai-compat-server', daemon=True
        )
        self._thread.start()
        self._watchdog = threading.Thread(target=self._watch, name='openai-compat-watchdog', daemon=True)
        self._watchdog.start()

    # ---- public API ----------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no ``/v1``)."""
        return f'http://{self.host}:{self.port}'

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: what OpenAI clients take as ``base_url``."""
        return f'{self.url}/v1'

    @property
    def models(self) -> list[str]:
        return list(self._responders)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` (or the watchdog) has finished shutting the server down."""
        return self._done.is_set()

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of the recorded chat requests, in arrival order."""
        with self._lock:
            return list(self._requests)

    def requests_for(self, model: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self._requests if r.model == model]

    def prompt_chars_for(self, model: str) -> int:
        """Total characters of message contents received for ``model`` (all its requests)."""
        return sum(r.prompt_chars for r in self.requests_for(model))

    @property
    def tokenize_requests(self) -> int:
        """Requests answered on the tokenize routes (/tokenize, /apply-template)."""
        with self._lock:
            return self._tokenize_count

    @property
    def fault_counts(self) -> dict[str, int]:
        """Injected faults so far: every name of :data:`FAULT_KINDS` -> count."""
        with self._lock:
            return dict(self._fault_counts)

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Wait until at least ``count`` chat requests were received; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self._requests) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True

    def close(self, timeout: float = 2.0) -> None:
        """Stop serving, end hung handlers and close every connection (idempotent)."""
        with self._lock:
            closing_elsewhere = self._closed
            self._closed = True
        if closing_elsewhere:  # e.g. the watchdog: wait for it to finish
            self._done.wait(timeout)
            return
        deadline = time.monotonic() + timeout
        self._stopping.set()  # wakes hangs and the watchdog
        self._httpd.shutdown()
        self._httpd.server_close()
        self._httpd.close_connections(deadline)
        for thread in (self._thread, self._watchdog):
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
        self._done.set()

    def __enter__(self) -> OpenAICompatServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = 'closed' if self.closed else 'serving'
        return f'<OpenAICompatServer {self.base_url} models={self.models} {state}>'

    # ---- internals used by the handler ---------------------------------------------------

    def _watch(self) -> None:
        if not self._stopping.wait(self.max_seconds):
            self.close()

    def _count_request(self) -> bool:
        """Count one HTTP request; False once over ``max_requests``."""
        with self._lock:
            self._request_count += 1
            return self._request_count <= self.max_requests

    def _record(self, record: RecordedRequest) -> None:
        with self._changed:
            self._requests.append(record)
            self._changed.notify_all()

    def _report_prompt_cache(self, completion: dict, messages: list) -> None:
        """The cache figures where the server style puts them (the bench replaying requests reads them there)."""
        usage = completion['usage']
        prompt_tokens = usage['prompt_tokens']
        cached = round(prompt_tokens * self._reuse_prompt_prefix(_prompt_text(messages)))
        if self.api_style == 'llama.cpp':
            completion['timings'] = {'cache_n': cached, 'prompt_n': prompt_tokens - cached}
        else:
            usage['prompt_tokens_details'] = {'cached_tokens': cached}

    def _reuse_prompt_prefix(self, text: str) -> float:
        """The share of ``text`` a one-slot prefix cache holds (its common prefix with the last prompt); the slot then
        holds ``text``."""
        with self._lock:
            previous, self._cached_prompt = self._cached_prompt, text
        if not text:
            return 0.0
        pairs = zip(previous, text, strict=False)  # unequal lengths: the shorter one ends the common prefix
        common = next((i for i, (a, b) in enumerate(pairs) if a != b), min(len(previous), len(text)))
        return common / len(text)

    def _notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def _pick_fault(self, model: str) -> tuple[int, str | None, FaultPlan | None]:
        with self._lock:
            self._chat_count += 1
            number = self._chat_count
            plan = self._faults.get(model, self._faults.get('*'))
            if plan is None:
                return number, None, None
            index = self._per_model_count.get(model, 0)
            self._per_model_count[model] = index + 1
            rng = self._rngs.get(model)
            if rng is None:
                rng = self._rngs[model] = random.Random(f'{self.seed}:{model}')
            fault = plan.pick(rng.random())
            if index < plan.fail_first_n:
                fault = 'http_500'
            if fault is not None:
                self._fault_counts[fault] += 1
            return number, fault, plan

    def _window(self) -> Any:
        return self.context_window if self.lies.window is None else self.lies.window

    def _model_card(self, name: str) -> dict:
        card = {'id': name, 'object': 'model', 'created': 0, 'owned_by': 'openai-compat-test-server'}
        if self.api_style == 'vllm' and self._window() is not None:
            card.update(root=name, max_model_len=self._window())
        return card

    def _serves_tokenize(self) -> bool:
        return self.api_style != 'openai' and self.tokenize

    def _count_tokenize(self) -> None:
        with self._lock:
            self._tokenize_count += 1

    def _tokenizer(self) -> Any:
        """The transformers tokenizer of ``tokenizer_dir``, loaded on first use (thread-safe)."""
        with self._lock:
            if self._hf_tokenizer is None:
                from transformers import AutoTokenizer

                self._hf_tokenizer = AutoTokenizer.from_pretrained(str(self.tokenizer_dir))
            return self._hf_tokenizer

    @staticmethod
    def _model_not_found(name: str) -> dict:
        return _error_body(f'The model `{name}` does not exist.', 'invalid_request_error', 'model_not_found', 'model')


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog='python -m evalscope_niah.testing.openai_server',
        description='Serve needle_finder (and optionally an overlap judge) on 127.0.0.1 until Ctrl-C.',
    )
    parser.add_argument('--port', type=int, default=0, help='port on 127.0.0.1 (0: a free port)')
    parser.add_argument('--model', action='append', help='model name served by needle_finder (repeatable)')
    parser.add_argument(
        '--judge-model', action='append', default=[], help='model name served by the overlap judge (repeatable)'
    )
    parser.add_argument('--max-requests', type=int, default=1_000_000)
    parser.add_argument('--max-seconds', type=float, default=24 * 3600.0)
    args = parser.parse_args(argv)

    responders: dict[str, Responder] = dict.fromkeys(args.model or ['needle-finder'], needle_finder)
    judge = make_judge_responder(overlap_grader)
    responders.update(dict.fromkeys(args.judge_model, judge))
    server = OpenAICompatServer(
        responders, port=args.port, max_requests=args.max_requests, max_seconds=args.max_seconds
    )
    print(server.base_url, flush=True)
    print(f'models: {", ".join(server.models)}', file=sys.stderr, flush=True)
    try:
        while not server._stopping.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
