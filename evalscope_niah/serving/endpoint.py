"""What the model server itself says: its context window, and its own tokenizer through its tokenize API.

Plain HTTP (httpx), no EvalScope. Two server families are understood:

- vLLM: ``GET /v1/models`` (``max_model_len`` in each model entry); ``POST /tokenize`` with ``{"model", "prompt"}``
  (-> ``{"count", "tokens", "max_model_len"}``, plus ``"token_strs"`` with ``return_token_strs``), or with
  ``{"model", "messages"}`` to apply the model's chat template first;
- llama.cpp: ``GET /props`` (``default_generation_settings.n_ctx`` or ``n_ctx``); ``POST /tokenize`` with
  ``{"content", "with_pieces"}`` (-> ``{"tokens": [{"id", "piece"}]}``, a piece being text or a list of bytes);
  ``POST /apply-template`` with ``{"messages"}`` (-> ``{"prompt"}``).

``api_url`` is what a run sends chat requests to, usually ending in ``/v1``; these routes live at the server root.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import httpx
import numpy as np

from ..errors import NiahConfigError
from ..escaping import inert_logger
from ..vocabulary import served_tokenizer_name
from .redact import Redactor
from .server_values import plausible_tokens, shown, trusted_window
from .token_bytes import boundaries_from_byte_lengths

logger = inert_logger(__name__)

Message = dict[str, str]

# A tokenize call answers in well under a second; a server silent or trickling this long is not answering.
TOKENIZE_TIMEOUT_S = 60.0
# Answers are read up to this size: a tokenize reply for a 32k-character chunk with pieces is well under 2 MB.
MAX_RESPONSE_BYTES = 32 * 1024 * 1024
# Tokenized once when a ServerTokenizer starts: its tokens key the on-disk caches, so they identify the tokenizer
# (several scripts, digits, whitespace runs, an emoji, a character outside the BMP).
_PROBE_TEXT = 'Probe: Hello, world!  Café 1971 3.14\n\n\t你好，世界。「谁？」🙂 𠀀 naïve'
_PROBE_MESSAGES = [{'role': 'system', 'content': 'S.'}, {'role': 'user', 'content': _PROBE_TEXT}]
_ALTERNATIVES = (
    "pass tokenizer_path as a local tokenizer directory or a model id (e.g. 'Qwen/Qwen3-0.6B'), or as "
    "'tiktoken:<encoding>' (e.g. 'tiktoken:cl100k_base')"
)


class EndpointError(NiahConfigError):
    """The server answered a tokenize call badly after it had been detected as working (status, shape, counts that
    disagree): ``tokenizer_path`` 'server' cannot be trusted with it."""

    def __init__(self, message: str) -> None:
        super().__init__('tokenizer_path', message)


def server_root(api_url: str) -> str:
    """``http://host:port`` (plus any path prefix) from a run's ``api_url``: ``/v1`` and a chat path removed."""
    root = api_url.strip().rstrip('/')
    for suffix in ('/chat/completions', '/completions', '/v1'):
        if root.endswith(suffix):
            root = root[: -len(suffix)]
    return root


def _headers(api_key: str | None) -> dict[str, str]:
    return {'Authorization': f'Bearer {api_key}'} if api_key else {}


def _send(client: httpx.Client, method: str, url: str, body: Any = None, *, deadline_s: float) -> tuple[int, Any]:
    """(status, parsed JSON or None); the body is read up to MAX_RESPONSE_BYTES and for at most ``deadline_s``
    seconds in all (httpx's timeout bounds each read, not a server that trickles a byte at a time). Network errors
    propagate; a reply too large or too slow is an EndpointError."""
    deadline = time.monotonic() + deadline_s
    with client.stream(method, url, json=body) as response:
        data = bytearray()
        for piece in response.iter_bytes():
            data += piece
            if len(data) > MAX_RESPONSE_BYTES:
                raise EndpointError(f'{method} {url} answered more than {MAX_RESPONSE_BYTES} bytes')
            if time.monotonic() > deadline:
                raise EndpointError(f'{method} {url} took more than {deadline_s:g} s to answer')
        try:
            return response.status_code, json.loads(bytes(data))
        except ValueError:  # not JSON, or not UTF-8 (UnicodeDecodeError is a ValueError)
            return response.status_code, None


# ---- the context window --------------------------------------------------------------------------------------


def probe_context_window(api_url: str, *, model: str, api_key: str | None = None, timeout: float = 5) -> int | None:
    """The server's context window in tokens for ``model``, or None when the server does not say.

    Asks vLLM's ``GET /v1/models`` (``max_model_len`` of the entry whose ``id`` or ``root`` is ``model``, or of
    the only entry), then llama.cpp's ``GET /props``. An unreachable server, an error status or an answer without
    a window is not saying (logged at debug level); a window that is there but is no plausible token count raises
    NiahConfigError (``server_values.trusted_window``).
    """
    root = server_root(api_url)
    for url, read in ((f'{root}/v1/models', _window_of_models), (f'{root}/props', _window_of_props)):
        body = _probe_json(url, api_key=api_key, timeout=timeout)
        field, value = read(body, model) if body is not None else ('', None)
        logger.debug('context window probe %s: %s = %s', url, field, shown(value))
        window = trusted_window(value, source=f'the model server: GET {url} ({field})')
        if window is not None:
            return window
    return None


def _probe_json(url: str, *, api_key: str | None, timeout: float) -> Any:
    """The JSON a 200 answer to ``GET url`` holds, or None (the probe is advisory: nothing here raises)."""
    try:
        with httpx.Client(timeout=timeout, headers=_headers(api_key)) as client:
            status, body = _send(client, 'GET', url, deadline_s=timeout)
    except Exception as exc:  # a bad URL, a refused connection, a reply too large or too slow
        logger.debug('context window probe %s failed: %r', url, exc)
        return None
    return body if status == 200 else None


def _window_of_models(body: Any, model: str) -> tuple[str, Any]:
    """(where the window was read, what it said) from vLLM's model list; the value is None when absent."""
    entries = body.get('data') if isinstance(body, dict) else None
    if not isinstance(entries, list):
        return '', None
    entries = [entry for entry in entries if isinstance(entry, dict)]
    named = [entry for entry in entries if model in (entry.get('id'), entry.get('root'))]
    chosen = named or (entries if len(entries) == 1 else [])
    if not chosen:
        return '', None
    return f'max_model_len of model {shown(chosen[0].get("id"))}', chosen[0].get('max_model_len')


def _window_of_props(body: Any, model: str) -> tuple[str, Any]:
    """(where the window was read, what it said) from llama.cpp's /props; the value is None when absent."""
    if not isinstance(body, dict):
        return '', None
    settings = body.get('default_generation_settings')
    nested = settings.get('n_ctx') if isinstance(settings, dict) else None
    if nested is not None:
        return 'default_generation_settings.n_ctx', nested
    return 'n_ctx', body.get('n_ctx')


# ---- one chat counted by the server ---------------------------------------------------------------------------

# (server root, model, sha256 of the messages) -> the server's count: the window check asks once per prompt per
# process, however many benchmark names or runs of one process ask again.
_CHAT_COUNTS: dict[tuple[str, str, str], int] = {}
_CHAT_COUNTS_LOCK = threading.Lock()
_MAX_CHAT_COUNTS = 256
_CHAT_FLAVORS: dict[str, str] = {}  # server root -> LLAMA_CPP once its form answered (a few roots per process)


def count_chat_tokens(
    api_url: str, *, model: str, messages: Sequence[Message], api_key: str | None = None, timeout: float = 60
) -> int | None:
    """The tokens the server's own tokenizer gives ``messages`` with its chat template (what it bills as the
    prompt), or None when the server has no tokenize API that answers.

    vLLM (and servers answering its form): ``POST /tokenize`` with the messages, one call; llama.cpp:
    ``POST /apply-template`` then ``POST /tokenize``, two calls. Advisory: a network error, an error status or an
    answer of another shape is not counting (logged at debug level); nothing here raises.
    """
    root = server_root(api_url)
    key = (root, model, hashlib.sha256(json.dumps(list(messages), sort_keys=True).encode()).hexdigest())
    with _CHAT_COUNTS_LOCK:
        if key in _CHAT_COUNTS:
            return _CHAT_COUNTS[key]
    try:
        with httpx.Client(timeout=timeout, headers=_headers(api_key)) as client:
            count = _count_chat(client, root, model, list(messages), deadline_s=timeout)
    except Exception as exc:  # a refused connection, a reply too large or too slow
        logger.debug('counting a chat at %s failed: %r', root, exc)
        return None
    if count is not None:
        with _CHAT_COUNTS_LOCK:
            if len(_CHAT_COUNTS) >= _MAX_CHAT_COUNTS:
                _CHAT_COUNTS.pop(next(iter(_CHAT_COUNTS)))
            _CHAT_COUNTS[key] = count
    return count


def _count_chat(
    client: httpx.Client, root: str, model: str, messages: list[Message], *, deadline_s: float
) -> int | None:
    forms = (_count_chat_vllm, _count_chat_llama_cpp)
    for count_in in reversed(forms) if _CHAT_FLAVORS.get(root) == LLAMA_CPP else forms:
        count = count_in(client, root, model, messages, deadline_s=deadline_s)
        if count is not None:
            return count
    logger.debug("%s counts no chat: neither vLLM's /tokenize nor llama.cpp's /apply-template answered", root)
    return None


def _count_chat_vllm(
    client: httpx.Client, root: str, model: str, messages: list[Message], *, deadline_s: float
) -> int | None:
    body = {'model': model, 'messages': messages, 'add_generation_prompt': True, 'add_special_tokens': False}
    status, answer = _send(client, 'POST', f'{root}/tokenize', body, deadline_s=deadline_s)
    if status != 200 or not isinstance(answer, dict):
        return None
    count = _count_of(answer.get('tokens'))
    return count if count is not None and answer.get('count') == count else None  # two counts that disagree: none


def _count_chat_llama_cpp(
    client: httpx.Client, root: str, model: str, messages: list[Message], *, deadline_s: float
) -> int | None:
    status, answer = _send(client, 'POST', f'{root}/apply-template', {'messages': messages}, deadline_s=deadline_s)
    prompt = answer.get('prompt') if isinstance(answer, dict) else None
    if status != 200 or not isinstance(prompt, str):
        return None
    status, answer = _send(client, 'POST', f'{root}/tokenize', {'content': prompt}, deadline_s=deadline_s)
    tokens = answer.get('tokens') if isinstance(answer, dict) else None
    count = _count_of(tokens) if status == 200 else None
    if count is not None:
        _CHAT_FLAVORS[root] = LLAMA_CPP  # its next count skips vLLM's form
    return count


def _count_of(tokens: Any) -> int | None:
    """The number of token ids in a tokenize answer; None when it is not a list of ids (a server that says
    nonsense does not get to let a prompt through)."""
    if not isinstance(tokens, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        return None
    return plausible_tokens(len(tokens), minimum=1)


# ---- the server's tokenizer ----------------------------------------------------------------------------------

VLLM = 'vllm'
LLAMA_CPP = 'llama.cpp'


class ServerTokenizer:
    """The ``Tokenizer`` protocol answered by the model server's own tokenize API (vLLM or llama.cpp).

    Counts are then the server's own, chat template included. Every HTTP request is counted in ``calls`` (read it
    to report what building a grid cost); ``context_window`` is the window vLLM reports with each tokenize answer
    (None for llama.cpp: see ``probe_context_window``). Thread-safe: one pooled httpx client, a locked counter.
    """

    chat_template = None  # rendered by the server, never locally

    def __init__(self, api_url: str, *, model: str, api_key: str | None = None, timeout: float | None = None) -> None:
        self.api_url = api_url
        self.model = model
        self.root = server_root(api_url)
        self.name = served_tokenizer_name(model)
        self.calls = 0
        self.context_window: int | None = None
        self.timeout = TOKENIZE_TIMEOUT_S if timeout is None else timeout
        self._calls_lock = threading.Lock()
        self._client = httpx.Client(timeout=self.timeout, headers=_headers(api_key))
        self._redactor = Redactor([api_key])  # an error answer may quote the key back: it is shown redacted
        self.flavor = self._detect()
        self._check_counts_agree()
        identity = {
            'flavor': self.flavor,
            'model': model,
            'probe': self.encode(_PROBE_TEXT),
            'chat': self.render_chat(_PROBE_MESSAGES),
        }
        self.fingerprint = 'server-' + hashlib.sha256(json.dumps(identity).encode()).hexdigest()

    def __repr__(self) -> str:
        return f'<ServerTokenizer {self.flavor} {self.model!r} at {self.root} calls={self.calls}>'

    def close(self) -> None:
        self._client.close()

    # ---- HTTP --------------------------------------------------------------------------------------------------

    def _post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        with self._calls_lock:
            self.calls += 1
        return _send(self._client, 'POST', self.root + path, body, deadline_s=self.timeout)

    def _detect(self) -> str:
        """Which tokenize API answers: vLLM's form first, then llama.cpp's; neither is a configuration error."""
        tried = []
        for flavor, body in (
            (VLLM, self._vllm_body(prompt=_PROBE_TEXT, strings=True)),
            (LLAMA_CPP, {'content': _PROBE_TEXT, 'with_pieces': True}),
        ):
            try:
                status, answer = self._post('/tokenize', body)
            except httpx.TimeoutException:
                tried.append(f'{flavor}: no answer within {self.timeout:g} s')
                continue
            except (httpx.HTTPError, EndpointError) as exc:
                tried.append(f'{flavor}: {type(exc).__name__}')
                continue
            if status == 200 and flavor == VLLM and isinstance(answer, dict) and 'count' in answer:
                self.context_window = plausible_tokens(answer.get('max_model_len'), minimum=1)
                return flavor
            tokens = answer.get('tokens') if isinstance(answer, dict) else None
            if status == 200 and flavor == LLAMA_CPP and tokens and all(isinstance(t, dict) for t in tokens):
                return flavor
            tried.append(f'{flavor}: HTTP {status}')
        raise NiahConfigError(
            'tokenizer_path',
            f"'server' needs the model server's tokenize API, and {self.root} has none (POST /tokenize in vLLM's "
            f"and llama.cpp's forms: {'; '.join(tried)}); {_ALTERNATIVES}",
        )

    def _check_counts_agree(self) -> None:
        """Lengths are cut by token pieces and counted by token ids: a server whose two answers disagree on the
        same text would make every length wrong, so it is refused before any sample is built."""
        ids, pieces = len(self.encode(_PROBE_TEXT)), len(self._token_bytes(_PROBE_TEXT))
        counted = self.count(_PROBE_TEXT)
        if not ids == pieces == counted:
            raise EndpointError(
                f'POST {self.root}/tokenize gives the same text {ids} token ids, {pieces} token pieces and a count of '
                f'{counted}: its counts cannot be trusted'
            )

    def _vllm_body(self, *, prompt: str | None = None, messages: Sequence[Message] | None = None, strings=False):
        body: dict[str, Any] = {'model': self.model, 'add_special_tokens': False}
        if messages is not None:
            body.update(messages=list(messages), add_generation_prompt=True)
        else:
            body['prompt'] = prompt
        if strings:
            body['return_token_strs'] = True
        return body

    def _tokenize(self, body: dict[str, Any]) -> dict[str, Any]:
        status, answer = self._post('/tokenize', body)
        if status != 200 or not isinstance(answer, dict) or not isinstance(answer.get('tokens'), list):
            detail = answer.get('error') if isinstance(answer, dict) else answer
            detail = self._redactor.text(str(detail))[:300]
            raise EndpointError(f'POST {self.root}/tokenize answered HTTP {status}: {detail}')
        if self.flavor == VLLM:
            self.context_window = plausible_tokens(answer.get('max_model_len'), minimum=1) or self.context_window
        return answer

    # ---- the Tokenizer protocol --------------------------------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        body = self._vllm_body(prompt=text) if self.flavor == VLLM else {'content': text}
        return self._token_ids(self._tokenize(body))

    def count(self, text: str) -> int:
        if self.flavor == VLLM:
            answer = self._tokenize(self._vllm_body(prompt=text))
            tokens = self._token_ids(answer)
            count = answer.get('count', len(tokens))
            if count != len(tokens) or isinstance(count, bool):
                raise EndpointError(
                    f'POST {self.root}/tokenize answered count {shown(count)} with {len(tokens)} tokens: its counts '
                    'cannot be trusted'
                )
            return len(tokens)
        return len(self._token_ids(self._tokenize({'content': text})))

    def _token_ids(self, answer: dict[str, Any]) -> list[int]:
        tokens = answer['tokens']
        for token in tokens:
            if not isinstance(token, int) or isinstance(token, bool) or token < 0:
                raise EndpointError(f'POST {self.root}/tokenize answered {shown(token)} where a token id belongs')
        return tokens

    def boundaries(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        return boundaries_from_byte_lengths(text, [len(piece) for piece in self._token_bytes(text)])

    def boundaries_many(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        return [self.boundaries(text) for text in texts]

    def render_chat(self, messages: Sequence[Message]) -> str:
        if self.flavor == VLLM:
            answer = self._tokenize(self._vllm_body(messages=messages, strings=True))
            return b''.join(_decode_token_strings(answer.get('token_strs'), expected=None)).decode('utf-8')
        status, answer = self._post('/apply-template', {'messages': list(messages)})
        if status != 200 or not isinstance(answer, dict) or not isinstance(answer.get('prompt'), str):
            raise EndpointError(f'POST {self.root}/apply-template answered HTTP {status}')
        return answer['prompt']

    def _token_bytes(self, text: str) -> list[bytes]:
        """Each token's bytes; they add up to ``text`` exactly, or the server's pieces cannot place tokens."""
        expected = text.encode('utf-8')
        if self.flavor == VLLM:
            answer = self._tokenize(self._vllm_body(prompt=text, strings=True))
            return _decode_token_strings(answer.get('token_strs'), expected=expected)
        answer = self._tokenize({'content': text, 'with_pieces': True})
        pieces = [_piece_bytes(token) for token in answer['tokens']]
        if b''.join(pieces) != expected:
            raise EndpointError(f'the token pieces of {self.root}/tokenize do not spell the text they tokenized')
        return pieces


def _piece_bytes(token: Any) -> bytes:
    piece = token.get('piece') if isinstance(token, dict) else None
    if isinstance(piece, str):
        return piece.encode('utf-8')
    if isinstance(piece, list) and all(isinstance(value, int) and 0 <= value < 256 for value in piece):
        return bytes(piece)
    raise EndpointError(f'a llama.cpp token without a usable piece: {str(token)[:100]}')


@lru_cache(maxsize=1)
def _byte_level_alphabet() -> dict[str, int]:
    """GPT-2's byte-level BPE alphabet (printable stand-ins for the 256 bytes), character -> byte."""
    printable = [*range(ord('!'), ord('~') + 1), *range(ord('¡'), ord('¬') + 1), *range(ord('®'), ord('ÿ') + 1)]
    codes, extra = [], 0
    for byte in range(256):
        if byte in printable:
            codes.append(byte)
        else:
            codes.append(256 + extra)
            extra += 1
    return {chr(code): byte for byte, code in zip(range(256), codes, strict=True)}


def _decode_token_strings(strings: Any, *, expected: bytes | None) -> list[bytes]:
    """Token strings as vLLM returns them (the vocabulary's own spelling) -> each token's bytes.

    Byte-level BPE (GPT-2, Qwen, Llama 3) and SentencePiece ('▁' for a space, '<0xNN>' byte tokens) spellings are
    tried in turn; with ``expected`` the first that spells it exactly wins, without it the first valid UTF-8.
    """
    if not isinstance(strings, list) or not all(isinstance(item, str) for item in strings):
        raise EndpointError('the tokenize answer has no token_strs (vLLM older than 0.8?)')
    decoders = (_byte_level_bytes, _sentencepiece_bytes, lambda item: item.encode('utf-8'))
    for decode in decoders:
        try:
            pieces = [decode(item) for item in strings]
        except KeyError:
            continue
        joined = b''.join(pieces)
        if joined == expected or (expected is None and _is_utf8(joined)):
            return pieces
    raise EndpointError('the token strings of the tokenize answer do not spell the text (unknown vocabulary)')


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode('utf-8')
    except UnicodeDecodeError:
        return False
    return True


def _byte_level_bytes(item: str) -> bytes:
    alphabet = _byte_level_alphabet()
    return bytes(alphabet[character] for character in item)  # KeyError: not a byte-level spelling


def _sentencepiece_bytes(item: str) -> bytes:
    if len(item) == 6 and item.startswith('<0x') and item.endswith('>'):
        try:
            return bytes([int(item[3:5], 16)])
        except ValueError:
            pass
    return item.replace('\u2581', ' ').encode('utf-8')
