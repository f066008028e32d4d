"""Deadlines on EvalScope's model clients, and a Ctrl-C that stops a run within seconds.

EvalScope's OpenAI-compatible model keeps one openai client (one httpx client) per model; :func:`install_deadline`
wraps its transports with ``deadline.deadline_transport``, so the per-call timeout the adapter sets bounds each whole
request, and ``max_reply_bytes`` each reply's size before the SDK parses it. On Ctrl-C EvalScope's pool waits for its
worker threads, and a worker blocked on a dripping server kept the process alive for minutes:
:func:`stop_on_interrupt` cuts every request in flight first, then lets the KeyboardInterrupt unwind the run.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..serving.deadline import allow_requests, deadline_transport, stop_requests

__all__ = ['exit_interrupted', 'install_deadline', 'interrupted_message', 'stop_on_interrupt']

_install_lock = threading.Lock()


def install_deadline(model: Any, *, max_reply_bytes: int | None = None) -> bool:
    """Give every request of ``model`` (an EvalScope Model, or its API) a deadline, and each reply a bound (at most
    ``max_reply_bytes`` of body, as many choices as its config's ``n``); True when its client has them.
    ``max_reply_bytes`` None: the bound the client has, else DEFAULT_MAX_REPLY_BYTES.

    Models without an httpx client of their own (a local checkpoint, a mock) are left as they are.
    """
    config = getattr(model, 'config', None)
    n = getattr(config, 'n', None)
    bounds = {'max_reply_bytes': max_reply_bytes, 'max_choices': n if isinstance(n, int) and n > 1 else 1}
    api = getattr(model, 'api', model)
    http = getattr(getattr(api, 'client', None), '_client', None)  # the openai SDK's httpx2 (or httpx) client
    transport = getattr(http, '_transport', None)
    if not callable(getattr(transport, 'handle_request', None)):
        return False
    with _install_lock:
        http._transport = deadline_transport(http._transport, **bounds)
        mounts = getattr(http, '_mounts', None)
        if isinstance(mounts, dict):  # proxies (HTTPS_PROXY...) route through their own transports
            for pattern, mounted in mounts.items():
                if mounted is not None:
                    mounts[pattern] = deadline_transport(mounted, **bounds)
    return True


@contextmanager
def stop_on_interrupt() -> Iterator[None]:
    """While the block runs (in the main thread), the first Ctrl-C cuts every request, then raises
    KeyboardInterrupt as usual; a second one is Python's own. Elsewhere (a worker thread) only requests are allowed.
    Requests are allowed again when the block ends (EvalScope's pools have joined their workers by then): a later
    run in the same process, or another client, is not refused."""
    allow_requests()
    try:
        with _handling_sigint():
            yield
    finally:
        allow_requests()


@contextmanager
def _handling_sigint() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.default_int_handler:  # the user's own handler (or SIG_IGN) stays in charge
        yield
        return

    def on_interrupt(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGINT, previous)
        stop_requests()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is on_interrupt:
            signal.signal(signal.SIGINT, previous)


def interrupted_message(work_dir: str) -> str:
    """The one line printed when Ctrl-C stopped a run."""
    return (
        f'needle_haystack: interrupted; finished answers are kept in {work_dir}. '
        f'Resume with --use-cache {work_dir} (use_cache in a TaskConfig)'
    )


def exit_interrupted(work_dir: str) -> None:
    """Print the one line, then leave with status 130 (128 + SIGINT) and no traceback."""
    print(interrupted_message(work_dir), file=sys.stderr, flush=True)
    raise SystemExit(130)
