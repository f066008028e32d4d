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

This module is the server's public face (its state, bounds and recordings, and the names the tests import); the
parts live beside it: :mod:`.handler` (HTTP routes and a request's path), :mod:`.faults` (:class:`FaultPlan`,
:class:`Lies`), :mod:`.responders` (the ready-made models and judge prompt parsing) and :mod:`.wire` (the
recorded request and the OpenAI-shaped bodies).

The server is bounded so a test can never run away: after ``max_requests`` requests it answers
503, and a watchdog shuts it down after ``max_seconds``.

Manual use::

    python -m evalscope_niah.testing.openai_server --port 0 --model needle-finder
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from .faults import FAULT_KINDS, FaultPlan, Lies
from .handler import BoundedHTTPServer
from .responders import (
    JUDGE_FIELDS,
    Reply,
    Responder,
    make_judge_responder,
    message_text,
    needle_finder,
    overlap_grader,
    parse_judge_prompt,
    reasoning_only,
    tool_call_only,
)
from .wire import RecordedRequest, error_body, prompt_text

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


class OpenAICompatServer:
    """An OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

    Args:
        responders: model name -> function from the request's messages to the reply text.
        faults: model name -> :class:`FaultPlan`; the key ``'*'`` applies to models not listed.
        seed: seed for the fault picks (each model gets its own ``random.Random``).
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
        self._lie_counts: dict[str, int] = {}
        self._fault_counts: dict[str, int] = dict.fromkeys(FAULT_KINDS, 0)
        self._start(port)

    def _start(self, port: int) -> None:
        """Bind 127.0.0.1, then serve and watch the time bound in daemon threads."""
        self._httpd = BoundedHTTPServer(self, port)
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
        cached = round(prompt_tokens * self._reuse_prompt_prefix(prompt_text(messages)))
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

    def _pick_fault(
        self, model: str, prompt_tokens: Callable[[], int] | None = None
    ) -> tuple[int, str | None, FaultPlan | None]:
        """The request's number, its fault (None: none) and the model's plan; ``prompt_tokens`` counts the prompt
        when the plan has an outage by length."""
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
            if plan.outage_prompt_tokens is not None and prompt_tokens is not None:
                low, high = plan.outage_prompt_tokens
                if low <= prompt_tokens() < high:
                    fault = 'http_500'
            if fault is not None:
                self._fault_counts[fault] += 1
            return number, fault, plan

    def _lies_now(self, model: str) -> bool:
        """Whether this chat reply to ``model`` lies: ``lies.every`` spaces the lies out per model."""
        if not self.lies.lies_for(model):
            return False
        with self._lock:
            index = self._lie_counts.get(model, 0)
            self._lie_counts[model] = index + 1
        return index % self.lies.every == self.lies.every - 1

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
        return error_body(f'The model `{name}` does not exist.', 'invalid_request_error', 'model_not_found', 'model')


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
