"""A real router in front of local model replicas, and what each replica computed.

Used by the router test and ``benchmarks/bench_router.py``: several ``LocalModelServer`` replicas of the demo model
behind ``vllm-router`` (the ``test`` extra) with one of its policies, or behind sglang-router's ``manual`` policy
(``pip install sglang-router``), the run pointed at the router's URL. llama.cpp's Prometheus ``/metrics``
(``LocalModelServer(metrics=True)``) says how many prompt tokens each replica really computed.
"""

from __future__ import annotations

import atexit
import importlib.util
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO

from .prometheus import read_counters

__all__ = [
    'ROUTER_POLICIES',
    'SGLANG_MANUAL',
    'VLLM_POLICIES',
    'LocalRouter',
    'LocalRouterError',
    'prometheus_counters',
    'router_binary',
]

# vllm-router policies the benchmark compares: no affinity, its prefix tree, and a hash ring on our routing key;
# and sglang-router's sticky map of our routing key (X-SMG-Routing-Key), each new key given to the replica holding
# the fewest keys (--assignment-mode min_group), so equal groups spread evenly.
VLLM_POLICIES = ('round_robin', 'cache_aware', 'consistent_hash')
SGLANG_MANUAL = 'sglang_manual'
ROUTER_POLICIES = (*VLLM_POLICIES, SGLANG_MANUAL)
# Lines of router output quoted in a start-up error.
_ERROR_OUTPUT_LINES = 30


class LocalRouterError(RuntimeError):
    """The router is not installed or did not start."""


def router_binary() -> str:
    """The ``vllm-router`` executable: beside this Python first (a virtualenv's bin/), then on PATH."""
    beside = Path(sys.executable).parent / 'vllm-router'
    found = str(beside) if beside.is_file() else shutil.which('vllm-router')
    if not found:
        raise LocalRouterError("vllm-router is not installed: pip install 'evalscope-niah[test]' (or vllm-router)")
    return found


def _sglang_router_command() -> list[str]:
    if importlib.util.find_spec('sglang_router') is None:
        raise LocalRouterError('sglang-router is not installed: pip install sglang-router')
    return [sys.executable, '-m', 'sglang_router.launch_router', '--policy', 'manual', '--assignment-mode', 'min_group']


def _free_port() -> int:
    # vllm-router takes a port number, not 0: ask the OS for a free one. A race with another process binding it in
    # between shows as a start-up failure naming the port, never as a wrong server.
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class LocalRouter:
    """A router on ``127.0.0.1`` over ``worker_urls``: ``vllm-router --policy <policy>``, or for ``sglang_manual``
    sglang-router's ``manual`` policy with ``min_group``; a context manager.

    Failures are made quick to notice, so a test can kill a replica mid-run: the router checks worker health every
    ``health_check_interval_s`` and marks a worker unhealthy at the first failed check; it retries a failed request
    ``retries`` times. ``consistent_hash`` then moves a dead replica's keys to a healthy one.
    """

    def __init__(
        self,
        worker_urls: list[str],
        *,
        policy: str = 'consistent_hash',
        health_check_interval_s: int = 1,
        retries: int = 3,
        startup_timeout: float = 60.0,
    ) -> None:
        if not worker_urls:
            raise ValueError('worker_urls must name at least one replica')
        if policy not in ROUTER_POLICIES:
            raise ValueError(f'policy must be one of {ROUTER_POLICIES}, got {policy!r}')
        self.worker_urls = list(worker_urls)
        self.policy = policy
        self.health_check_interval_s = health_check_interval_s
        self.retries = retries
        self.startup_timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._address: str | None = None

    @property
    def root_url(self) -> str:
        if self._address is None:
            raise LocalRouterError('the router is not running')
        return self._address

    @property
    def base_url(self) -> str:
        """OpenAI-compatible base URL of the router: ``http://127.0.0.1:PORT/v1``."""
        return f'{self.root_url}/v1'

    def _command(self, port: int) -> list[str]:
        router = (
            _sglang_router_command() if self.policy == SGLANG_MANUAL else [router_binary(), '--policy', self.policy]
        )
        return [
            *router,
            '--host',
            '127.0.0.1',
            '--port',
            str(port),
            # The routers' own Prometheus exporter binds port 29000 unless told otherwise: two routers (or anything
            # else there) would collide, so it gets a free port of its own.
            '--prometheus-host',
            '127.0.0.1',
            '--prometheus-port',
            str(_free_port()),
            '--worker-urls',
            *self.worker_urls,
            '--health-check-interval-secs',
            str(self.health_check_interval_s),
            '--health-failure-threshold',
            '1',
            '--retry-max-retries',
            str(self.retries),
            '--log-level',
            'warn' if self.policy == SGLANG_MANUAL else 'warning',
        ]

    def start(self) -> LocalRouter:
        if self._proc is not None:
            return self
        port = _free_port()
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (lives until stop())
        atexit.register(self.stop)
        try:
            self._proc = subprocess.Popen(
                self._command(port), stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT
            )
            self._address = f'http://127.0.0.1:{port}'
            self._wait_healthy(time.perf_counter() + self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_healthy(self, deadline: float) -> None:
        # Ready is the router saying so: it answers /health once every worker passed its start-up check.
        last = 'no answer'
        while True:
            try:
                with urllib.request.urlopen(f'{self.root_url}/health', timeout=5) as reply:
                    if reply.status == 200:
                        return
            except urllib.error.HTTPError as exc:
                last = f'HTTP {exc.code}'
            except OSError as exc:
                last = repr(exc)
            if self._proc is not None and self._proc.poll() is not None:
                raise self._fail(f'exited with code {self._proc.returncode} while starting')
            if time.perf_counter() > deadline:
                raise self._fail(f'not healthy after {self.startup_timeout:.0f}s ({last})')
            time.sleep(0.1)

    def _fail(self, what: str) -> LocalRouterError:
        self._stop_process()
        output = '(no output)'
        if self._log is not None:
            self._log.seek(0)
            lines = self._log.read().decode('utf-8', 'replace').strip().splitlines()
            output = '\n'.join(lines[-_ERROR_OUTPUT_LINES:]) or output
        return LocalRouterError(f'router ({self.policy}) {what}. Output:\n{output}')

    def stop(self) -> None:
        """Stop the router (idempotent)."""
        atexit.unregister(self.stop)
        self._stop_process()
        if self._log is not None:
            self._log.close()
            self._log = None

    def _stop_process(self) -> None:
        proc, self._proc, self._address = self._proc, None, None
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def __enter__(self) -> LocalRouter:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f'LocalRouter({self.policy}, {len(self.worker_urls)} replicas, {self._address or "stopped"})'


def prometheus_counters(root_url: str, *, timeout: float = 10.0) -> dict[str, float]:
    """The counters of a server's Prometheus page (``GET {root_url}/metrics``), e.g. llama.cpp's
    ``llamacpp:prompt_tokens_total`` (prompt tokens computed) and ``llamacpp:prompt_tokens_cached_total``."""
    return read_counters(f'{root_url}/metrics', timeout=timeout)
