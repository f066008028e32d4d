"""A deadline for a whole HTTP request, and a stop that ends every request in flight (Ctrl-C).

httpx's timeouts bound each read, not the request: a server that sends one byte every few seconds, or stalls inside a
body longer than it declared, holds a request (and the worker thread waiting on it) for as long as it likes.
:func:`deadline_transport` wraps an httpx transport: a request not complete within its timeout (httpx's read timeout,
which the caller sets per call) is abandoned by shutting its socket down, and fails as the library's ``ReadTimeout``,
so the openai SDK and EvalScope retry or record it as they do any timeout. The openai SDK uses ``httpx2`` (httpx's
API under another name), other clients ``httpx``: the wrapper is built for the library of the transport it wraps.

:func:`stop_requests` (the Ctrl-C handler calls it) shuts down every request in flight and refuses new ones with
:class:`RequestsStopped`, a ``KeyboardInterrupt``: no retry loop catches it, so a worker thread blocked on a server
returns at once and the process can stop.

The same transport bounds each reply's size before anything parses it (:mod:`.reply_bounds`): at most
``max_reply_bytes`` of body, no compressed body, no more choices than asked for; a reply over its bound fails as the
library's ``RemoteProtocolError`` (the SDK retries it as a broken connection).
"""

from __future__ import annotations

import contextlib
import functools
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from .reply_bounds import DEFAULT_MAX_REPLY_BYTES, ReplyChoices, ReplyTooLarge

__all__ = ['DeadlineExceeded', 'RequestsStopped', 'allow_requests', 'deadline_transport', 'stop_requests']


class DeadlineExceeded(Exception):
    """The whole request took longer than its timeout (whatever the server sent meanwhile). Raised as a subclass of
    the transport library's ReadTimeout too."""


class RequestsStopped(KeyboardInterrupt):
    """The run is stopping (Ctrl-C): requests in flight were cut and no new one is sent."""


_stopped = threading.Event()
_active_lock = threading.Lock()
_active: set[_Watch] = set()


def stop_requests() -> None:
    """Cut every request in flight and refuse new ones until :func:`allow_requests`."""
    _stopped.set()
    with _active_lock:
        watches = list(_active)
    for watch in watches:
        watch.cut()


def allow_requests() -> None:
    """Requests may be sent again (a new run in the same process)."""
    _stopped.clear()


class _Watch:
    """One request's deadline: the sockets it uses, shut down when the deadline passes or the run stops."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def start(self) -> None:
        with _active_lock:
            _active.add(self)
        self._timer.start()

    def finish(self) -> None:
        self._timer.cancel()
        with _active_lock:
            _active.discard(self)

    def _expire(self) -> None:
        self.expired = True
        self.cut()
        with _active_lock:  # cut for good: a reply nobody closes leaves nothing behind
            _active.discard(self)

    def cut(self) -> None:
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)

    def add_stream(self, stream: Any) -> None:
        """The connection's socket (a new connection from the trace, a reused one from the response)."""
        get_extra_info = getattr(stream, 'get_extra_info', None)
        sock = get_extra_info('socket') if callable(get_extra_info) else None
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._sockets.append(sock)
        if self.expired or _stopped.is_set():  # the deadline passed while the connection was being made
            _shut(sock)

    def trace(self, chained: Callable[[str, dict], Any] | None) -> Callable[[str, dict], Any]:
        def trace(event: str, info: dict) -> Any:
            if event in ('connection.connect_tcp.complete', 'connection.connect_unix_socket.complete'):
                self.add_stream(info.get('return_value'))
            return chained(event, info) if chained is not None else None

        return trace


def _shut(sock: socket.socket) -> None:
    # shutdown, not close: it wakes a thread blocked reading the socket (close would leave it waiting).
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _deadline_of(request: Any) -> float | None:
    timeout = request.extensions.get('timeout') or {}
    seconds = timeout.get('read') if isinstance(timeout, dict) else None
    return float(seconds) if isinstance(seconds, (int, float)) and seconds > 0 else None


def deadline_transport(inner: Any, *, max_reply_bytes: int | None = None, max_choices: int = 1) -> Any:
    """``inner`` (an httpx or httpx2 transport) with a deadline per request (its read timeout bounds the whole
    request, body included) and a bound on each reply (``max_reply_bytes`` of body, default
    DEFAULT_MAX_REPLY_BYTES; ``max_choices`` in a JSON reply). A transport that has them already keeps its deadline,
    takes ``max_choices``, and ``max_reply_bytes`` when given (None: the one it has)."""
    if getattr(inner, 'has_deadline', False):
        inner.max_choices = max_choices
        if max_reply_bytes is not None:
            inner.max_reply_bytes = max_reply_bytes
        return inner
    library = sys.modules[type(inner).__module__.partition('.')[0]]
    cap = DEFAULT_MAX_REPLY_BYTES if max_reply_bytes is None else max_reply_bytes
    return _kinds(library).transport(inner, max_reply_bytes=cap, max_choices=max_choices)


class _Kinds:
    """The wrapper's classes for one library: its client checks the stream's class, the SDK the exception's."""

    def __init__(self, lib: ModuleType) -> None:
        self.exceeded: type[Exception] = type('DeadlineExceeded', (lib.ReadTimeout, DeadlineExceeded), {})
        self.too_large: type[Exception] = type('ReplyTooLarge', (lib.RemoteProtocolError, ReplyTooLarge), {})
        self.stream: type = type('DeadlineStream', (_Stream, lib.SyncByteStream), {'kinds': self})
        self.transport: type = type('DeadlineTransport', (_Transport, lib.BaseTransport), {'kinds': self})

    def failure(self, watch: _Watch | None) -> BaseException | None:
        """What to raise instead of a read error (a read cut by us), or None when the request is still in time."""
        if _stopped.is_set():
            return RequestsStopped('the run is stopping: request abandoned')
        if watch is not None and watch.expired:
            return self.exceeded(f'no complete reply within the {watch.seconds:g} s request timeout')
        return None


@functools.cache
def _kinds(lib: ModuleType) -> _Kinds:
    return _Kinds(lib)


class _Bound:
    """One reply's bounds: bytes read so far against the cap, and its choices counted as the client will parse the
    body (:class:`ReplyChoices`: a JSON body held whole and counted, whatever its declared type; events one by one)."""

    def __init__(self, kinds: _Kinds, response: Any, *, max_bytes: int, max_choices: int) -> None:
        self.kinds, self.max_bytes, self.max_choices = kinds, max_bytes, max_choices
        self.read = 0
        self.choices = ReplyChoices(max_choices)

    def refusal(self, response: Any) -> Exception | None:
        """Refused from the headers alone: a compressed body, or one declared over the cap."""
        encoding = response.headers.get('content-encoding', '').strip().lower()
        if encoding not in ('', 'identity'):
            return self.kinds.too_large(
                f'the server sent a {encoding!r}-compressed reply though the request asked for none: its size once '
                'decoded is unknown until it is decoded; refused unread (a server fault)'
            )
        declared = response.headers.get('content-length', '')
        if declared.strip().isdigit() and int(declared) > self.max_bytes:
            return self._over(f'declares {int(declared):,} bytes')
        return None

    def count(self, chunk: bytes) -> None:
        self.read += len(chunk)
        if self.read > self.max_bytes:
            raise self._over(f'went past {self.read:,} bytes')

    def passed_on(self, chunk: bytes) -> bytes:
        """What of ``chunk`` goes to the client now (nothing while a JSON body is held)."""
        self.count(chunk)
        passed, choices = self.choices.feed(chunk)
        self._check_choices(choices)
        return passed

    def rest(self) -> bytes:
        """At the body's end: what was held, once its choices are counted."""
        passed, choices = self.choices.finish()
        self._check_choices(choices)
        return passed

    def _check_choices(self, choices: int | None) -> None:
        if choices is not None:
            raise self.kinds.too_large(
                f'the reply holds {choices:,} choices, {self.max_choices} asked for; refused before parsing (a '
                'server fault)'
            )

    def _over(self, what: str) -> Exception:
        return self.kinds.too_large(
            f'the reply {what}, over max_reply_bytes ({self.max_bytes:,}); refused before parsing (a server fault)'
        )


class _Stream:
    kinds: _Kinds

    def __init__(self, inner: Any, watch: _Watch | None, bound: _Bound) -> None:
        self._inner = inner
        self._watch = watch
        self._bound = bound

    def __iter__(self) -> Iterator[bytes]:
        try:
            for chunk in self._inner:
                cut = self.kinds.failure(self._watch)
                if cut is not None:
                    raise cut
                passed = self._bound.passed_on(chunk)
                if passed:
                    yield passed
        except Exception as exc:
            cut = self.kinds.failure(self._watch)
            if cut is not None:
                raise cut from exc
            raise
        rest = self._bound.rest()
        if rest:
            yield rest

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            if self._watch is not None:
                self._watch.finish()


class _Transport:
    kinds: _Kinds
    has_deadline = True

    def __init__(self, inner: Any, *, max_reply_bytes: int, max_choices: int) -> None:
        self.inner = inner
        self.max_reply_bytes = max_reply_bytes
        self.max_choices = max_choices

    def handle_request(self, request: Any) -> Any:
        if _stopped.is_set():
            raise RequestsStopped('the run is stopping: request not sent')
        request.headers['Accept-Encoding'] = 'identity'  # a compressed body's decoded size could be anything
        seconds = _deadline_of(request)
        watch = None if seconds is None else _Watch(seconds)
        if watch is not None:
            request.extensions = {**request.extensions, 'trace': watch.trace(request.extensions.get('trace'))}
            watch.start()
        try:
            response = self.inner.handle_request(request)
        except Exception as exc:
            cut = self._finish(watch)
            if cut is not None:
                raise cut from exc
            raise
        except BaseException:
            self._finish(watch)
            raise
        if watch is not None:
            watch.add_stream(response.extensions.get('network_stream'))
        bound = _Bound(self.kinds, response, max_bytes=self.max_reply_bytes, max_choices=self.max_choices)
        cut = self.kinds.failure(watch) or bound.refusal(response)
        if cut is not None:
            response.close()
            self._finish(watch)
            raise cut
        response.stream = self.kinds.stream(response.stream, watch, bound)
        return response

    def _finish(self, watch: _Watch | None) -> BaseException | None:
        if watch is not None:
            watch.finish()
        return self.kinds.failure(watch)

    def close(self) -> None:
        self.inner.close()
