"""What goes over the test server's wire: the recorded request, and the OpenAI-shaped bodies it answers (completions
and their streamed events, reply messages, tool calls, error bodies, token counts, llama.cpp's token pieces)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .responders import CJK_CHARS, Reply, message_text

__all__ = [
    'RecordedRequest',
    'approx_tokens',
    'chat_completion',
    'echo_key',
    'error_body',
    'llama_piece',
    'openai_tool_calls',
    'prompt_text',
    'reply_message',
    'stream_events',
]

# Characters of the reply per streamed content chunk: small, so a client must join many.
_STREAM_PIECE_CHARS = 16


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


def prompt_text(messages: list) -> str:
    return '\n'.join(f'{m.get("role")}: {message_text(m)}' for m in messages)


def approx_tokens(text: str) -> int:
    return len(re.findall(rf'[{CJK_CHARS}]|[A-Za-z0-9_]+|[^\sA-Za-z0-9_]', text))


def openai_tool_calls(reply: Reply) -> list[dict]:
    return [
        {'id': f'call_{i}', 'type': 'function', 'function': {'name': name, 'arguments': arguments}}
        for i, (name, arguments) in enumerate(reply.tool_calls)
    ]


def reply_message(text: str, extra: Reply | None) -> dict:
    """The assistant message of a non-streamed reply: ``text``, and what a :class:`Reply` adds."""
    message: dict[str, Any] = {'role': 'assistant', 'content': text}
    if extra is None:
        return message
    if extra.content is None:
        message['content'] = None
    if extra.reasoning_content is not None:
        message['reasoning_content'] = extra.reasoning_content
    if extra.tool_calls:
        message['tool_calls'] = openai_tool_calls(extra)
    return message


def chat_completion(
    completion_id: str, created: int, model: str | None, message: dict, finish_reason: str, usage: dict[str, int]
) -> dict:
    """A non-streamed ``chat.completion`` body with one choice."""
    choice = {'index': 0, 'message': message, 'logprobs': None, 'finish_reason': finish_reason}
    return {
        'id': completion_id,
        'object': 'chat.completion',
        'created': created,
        'model': model,
        'choices': [choice],
        'usage': usage,
    }


def stream_events(
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
    """A streamed reply's SSE events, as OpenAI sends them: role, reasoning, content in pieces, tool calls, the
    finish reason, usage when asked for, [DONE]; the 'malformed_json' fault cuts a chunk in half."""

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
        calls = [{'index': i, **call} for i, call in enumerate(openai_tool_calls(parts))]
        events.append(chunk([delta({'tool_calls': calls})]))
    events.append(chunk([delta({}, finish_reason)]))
    options = body.get('stream_options')
    if isinstance(options, dict) and options.get('include_usage') and usage is not None:
        events.append(chunk([], usage=usage))
    events.append('[DONE]')
    return events


def error_body(message: str, type_: str, code: str | None = None, param: str | None = None) -> dict:
    return {'error': {'message': message, 'type': type_, 'param': param, 'code': code}}


def echo_key(authorization: str) -> dict:
    """A 401 body that quotes the rejected credentials, as some servers and proxies do."""
    key = authorization.removeprefix('Bearer ').strip()
    message = f'Incorrect API key provided: {key}. The request sent the header Authorization: {authorization}'
    return error_body(message, 'invalid_request_error', 'invalid_api_key')


@functools.lru_cache(maxsize=1)
def _byte_level_decoder() -> dict[str, int]:
    """GPT-2 byte-level BPE: the printable character standing for each byte, inverted (character -> byte)."""
    keep = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    stand_ins = {byte: byte for byte in keep}
    for offset, byte in enumerate(b for b in range(256) if b not in stand_ins):
        stand_ins[byte] = 256 + offset
    return {chr(code): byte for byte, code in stand_ins.items()}


def llama_piece(tokenizer: Any, token_id: int) -> str | list[int]:
    """A token's text as llama.cpp's /tokenize with_pieces gives it: a string, or its bytes when not UTF-8."""
    spelled = tokenizer.convert_ids_to_tokens(token_id)
    decoder = _byte_level_decoder()
    data = bytes(decoder[c] for c in spelled) if all(c in decoder for c in spelled) else spelled.encode('utf-8')
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError:
        return list(data)
