"""The test server's HTTP side: the threaded listener that can close every connection, and the request handler
(routes, the tokenize contracts, a chat request's path through checks, the picked fault and the reply, SSE).

The handler reads its state from the owning :class:`~.openai_server.OpenAICompatServer` (typed ``Any`` here: that
module imports this one, and a type-only import back would close a circle).
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from .faults import FaultPlan, Lies
from .huge_reply import send_huge
from .responders import Reply, Responder, message_text
from .wire import (
    RecordedRequest,
    approx_tokens,
    chat_completion,
    echo_key,
    error_body,
    llama_piece,
    reply_message,
    stream_events,
)

__all__ = ['HOST', 'BoundedHTTPServer']

HOST = '127.0.0.1'
_MAX_BODY_BYTES = 64 * 1024 * 1024


class BoundedHTTPServer(ThreadingHTTPServer):
    """The listener on 127.0.0.1: a daemon thread per connection, each tracked so ``close_connections`` can end them
    all (hung handlers included) when the server closes."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, owner: Any, port: int) -> None:
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
    server: BoundedHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # ---- helpers -------------------------------------------------------------------------

    @property
    def owner(self) -> Any:
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
        self._send_json(503, error_body('request limit reached', 'server_error', 'max_requests'))
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
            self._send_json(404, error_body(f'Unknown path {path}', 'invalid_request_error', 'not_found'))

    # ---- POST ----------------------------------------------------------------------------

    def _read_body(self) -> bytes | None:
        try:
            length = int(self.headers.get('Content-Length') or 0)
        except ValueError:
            length = -1
        if length < 0 or length > _MAX_BODY_BYTES:
            self.close_connection = True
            self._send_json(413, error_body('bad or too large Content-Length', 'invalid_request_error'))
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
                self._send_json(404, error_body(f'Unknown path {path}', 'invalid_request_error', 'not_found'))
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
            return sum(approx_tokens(message_text(m)) for m in messages)
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
            return self._send_json(400, error_body('request body is not a JSON object', 'invalid_request_error'))
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
                    return self._send_json(400, error_body('"messages" must be a list', 'invalid_request_error'))
                prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
                return self._send_json(200, {'prompt': prompt})
            content = body.get('content')
            if not isinstance(content, str):  # llama.cpp answers an empty list when there is no content
                return self._send_json(200, {'tokens': []})
            ids = tokenizer(content, add_special_tokens=bool(body.get('add_special')))['input_ids']
            if not body.get('with_pieces'):
                return self._send_json(200, {'tokens': ids[:-1] if lie == 'wrong_count' else ids})
            return self._send_json(200, {'tokens': [{'id': i, 'piece': llama_piece(tokenizer, i)} for i in ids]})
        if path != '/tokenize':
            return self._send_json(404, error_body(f'Unknown path {path}', 'invalid_request_error', 'not_found'))
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
            return self._send_json(400, error_body('"prompt" or "messages" is required', 'BadRequestError'))
        answer: dict[str, Any] = {'count': len(ids) + 7 * (lie == 'wrong_count'), 'tokens': ids, 'token_strs': None}
        if self.owner._window() is not None:
            answer['max_model_len'] = self.owner._window()
        if body.get('return_token_strs'):
            answer['token_strs'] = tokenizer.convert_ids_to_tokens(ids)
        return self._send_json(200, answer)

    def _chat(self, record: RecordedRequest, body: Any, stream: bool) -> None:
        """One chat request's path, in the order a real server takes it: checks, the picked fault, the reply."""
        responder = self._admit(record, body)
        if responder is None:
            return None
        number, fault, plan = self.owner._pick_fault(record.model, lambda: self._prompt_tokens(record.messages))
        record.fault = fault
        if self._fault_before_reply(record, fault, plan):
            return None
        drafted = self._draft_reply(record, responder, fault)
        if drafted is None:
            return None
        reply, extra, finish_reason = drafted
        usage = self._usage(record.messages, reply, extra)
        record.status = 200
        record.reply = reply
        completion_id, created, model = f'chatcmpl-{number:08d}', int(time.time()), record.model
        if stream:
            usage_sent = usage if self.owner.usage else None
            events = stream_events(
                body, completion_id, created, model, reply, finish_reason, usage_sent, fault, parts=extra
            )
            return self._send_sse(events)
        completion = chat_completion(completion_id, created, model, reply_message(reply, extra), finish_reason, usage)
        return self._send_completion(record, completion, fault, plan)

    def _reject(
        self, record: RecordedRequest, status: int, error: dict, headers: Mapping[str, str] | None = None
    ) -> None:
        record.status = status
        self._send_json(status, error, headers)

    def _admit(self, record: RecordedRequest, body: Any) -> Responder | None:
        """The request's responder, or None once the request is refused (over the limit, malformed, wrong key,
        unknown model) with the error a real server gives."""
        owner = self.owner
        if not owner._count_request() or owner._stopping.is_set():
            return self._reject(record, 503, error_body('request limit reached', 'server_error', 'max_requests'))
        if not isinstance(body, dict):
            return self._reject(record, 400, error_body('request body is not a JSON object', 'invalid_request_error'))
        model = record.model
        if model is None:
            return self._reject(record, 400, error_body('missing "model"', 'invalid_request_error', param='model'))
        if not isinstance(body.get('messages'), list) or not all(isinstance(m, dict) for m in body['messages']):
            error = error_body('"messages" must be a list of objects', 'invalid_request_error')
            return self._reject(record, 400, error)
        key = owner.api_keys.get(model)
        if key is not None and record.headers.get('authorization') != f'Bearer {key}':
            error = error_body('Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key')
            return self._reject(record, 401, error)
        responder = owner._responders.get(model)
        if responder is None:
            return self._reject(record, 404, owner._model_not_found(model))
        return responder

    def _fault_before_reply(self, record: RecordedRequest, fault: str | None, plan: FaultPlan | None) -> bool:
        """Play a fault that comes instead of any reply (an echoed key, HTTP 500/429, a hang, a dropped
        connection); False when the picked fault, if any, shapes the reply instead."""
        if plan is not None and plan.echo_key_status is not None:
            self._reject(record, plan.echo_key_status, echo_key(record.headers.get('authorization', '')))
        elif fault == 'http_500':
            self._reject(record, 500, error_body('Injected fault: http_500', 'server_error', 'injected_http_500'))
        elif fault == 'http_429':
            assert plan is not None
            seconds = plan.retry_after_seconds
            retry_after = str(int(seconds)) if float(seconds).is_integer() else str(seconds)
            error = error_body('Injected fault: rate limited', 'rate_limit_error', 'rate_limit_exceeded')
            self._reject(record, 429, error, {'Retry-After': retry_after})
        elif fault in ('hang', 'drop'):
            if fault == 'hang':
                assert plan is not None
                self.owner._stopping.wait(plan.hang_seconds)
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
        else:
            return False
        return True

    def _draft_reply(
        self, record: RecordedRequest, responder: Responder, fault: str | None
    ) -> tuple[str, Reply | None, str] | None:
        """The reply's text, what a :class:`Reply` adds, and its finish reason, as the picked fault shapes them;
        None once a failing responder was answered with HTTP 500."""
        extra: Reply | None = None
        if fault == 'empty_content':
            reply = ''
        else:
            try:
                answer = responder(record.messages)
            except Exception as exc:
                error = error_body(f'responder failed: {exc!r}', 'server_error', 'responder_error')
                return self._reject(record, 500, error)
            extra = answer if isinstance(answer, Reply) else None
            reply = (extra.content or '') if extra is not None else str(answer)
        finish_reason = 'tool_calls' if extra is not None and extra.tool_calls else 'stop'
        if fault == 'length':
            reply = reply[: max(1, len(reply) // 2)]
            finish_reason = 'length'
        return reply, extra, finish_reason

    def _usage(self, messages: list, reply: str, extra: Reply | None) -> dict[str, int]:
        usage = {
            'prompt_tokens': self._prompt_tokens(messages),
            'completion_tokens': approx_tokens(reply + ((extra.reasoning_content or '') if extra else '')),
        }
        usage['total_tokens'] = usage['prompt_tokens'] + usage['completion_tokens']
        return usage

    def _send_completion(
        self, record: RecordedRequest, completion: dict, fault: str | None, plan: FaultPlan | None
    ) -> None:
        """Send a non-streamed completion: as it is, as the configured lies, or as a fault that spoils the body."""
        owner = self.owner
        if owner.prompt_cache:
            owner._report_prompt_cache(completion, record.messages)
        if not owner.usage:
            del completion['usage']
        if owner._lies_now(record.model):
            return self._send_lies(completion, owner.lies)
        if fault == 'malformed_json':
            text = json.dumps(completion, ensure_ascii=False)
            return self._send_bytes(200, text[: len(text) // 2].encode('utf-8'), 'application/json')
        if fault in ('drip', 'long_body'):
            assert plan is not None
            return self._send_slowly(completion, plan, fault)
        if fault == 'huge_reply':
            assert plan is not None
            return send_huge(self, completion, plan)
        return self._send_json(200, completion)

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
        # Each field's whole JSON value (quotes included) goes in place of a marker of its own.
        fields = {f'\x00{name}\x00': raw for name, raw in lies.message_json.items()}
        choice['message'].update(zip(lies.message_json, fields, strict=True))
        body = json.dumps(completion, ensure_ascii=False).encode('utf-8')
        for field_marker, raw in fields.items():
            body = body.replace(json.dumps(field_marker).encode('ascii'), raw.encode('utf-8', 'surrogatepass'), 1)
        escaped = json.dumps(marker)[1:-1].encode('ascii')
        self._send_bytes(200, body.replace(escaped, lies.reply_tail, 1), 'application/json')
