"""Scale: 1M-token prompts, 10 lengths x 10 depths (100k..1M tokens, English), ours vs EvalScope 1.14.1's built-in.

    python benchmarks/bench_scale.py [--corpus ../shared/corpus] [--cap SECONDS] [--no-runs] [--json FILE] [--quick]

The English corpus (~150k Qwen3 tokens) is repeated by each side as far as the longest prompt needs. Each
measurement is a fresh subprocess (peak RSS from os.wait4; killed at --cap seconds and reported as not finished):

* ours, streaming: ``iter_samples`` over all 100 cells, each prompt built in full and dropped after use;
* ours / the built-in in EvalScope: the adapter ``run_task`` creates, ``load_dataset()`` (load + prompt formatting:
  what the evaluator calls first), then every sample's messages read as the evaluator would send them;
* ours / the built-in, whole ``run_task`` (unless --no-runs): EvalScope's mock model (no server: the prompt is
  built and serialised, the reply is canned), rule scoring, 8 samples in flight, predictions and reviews written.

``held MB`` is the resident memory still in use after load and walk, less what the process held before: the
in-memory dataset EvalScope keeps for the whole run. From it, the prompt tokens this machine's RAM can hold.
An untimed check recounts one 1M-token prompt with transformers' ``apply_chat_template``.

The load measurements score by rule (``judge={'strategy': 'rule'}``, as the runs do): they make no model or judge
request, and without it our adapter's judge check would ask EvalScope for an LLM judge that is not configured.
``--quick`` runs a 2 x 2 grid of 1-2k tokens on the shipped demo corpus (seconds): it checks that the script still
runs, its figures mean nothing. Without seaborn (the ``bench`` extra) the built-in side is skipped with a note.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    BUILTIN_MODULE,
    BUILTIN_SKIPPED,
    DEFAULT_CORPUS,
    OURS_MODULE,
    QUICK_HELP,
    builtin_runs,
    by_name,
    check_corpus,
    child_env,
    dir_bytes,
    format_table,
    machine,
    measure,
    proc_status_mb,
    quick_corpus,
    shipped_tokenizer_dir,
    verdict,
    write_json_report,
    write_record,
)

SUBSET = 'english'
GRID = {
    'context_lengths_min': 100_000,
    'context_lengths_max': 1_000_000,
    'context_lengths_num_intervals': 10,
    'document_depth_percent_intervals': 10,
}
QUICK_GRID = {
    'context_lengths_min': 1000,
    'context_lengths_max': 2000,
    'context_lengths_num_intervals': 2,
    'document_depth_percent_intervals': 2,
}
RUN_WORKERS = 8  # EvalScope's eval_batch_size for API models
SPEEDUP_GOAL, MEMORY_GOAL = 10.0, 0.5  # item 1's goals, applied at this scale
DEFAULT_CAP_S = 240.0
# kind -> (row label, the kind it is compared with)
MEASUREMENTS: dict[str, tuple[str, str | None]] = {
    'stream': ('ours: iter_samples, streaming', 'builtin-load'),
    'ours-load': ('ours: load_dataset() + walk', 'builtin-load'),
    'builtin-load': ('built-in: load_dataset() + walk', None),
    'ours-run': (f'ours: run_task, mock model, {RUN_WORKERS} in flight', 'builtin-run'),
    'builtin-run': (f'built-in: run_task, mock model, {RUN_WORKERS} in flight', None),
}


# ---- children ----------------------------------------------------------------------------------------------------


def child_stream(corpus: Path, tokenizer_dir: str, work_dir: Path, grid: dict[str, int]) -> dict[str, Any]:
    from evalscope_niah.making.samples import iter_samples
    from evalscope_niah.tasks.compose import parse_params

    params = parse_params(grid)
    before = proc_status_mb('VmRSS')
    start = time.perf_counter()
    count = chars = tokens = 0
    first = None
    for sample in iter_samples(params, corpus_dir=corpus, subsets=[SUBSET]):
        if sample.prompt_tokens != sample.context_length:
            raise SystemExit(f'{sample.context_length}: prompt has {sample.prompt_tokens} tokens')
        count += 1
        chars += len(sample.system_prompt) + len(sample.user_prompt)
        tokens += sample.prompt_tokens
        first = first or time.perf_counter() - start
        del sample  # dropped after use, as a streaming consumer would
    return {
        'samples': count,
        'chars': chars,
        'prompt_tokens': tokens,
        'load_seconds': time.perf_counter() - start,
        'first_sample_seconds': first,
        'rss_before_mb': before,
        'rss_after_mb': proc_status_mb('VmRSS'),
    }


def _config(side: str, corpus: Path, tokenizer_dir: str, grid: dict[str, int], **settings: Any) -> Any:
    if side == 'builtin' and 'evalscope_niah' in sys.modules:
        raise SystemExit('evalscope_niah was imported, so the built-in is replaced: set EVALSCOPE_NIAH_AUTOLOAD=0')
    from evalscope.api.registry import BENCHMARK_REGISTRY
    from evalscope.config import TaskConfig

    module = BENCHMARK_REGISTRY['needle_haystack'].data_adapter.__module__
    expected = OURS_MODULE if side == 'ours' else BUILTIN_MODULE
    if module != expected:
        raise SystemExit(f'needle_haystack is {module}, expected {expected}')
    extra = dict(grid)
    if side == 'builtin':
        extra['tokenizer_path'] = tokenizer_dir  # else it downloads Qwen/Qwen3-0.6B from modelscope.cn
    dataset_args = {'local_path': str(corpus), 'subset_list': [SUBSET], 'extra_params': extra}
    return TaskConfig(datasets=['needle_haystack'], dataset_args={'needle_haystack': dataset_args}, **settings)


def child_load(side: str, corpus: Path, tokenizer_dir: str, work_dir: Path, grid: dict[str, int]) -> dict[str, Any]:
    # Rule scoring: loading sends nothing, and ours would otherwise check a judge that is not configured.
    config = _config(side, corpus, tokenizer_dir, grid, model='dummy', judge={'strategy': 'rule'})
    from evalscope.api.registry import get_benchmark

    adapter = get_benchmark('needle_haystack', config)
    before = proc_status_mb('VmRSS')
    start = time.perf_counter()
    datasets = adapter.load_dataset()  # what DefaultEvaluator.eval() calls first
    load_seconds = time.perf_counter() - start
    after_load = proc_status_mb('VmRSS')
    count = chars = 0
    for dataset in datasets.values():
        for sample in dataset:  # the messages each request would carry, as the dataset holds them
            count += 1
            chars += sum(len(message.text) for message in sample.input)
    return {
        'samples': count,
        'chars': chars,
        'load_seconds': load_seconds,
        'walk_seconds': time.perf_counter() - start - load_seconds,
        'rss_before_mb': before,
        'rss_after_load_mb': after_load,
        'rss_after_mb': proc_status_mb('VmRSS'),
    }


def child_run(side: str, corpus: Path, tokenizer_dir: str, work_dir: Path, grid: dict[str, int]) -> dict[str, Any]:
    settings = {
        'model': 'mock-model',
        'eval_type': 'mock_llm',
        'judge': {'strategy': 'rule'},
        'eval_batch_size': RUN_WORKERS,
        'work_dir': str(work_dir),
    }
    config = _config(side, corpus, tokenizer_dir, grid, **settings)
    from evalscope import run_task

    start = time.perf_counter()
    run_task(config)
    seconds = time.perf_counter() - start
    predictions = sum(1 for path in work_dir.rglob('predictions/**/*.jsonl') for _ in path.open())
    return {'samples': predictions, 'run_seconds': seconds}


def child_verify(corpus: Path, tokenizer_dir: str, work_dir: Path, grid: dict[str, int]) -> dict[str, Any]:
    """Recount the longest prompt with transformers' own chat template: independent of our counting."""
    from transformers import AutoTokenizer

    from evalscope_niah.making.samples import iter_samples
    from evalscope_niah.tasks.compose import parse_params

    length = grid['context_lengths_max']
    params = parse_params({'context_lengths': [length], 'document_depth_percents': [50]})
    sample = next(iter(iter_samples(params, corpus_dir=corpus, subsets=[SUBSET])))
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    ids = tokenizer.apply_chat_template(sample.messages(), tokenize=True, add_generation_prompt=True)
    counted = len(ids['input_ids'] if isinstance(ids, dict) or hasattr(ids, 'keys') else ids)
    return {'context_length': length, 'prompt_tokens': sample.prompt_tokens, 'transformers_tokens': counted}


CHILDREN = {
    'stream': child_stream,
    'ours-load': lambda *args: child_load('ours', *args),
    'builtin-load': lambda *args: child_load('builtin', *args),
    'ours-run': lambda *args: child_run('ours', *args),
    'builtin-run': lambda *args: child_run('builtin', *args),
    'verify': child_verify,
}


def run_child(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('kind', choices=list(CHILDREN))
    parser.add_argument('--corpus', type=Path, required=True)
    parser.add_argument('--tokenizer-dir', required=True)
    parser.add_argument('--work-dir', type=Path, required=True)
    parser.add_argument('--result', type=Path, required=True)
    parser.add_argument('--grid', type=json.loads, required=True)
    args = parser.parse_args(argv)
    result = CHILDREN[args.kind](args.corpus, args.tokenizer_dir, args.work_dir, args.grid)
    args.result.write_text(json.dumps(result))


# ---- parent ------------------------------------------------------------------------------------------------------


@dataclass
class Row:
    kind: str
    measurement: str
    finished: bool
    seconds: float  # whole subprocess (or the cap)
    peak_mb: float
    load_seconds: float | None = None  # inside it: generation / load_dataset()
    held_mb: float | None = None  # RSS after load and walk (streaming: after the last sample), less RSS before
    samples: int | None = None
    output_mb: float | None = None  # run_task: bytes written to its work_dir
    baseline: str | None = None
    speedup: float | None = None  # baseline seconds / these seconds (a bound when either was killed)
    memory_ratio: float | None = None  # these peak MB / baseline peak MB


class Bench:
    def __init__(self, corpus: Path, tokenizer_dir: Path, workdir: Path, cap: float, grid: dict[str, int]) -> None:
        self.corpus, self.tokenizer_dir, self.workdir, self.cap, self.grid = corpus, tokenizer_dir, workdir, cap, grid
        self.cache = workdir / 'cache'  # ours: one token cache, filled by the first measurement (streaming)
        self.cache.mkdir()
        self.details: dict[str, Any] = {}

    def child(self, kind: str, label: str) -> tuple[Any, dict[str, Any] | None, Path]:
        run_dir = self.workdir / kind
        work_dir = run_dir / 'outputs'
        work_dir.mkdir(parents=True)
        result_file = run_dir / 'result.json'
        command = [sys.executable, __file__, '--child', kind, '--corpus', str(self.corpus)]
        command += ['--tokenizer-dir', str(self.tokenizer_dir), '--work-dir', str(work_dir)]
        command += ['--result', str(result_file), '--grid', json.dumps(self.grid)]
        print(f'{label} (cap {self.cap:g} s) ...', file=sys.stderr, flush=True)
        env = child_env(ours=not kind.startswith('builtin'), cache=self.cache)
        measured = measure(command, env, run_dir / 'log.txt', timeout=self.cap)
        result = None if measured.timed_out else json.loads(result_file.read_text())
        self.details[kind] = {'seconds': measured.seconds, 'peak_mb': measured.peak_mb, 'result': result}
        return measured, result, work_dir

    def row(self, kind: str) -> Row:
        label, baseline = MEASUREMENTS[kind]
        measured, result, work_dir = self.child(kind, label)
        row = Row(kind, label, not measured.timed_out, measured.seconds, measured.peak_mb, baseline=baseline)
        if kind.endswith('-run'):
            row.output_mb = dir_bytes(work_dir)['*'] / 2**20
        if result is not None:
            row.samples = result['samples']
            row.load_seconds = result.get('load_seconds')
            if 'rss_after_mb' in result:
                row.held_mb = result['rss_after_mb'] - result['rss_before_mb']
        return row


def _fmt(value: float | None, spec: str) -> str:
    return '-' if value is None else format(value, spec)


def render(rows: list[Row], cap: float) -> str:
    by_kind = {row.kind: row for row in rows}
    header = ('measurement', 'done', 'seconds', 'load s', 'peak MB', 'held MB', 'output MB')
    header += ('built-in s / this s', 'this MB / built-in MB')
    body = []
    for row in rows:
        base = by_kind.get(row.baseline) if row.baseline else None
        bound = base is not None and not base.finished  # the built-in was killed: its figures are lower bounds
        body.append(
            (
                row.measurement,
                'yes' if row.finished else f'no (cap {cap:g} s)',
                f'{row.seconds:.1f}',
                _fmt(row.load_seconds, '.1f'),
                f'{row.peak_mb:,.0f}',
                _fmt(row.held_mb, ',.0f'),
                _fmt(row.output_mb, ',.0f'),
                '-' if row.speedup is None else ('>' if bound else '') + f'{row.speedup:.1f}x',
                '-' if row.memory_ratio is None else ('<' if bound else '') + f'{row.memory_ratio:.3f}',
            )
        )
    return format_table(header, body, left=2)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ['--child']:
        run_child(argv[1:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--corpus', type=Path, default=DEFAULT_CORPUS, help=f'default: {DEFAULT_CORPUS}')
    parser.add_argument('--cap', type=float, default=DEFAULT_CAP_S, help='seconds before a measurement is killed')
    parser.add_argument('--no-runs', action='store_true', help='skip the two whole run_task measurements')
    parser.add_argument('--json', type=Path, help='also write the figures as JSON to this file')
    parser.add_argument('--quick', action='store_true', help=QUICK_HELP)
    args = parser.parse_args(argv)
    grid = QUICK_GRID if args.quick else GRID
    skipped = not builtin_runs()
    kinds = [
        kind
        for kind in MEASUREMENTS
        if not (args.no_runs and kind.endswith('-run')) and not (skipped and kind.startswith('builtin'))
    ]
    with tempfile.TemporaryDirectory(prefix='bench-scale-') as tmp:
        corpus = quick_corpus(Path(tmp)) if args.quick else check_corpus(args.corpus)
        tokenizer_dir = shipped_tokenizer_dir()
        bench = Bench(corpus, tokenizer_dir, Path(tmp), args.cap, grid)
        rows = [bench.row(kind) for kind in kinds]
        longest = f'{grid["context_lengths_max"]:,}-token'
        _, check, _ = bench.child('verify', f'recount one {longest} prompt with transformers (untimed)')
    by_kind = {row.kind: row for row in rows}
    for row in rows:
        base = by_kind.get(row.baseline) if row.baseline else None
        if base is not None:
            row.speedup, row.memory_ratio = base.seconds / row.seconds, row.peak_mb / base.peak_mb

    lengths = f'{grid["context_lengths_min"]:,}..{grid["context_lengths_max"]:,}'
    prompts = grid['context_lengths_num_intervals'] * grid['document_depth_percent_intervals']
    print(
        f'Scale: {lengths} tokens x {grid["document_depth_percent_intervals"]} depths, {SUBSET} ({prompts} prompts'
        + (', the shipped demo corpus: --quick' if args.quick else ', 55M tokens')
        + f'), {machine()}'
    )
    print(render(rows, args.cap))
    print(
        'seconds: whole subprocess; load s: generation or load_dataset() inside it; peak MB: its peak RSS; held MB: '
        'RSS kept after load and walk (the in-memory dataset); output MB: bytes written to the work_dir'
    )
    lines = []
    for row in rows:
        if row.baseline is None or row.speedup is None or row.memory_ratio is None or row.kind.endswith('-run'):
            continue  # whole runs are shown for information: item 1's goals are about generation
        base = by_kind[row.baseline]
        fast, small = row.speedup >= SPEEDUP_GOAL, row.memory_ratio <= MEMORY_GOAL
        lines.append(
            f"{row.measurement}: {row.speedup:.1f}x faster than the built-in's load (item-1 goal >= "
            f'{SPEEDUP_GOAL:g}x) {verdict(fast)}; {row.memory_ratio:.3f}x its peak memory (goal <= {MEMORY_GOAL:g}x) '
            + verdict(small)
            + ('' if base.finished and row.finished else ' [killed at the cap: the ratios are bounds]')
        )
    ram_mb = os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**20
    stream_result = bench.details['stream']['result']
    tokens = stream_result['prompt_tokens'] if stream_result else None
    limits = {}
    for row in rows:
        if not (row.kind.endswith('-load') and row.finished and row.samples and tokens):
            continue
        held = max(row.held_mb or 0.0, 0.0)
        per_sample, per_mtok = held / row.samples, held / (tokens / 1e6)
        fits = ram_mb / per_mtok if per_mtok else float('inf')
        limits[row.kind] = {
            'held_mb': held,
            'held_mb_per_sample': per_sample,
            'held_mb_per_million_tokens': per_mtok,
            'ram_full_at_million_tokens': fits,
        }
        lines.append(
            f'{row.measurement}: the in-memory dataset holds {held:,.0f} MB for {row.samples} prompts of '
            f'{tokens / 1e6:.0f}M tokens ({per_sample:.2f} MB per prompt, {per_mtok:.2f} MB per 1M tokens)'
            + (
                f": this machine's {ram_mb / 1024:.0f} GB of RAM are full at ~{fits:,.0f}M prompt tokens "
                f'(~{fits / (tokens / 1e6):,.0f} grids like this one)'
                if per_mtok > 1.0
                else ': prompts are built when sent, so it does not grow with their length'
            )
        )
    for kind in ('ours-run', 'builtin-run'):
        row = by_kind.get(kind)
        if row is not None and row.finished:
            lines.append(
                f'{row.measurement}: peak {row.peak_mb:,.0f} MB, {row.seconds:.0f} s, {row.output_mb:,.0f} MB written'
            )
    if check is not None:
        same = check['prompt_tokens'] == check['transformers_tokens'] == check['context_length']
        lines.append(
            f'independent recount of a {check["context_length"]:,}-token prompt: ours says {check["prompt_tokens"]:,}, '
            f'transformers apply_chat_template counts {check["transformers_tokens"]:,} -> {verdict(same)}'
        )
    print('\n'.join(lines))
    if skipped:
        print(BUILTIN_SKIPPED)
    report = {
        'corpus': str(corpus),
        'tokenizer_dir': str(tokenizer_dir),
        'grid': grid,
        'cap_seconds': args.cap,
        'ram_mb': ram_mb,
        'rows': [asdict(row) for row in rows],
        'children': bench.details,
        'memory_limits': limits,
        'verdicts': lines,
    }
    if args.json:
        write_json_report(args.json, report)
    if not args.quick:
        write_record('scale', by_name(report['rows'], 'kind'), report=report)
    return 0


if __name__ == '__main__':
    sys.exit(main())
