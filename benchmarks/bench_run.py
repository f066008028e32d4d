"""End-to-end runs against a local OpenAI-compatible server: evalscope-niah vs EvalScope 1.14.1's built-in.

    python benchmarks/bench_run.py [--corpus ../shared/corpus] [--repeat N] [--json FILE] [--keep DIR] [--quick]

One real HTTP server (evalscope_niah/testing/openai_server.py) runs in this process on 127.0.0.1 and serves the model
(``needle_finder``: answers with the haystack sentence closest to the question) and two judges: ours (graded by
overlap, replying in our judge format) and one for the built-in (same grading, replying in the built-in's
``{"reasoning", "verdict"}`` format). Each side runs as a fresh subprocess doing what ``evalscope eval`` does:
``run_task(TaskConfig(...))`` with eval_type openai_api, the real corpus through ``local_path``, the real Qwen3
tokenizer, English only, a judge on the same server and a fresh work_dir.

1. Smoke run: the default grid with ``--limit 2``; whole-process wall time (best of --repeat). Ours is timed with
   an empty token cache and again with the cache that run filled. The goal (5x) is on the time beyond EvalScope's
   own fixed costs, which no adapter controls: each run less a process that only imports evalscope (the built-in's
   environment) and less EvalScope's HTML report in that run (``gen_html_report_file``, timed inside the child).
2. Judge input: a 1k-32k grid (3 lengths x 3 depths, 9 samples), characters and Qwen3 tokens of every judge request
   as the server received it, per sample.
3. Output size: bytes under each run's work_dir, recursively, for that same 9-sample run.

Our judge check is off in ours' runs (``judge_check='off'``): the overlap-grading stub judge rates a negated or
retracted needle high, so it fails the check by design (4/10), and the built-in has no such check; this measures
what each sample costs, the same work on both sides. The check's own cost (its calibration requests, once per
judged subset before the model runs) is therefore not in these figures.

``--quick`` runs a 2 x 2 grid on the shipped demo corpus (seconds): it checks that the script still runs, its
figures mean nothing. Without seaborn (the ``bench`` extra) the built-in side is skipped with a note.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
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
    compile_package,
    dir_bytes,
    format_table,
    machine,
    measure,
    quick_corpus,
    shipped_tokenizer_dir,
    verdict,
    write_json_report,
    write_record,
)

MODEL = 'needle-finder'
JUDGES = {'ours': 'niah-judge', 'builtin': 'builtin-judge'}
SUBSET = 'english'
SMOKE_LIMIT = 2
# Both adapters accept these extra_params names: 1000, 16500, 32000 tokens x depths 0, 50, 100.
JUDGE_GRID = {
    'context_lengths_min': 1000,
    'context_lengths_max': 32000,
    'context_lengths_num_intervals': 3,
    'document_depth_percent_intervals': 3,
}
JUDGE_GRID_LENGTHS = (1000, 16500, 32000)
QUICK_GRID = {
    'context_lengths_min': 1000,
    'context_lengths_max': 2000,
    'context_lengths_num_intervals': 2,
    'document_depth_percent_intervals': 2,
}
QUICK_GRID_LENGTHS = (1000, 2000)
# Ours only: see the module docstring (the stub judge fails the check by design; the built-in has none).
OURS_EXTRA = {'judge_check': 'off'}
SMOKE_GOAL, JUDGE_GOAL, BYTES_GOAL = 5.0, 100.0, 3.0  # built-in / ours, at least


# ---- child: one evalscope run ------------------------------------------------------------------------------------


def run_child(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('side', choices=['ours', 'builtin', 'floor'])
    parser.add_argument('--spec', type=json.loads, required=True)
    args = parser.parse_args(argv)
    spec = args.spec
    if args.side == 'floor':  # what any `evalscope eval` pays before it reads its arguments
        from evalscope import TaskConfig, run_task

        return
    if args.side == 'builtin' and 'evalscope_niah' in sys.modules:
        raise SystemExit('evalscope_niah was imported, so the built-in is replaced: set EVALSCOPE_NIAH_AUTOLOAD=0')

    from evalscope import TaskConfig, run_task  # as `evalscope eval`: ours is registered by the .pth hook
    from evalscope.api.registry import BENCHMARK_REGISTRY

    module = BENCHMARK_REGISTRY['needle_haystack'].data_adapter.__module__
    expected = OURS_MODULE if args.side == 'ours' else BUILTIN_MODULE
    if module != expected:
        raise SystemExit(f'needle_haystack is {module}, expected {expected}')
    extra = dict(spec['extra_params'])
    if args.side == 'ours':
        extra.update(OURS_EXTRA)
    if args.side == 'builtin':
        extra['tokenizer_path'] = spec['tokenizer_dir']  # else it downloads Qwen/Qwen3-0.6B from modelscope.cn
    dataset_args = {'local_path': spec['corpus'], 'subset_list': [SUBSET]}
    if extra:
        dataset_args['extra_params'] = extra
    settings: dict[str, Any] = {
        'model': MODEL,
        'api_url': spec['api_url'],
        'api_key': 'EMPTY',
        'eval_type': 'openai_api',
        'datasets': ['needle_haystack'],
        'dataset_args': {'needle_haystack': dataset_args},
        'limit': spec['limit'],
        'judge': {'models': [{'model_id': spec['judge_model'], 'api_url': spec['api_url'], 'api_key': 'EMPTY'}]},
        'work_dir': spec['work_dir'],
    }
    if spec.get('eval_batch_size'):
        settings['eval_batch_size'] = spec['eval_batch_size']
    spent = _time_evalscopes_html_report()
    adapter_class = BENCHMARK_REGISTRY['needle_haystack'].data_adapter
    loading = _time_method(adapter_class, 'load')
    reporting = _time_method(adapter_class, '_on_generate_report_end')
    run_task(TaskConfig(**settings))
    if spec.get('timing_file'):
        timing = {'html_report_seconds': sum(spent), 'load_seconds': sum(loading), 'report_seconds': sum(reporting)}
        Path(spec['timing_file']).write_text(json.dumps(timing))


def _time_method(adapter_class: type, name: str) -> list[float]:
    """Time one of the adapter's own hooks inside the run: ``load()`` (the samples built: the built-in's generation,
    our plan) and ``_on_generate_report_end`` (its heatmaps and files; both adapters draw theirs there). What is left
    of a run beyond EvalScope's fixed costs once both are taken away is EvalScope's per-run machinery (model client,
    workers, judge calls, report table) and the adapter's import: no adapter's own work can win it back."""
    import time

    spent: list[float] = []
    method = getattr(adapter_class, name)

    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        finally:
            spent.append(time.perf_counter() - start)

    setattr(adapter_class, name, timed)
    return spent


def _time_evalscopes_html_report() -> list[float]:
    """Time EvalScope's own HTML report (``evalscope.report.gen_html_report_file``, which ``run_task`` calls once at
    its end), imports included: a fixed cost of every EvalScope run that neither adapter controls."""
    import time

    import evalscope.report

    spent: list[float] = []

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            from evalscope.report.renderer import gen_html_report_file

            return gen_html_report_file(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - start)

    # run_task imports the name from evalscope.report when it reports, so it finds this one.
    evalscope.report.gen_html_report_file = timed
    return spent


# ---- the server's responders -------------------------------------------------------------------------------------


def builtin_judge(messages: list[dict]) -> str:
    """The built-in's judge prompt (its ORM template) -> ``{"reasoning", "verdict"}``, graded as ours is graded."""
    from evalscope_niah.testing.openai_server import message_text, overlap_grader

    text = message_text(messages[-1])
    start = text.rfind('Reference Answer:')
    match = re.match(r'Reference Answer:(.*?)\n\s*Model Answer:(.*?)(?:\n\s*\n|$)', text[start:], re.DOTALL)
    if start < 0 or match is None:
        raise ValueError('not the built-in judge prompt')
    rating = overlap_grader('', match.group(1).strip(), match.group(2).strip())
    return json.dumps({'reasoning': f'Compared with the reference; rating {rating}.', 'verdict': rating})


# ---- parent ------------------------------------------------------------------------------------------------------


@dataclass
class Side:
    """What one run of one side cost, as measured from outside."""

    seconds: float
    peak_mb: float
    model_requests: int
    judge_requests: int
    judge_chars: list[int] = field(default_factory=list)  # per judge request, all messages
    judge_tokens: list[int] = field(default_factory=list)
    judge_lengths: list[int | None] = field(default_factory=list)  # grid length of the sample each one judged
    bytes: dict[str, int] = field(default_factory=dict)
    html_report_seconds: float = 0.0  # inside the run: EvalScope's own HTML report (the same code on both sides)
    load_seconds: float = 0.0  # inside the run: the adapter's load() (samples built)
    report_seconds: float = 0.0  # inside the run: the adapter's report hook (its heatmaps and files)


class Bench:
    def __init__(self, corpus: Path, tokenizer_dir: Path, workdir: Path) -> None:
        from tokenizers import Tokenizer

        from evalscope_niah.testing.openai_server import (
            OpenAICompatServer,
            make_judge_responder,
            needle_finder,
            overlap_grader,
        )

        self.corpus, self.tokenizer_dir, self.workdir = corpus, tokenizer_dir, workdir
        self.tokenizer = Tokenizer.from_file(str(tokenizer_dir / 'tokenizer.json'))
        responders = {
            MODEL: needle_finder,
            JUDGES['ours']: make_judge_responder(overlap_grader),
            JUDGES['builtin']: builtin_judge,
        }
        self.server = OpenAICompatServer(responders, max_requests=1_000_000, max_seconds=24 * 3600)
        self._made = 0

    def close(self) -> None:
        self.server.close()

    def fresh(self, name: str) -> Path:
        self._made += 1
        path = self.workdir / f'{self._made:03d}-{name}'
        path.mkdir()
        return path

    def tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def floor(self) -> float:
        """Wall time of a fresh process that only imports evalscope (the built-in's environment): both sides pay it."""
        run_dir = self.fresh('floor')
        command = [sys.executable, __file__, '--child', 'floor', '--spec', '{}']
        return measure(command, child_env(ours=False), run_dir / 'log.txt').seconds

    def run(
        self,
        side: str,
        *,
        extra: dict[str, Any],
        limit: int | None,
        cache: Path | None = None,
        eval_batch_size: int | None = None,
        lengths: Sequence[int] = (),
    ) -> Side:
        from evalscope_niah.testing.openai_server import message_text

        run_dir = self.fresh(side)
        work_dir = run_dir / 'outputs'
        spec = {
            'api_url': self.server.base_url,
            'judge_model': JUDGES[side],
            'corpus': str(self.corpus),
            'tokenizer_dir': str(self.tokenizer_dir),
            'extra_params': extra,
            'limit': limit,
            'work_dir': str(work_dir),
            'eval_batch_size': eval_batch_size,
            'timing_file': str(run_dir / 'timing.json'),
        }
        command = [sys.executable, __file__, '--child', side, '--spec', json.dumps(spec)]
        first = len(self.server.requests)
        measured = measure(command, child_env(ours=side == 'ours', cache=cache), run_dir / 'log.txt')
        requests = self.server.requests[first:]
        bad = [request for request in requests if request.status != 200]
        if bad:
            raise SystemExit(f'{side}: {len(bad)} requests failed, e.g. {bad[0].status} {bad[0].reply!r}')
        result = Side(
            seconds=measured.seconds,
            peak_mb=measured.peak_mb,
            model_requests=sum(request.model == MODEL for request in requests),
            judge_requests=sum(request.model == JUDGES[side] for request in requests),
            bytes=dir_bytes(work_dir),
            **json.loads((run_dir / 'timing.json').read_text()),
        )
        # With one worker, a sample's judge request follows its model request: that names the judged cell.
        last_length: int | None = None
        for request in requests:
            text = '\n'.join(message_text(message) for message in request.messages)
            if request.model == MODEL:
                count = self.tokens(text)
                last_length = min(lengths, key=lambda length: abs(length - count)) if lengths else None
            else:
                result.judge_chars.append(request.prompt_chars)
                result.judge_tokens.append(self.tokens(text))
                result.judge_lengths.append(last_length)
        return result


@dataclass
class Row:
    measurement: str
    unit: str
    builtin: float
    ours: float
    ratio: float | None  # built-in / ours
    goal: float | None  # ratio at least
    ok: bool | None


def smoke_rows(ours_cold: list[Side], ours_warm: list[Side], builtin: list[Side], floors: list[float]) -> list[Row]:
    """The smoke run, whole process (info), and beyond EvalScope's own fixed costs (the goal): each run less a
    process that only imports evalscope and less EvalScope's HTML report inside that run, costs no adapter controls."""
    floor = min(floors)
    base = min(builtin, key=lambda side: side.seconds)
    rows = []
    for name, runs in (
        ('smoke run --limit 2, ours cold cache (info)', ours_cold),
        ('... ours warm cache (info)', ours_warm),
    ):
        best = min(side.seconds for side in runs)
        rows.append(Row(name, 's wall', base.seconds, best, base.seconds / best, None, None))
    rows.append(Row('... import evalscope alone (info)', 's wall', floor, floor, 1.0, None, None))
    html_o = min(side.html_report_seconds for side in ours_cold + ours_warm)
    rows.append(Row("... EvalScope's HTML report (info)", 's wall', base.html_report_seconds, html_o, None, None, None))
    beyond_b = base.seconds - floor - base.html_report_seconds
    for name, runs in (
        ('smoke run beyond EvalScope, ours cold cache', ours_cold),
        ('... beyond EvalScope, ours warm cache', ours_warm),
    ):
        beyond_o = min(side.seconds - floor - side.html_report_seconds for side in runs)
        ratio = beyond_b / beyond_o if beyond_o > 0 else None
        rows.append(
            Row(name, 's wall', beyond_b, beyond_o, ratio, SMOKE_GOAL, ratio is not None and ratio >= SMOKE_GOAL)
        )
    # What the goal leaves room for: a run beyond EvalScope's fixed costs, less the adapter's own load() and report
    # hook, is what an adapter that built its samples and drew its heatmaps in no time would still take.
    warm = min(ours_warm, key=lambda side: side.seconds)
    for name, field_name in (('load()', 'load_seconds'), ('report hook', 'report_seconds')):
        spent_b, spent_o = getattr(base, field_name), getattr(warm, field_name)
        rows.append(Row(f'... {name} inside the run (info)', 's wall', spent_b, spent_o, None, None, None))
    rest_b = beyond_b - base.load_seconds - base.report_seconds
    rest_o = warm.seconds - floor - warm.html_report_seconds - warm.load_seconds - warm.report_seconds
    rows.append(Row('... beyond EvalScope less both (info)', 's wall', rest_b, rest_o, None, None, None))
    peak_b, peak_o = max(side.peak_mb for side in builtin), max(side.peak_mb for side in ours_cold + ours_warm)
    rows.append(Row('smoke run peak RSS (info)', 'MB', peak_b, peak_o, peak_b / peak_o, None, None))
    return rows


def judge_rows(ours: Side, builtin: Side, lengths: Sequence[int]) -> list[Row]:
    rows = []
    for unit, attribute in (('chars', 'judge_chars'), ('tokens', 'judge_tokens')):
        per_b, per_o = statistics.fmean(getattr(builtin, attribute)), statistics.fmean(getattr(ours, attribute))
        ratio = per_b / per_o
        name = f'judge input per sample, {lengths[0] // 1000}k-{lengths[-1] // 1000}k'
        rows.append(Row(name, unit, per_b, per_o, ratio, JUDGE_GOAL, ratio >= JUDGE_GOAL))
    for length in lengths:
        sizes = {
            name: [t for t, cell in zip(side.judge_tokens, side.judge_lengths, strict=True) if cell == length]
            for name, side in (('builtin', builtin), ('ours', ours))
        }
        if all(sizes.values()):
            per_b, per_o = statistics.fmean(sizes['builtin']), statistics.fmean(sizes['ours'])
            rows.append(
                Row(f'... samples of {length} tokens (info)', 'tokens', per_b, per_o, per_b / per_o, None, None)
            )
    return rows


def bytes_rows(ours: Side, builtin: Side) -> list[Row]:
    total_b, total_o = builtin.bytes['*'], ours.bytes['*']
    rows = [Row('bytes written to work_dir (same run)', 'bytes', total_b, total_o, total_b / total_o, BYTES_GOAL, None)]
    rows[0].ok = rows[0].ratio >= BYTES_GOAL
    for part in ('predictions', 'reviews', 'reports'):
        part_b, part_o = builtin.bytes.get(part, 0), ours.bytes.get(part, 0)
        ratio = part_b / part_o if part_o else None
        rows.append(Row(f'... {part}/ (info)', 'bytes', part_b, part_o, ratio, None, None))
    return rows


def ours_only(cold: list[Side], warm: list[Side], grid: Side | None, floors: list[float]) -> str:
    """Ours' own figures, when the built-in cannot run here (no seaborn): nothing to compare them with."""
    rows = [
        ('smoke run, ours cold cache', 's wall', f'{min(side.seconds for side in cold):.2f}'),
        ('... ours warm cache', 's wall', f'{min(side.seconds for side in warm):.2f}'),
        ('... import evalscope alone', 's wall', f'{min(floors):.2f}'),
        ('smoke run peak RSS', 'MB', f'{max(side.peak_mb for side in cold + warm):,.0f}'),
    ]
    if grid is not None:
        rows += [
            ('judge input per sample', 'chars', f'{statistics.fmean(grid.judge_chars):,.0f}'),
            ('judge input per sample', 'tokens', f'{statistics.fmean(grid.judge_tokens):,.0f}'),
            ('bytes written to work_dir', 'bytes', f'{grid.bytes["*"]:,}'),
        ]
    return format_table(('measurement', 'unit', 'ours'), rows, left=2)


def explain(rows: list[Row]) -> list[str]:
    """Why a goal was missed, from the figures themselves."""
    by_name = {row.measurement: row for row in rows}
    lines = []
    smoke = [row for row in rows if row.unit == 's wall' and row.ok is False]
    floor = by_name['... import evalscope alone (info)'].ours
    machinery = by_name.get('... beyond EvalScope less both (info)')
    for row in smoke:
        need = row.builtin / row.goal
        lines.append(
            f'MISS {row.measurement}: {row.ratio or 0:.1f}x; {row.goal:g}x needs ours <= {need:.2f} s beyond '
            f"importing evalscope ({floor:.2f} s) and EvalScope's HTML report"
            + (
                f"; a run less the adapter's load() and report hook still takes {machinery.builtin:.2f} s (built-in), "
                f'{machinery.ours:.2f} s (ours, warm)'
                if machinery is not None
                else ''
            )
        )
    judge = [row for row in rows if row.measurement.startswith('judge input') and row.ok is False]
    lengths = [row for row in rows if row.measurement.startswith('... samples of')]
    for row in judge:
        lines.append(
            f'MISS {row.measurement} ({row.unit}): {row.ratio:.1f}x; the built-in sends the haystack, so its judge '
            'input grows with the context while ours stays constant: '
            + ', '.join(f'{r.measurement[15:].split(" (")[0]}: {r.ratio:.1f}x' for r in lengths)
        )
    lines += [
        f'MISS {row.measurement}: {row.ratio:.1f}x < {row.goal:g}x'
        for row in rows
        if row.ok is False and row not in smoke and row not in judge
    ]
    return lines


def _num(value: float, unit: str) -> str:
    if unit in ('s wall',):
        return f'{value:.2f}'
    return f'{value:,.0f}'


def render(rows: list[Row]) -> str:
    header = ('measurement', 'unit', 'built-in', 'ours', 'built-in / ours', 'goal', 'verdict')
    body = [
        (
            row.measurement,
            row.unit,
            _num(row.builtin, row.unit),
            _num(row.ours, row.unit),
            '-' if row.ratio is None else f'{row.ratio:,.1f}x',
            '-' if row.goal is None else f'>= {row.goal:g}x',
            verdict(row.ok),
        )
        for row in rows
    ]
    return format_table(header, body, left=2)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ['--child']:
        run_child(argv[1:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--corpus', type=Path, default=DEFAULT_CORPUS, help=f'default: {DEFAULT_CORPUS}')
    parser.add_argument('--repeat', type=int, default=1, help='smoke runs per side: best wall time is kept')
    parser.add_argument('--json', type=Path, help='also write the figures as JSON to this file')
    parser.add_argument('--keep', type=Path, help='keep every run (work_dirs, logs) in this new directory')
    parser.add_argument('--quick', action='store_true', help=QUICK_HELP)
    parser.add_argument('--smoke-only', action='store_true', help='only the smoke runs (no judge-input or bytes run)')
    parser.add_argument('--no-record', action='store_true', help="do not write the day's record (bench_check.py)")
    parser.add_argument('--notes', help="the record's notes: what its figures cannot say (a loaded machine, ...)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error('--repeat must be at least 1')
    compile_package()
    workdir = Path(tempfile.mkdtemp(prefix='bench-run-'))
    corpus = quick_corpus(workdir) if args.quick else check_corpus(args.corpus)
    tokenizer_dir = shipped_tokenizer_dir()
    # --quick: the smoke runs use the tiny grid too (the default grid's 32k prompts would repeat the demo corpus).
    smoke_extra = dict(QUICK_GRID) if args.quick else {}
    grid, lengths = (QUICK_GRID, QUICK_GRID_LENGTHS) if args.quick else (JUDGE_GRID, JUDGE_GRID_LENGTHS)
    sides = ('ours', 'builtin') if builtin_runs() else ('ours',)
    bench = Bench(corpus, tokenizer_dir, workdir)
    try:
        cold: list[Side] = []
        warm: list[Side] = []
        builtin: list[Side] = []
        floors: list[float] = []
        for round_ in range(args.repeat):
            print(f'smoke runs, round {round_ + 1} of {args.repeat} ...', file=sys.stderr, flush=True)
            cache = bench.fresh('cache')  # empty: the cold run fills it for the warm run
            cold.append(bench.run('ours', extra=smoke_extra, limit=SMOKE_LIMIT, cache=cache))
            warm.append(bench.run('ours', extra=smoke_extra, limit=SMOKE_LIMIT, cache=cache))
            if 'builtin' in sides:
                builtin.append(bench.run('builtin', extra=smoke_extra, limit=SMOKE_LIMIT))
            floors.append(bench.floor())
        for runs in (cold, warm, builtin):
            if runs and {(side.model_requests, side.judge_requests) for side in runs} != {(SMOKE_LIMIT, SMOKE_LIMIT)}:
                raise SystemExit(f'smoke run: expected {SMOKE_LIMIT} model and judge requests, got {runs}')
        samples = len(lengths) * grid['document_depth_percent_intervals']
        if not args.smoke_only:
            print(f'judge-input and output-size runs ({samples} samples each) ...', file=sys.stderr, flush=True)
        grid_runs = {
            side: bench.run(
                side,
                extra=grid,
                limit=None,
                cache=bench.fresh('cache') if side == 'ours' else None,
                eval_batch_size=1,
                lengths=lengths,
            )
            for side in ([] if args.smoke_only else sides)
        }
        for side, result in grid_runs.items():
            if (result.model_requests, result.judge_requests) != (samples, samples):
                raise SystemExit(f'{side}: expected {samples} model and judge requests, got {result}')
    finally:
        bench.close()
        if args.keep:
            shutil.copytree(workdir, args.keep)
        shutil.rmtree(workdir, ignore_errors=True)

    print(f'End-to-end runs against a local OpenAI-compatible server, {machine()}; repeat={args.repeat}')
    print(
        f'corpus {"the shipped demo corpus (--quick)" if args.quick else corpus}, '
        f'tokenizer {tokenizer_dir}, subset {SUBSET}'
    )
    depths = grid['document_depth_percent_intervals']
    described = (
        f'smoke: {"the --quick grid" if args.quick else "default grid (1k-32k, 10x10)"}, --limit {SMOKE_LIMIT}, '
        f'whole `run_task` subprocess, best of --repeat'
        + (
            ''
            if args.smoke_only
            else f'; judge/bytes: grid {lengths} tokens x {depths} depths ({samples} samples), one run each'
        )
    )
    if 'builtin' not in sides:
        print(ours_only(cold, warm, grid_runs.get('ours'), floors))
        print(described)
        print(BUILTIN_SKIPPED)
        return 0
    rows = smoke_rows(cold, warm, builtin, floors)
    if grid_runs:
        rows += judge_rows(grid_runs['ours'], grid_runs['builtin'], lengths)
        rows += bytes_rows(grid_runs['ours'], grid_runs['builtin'])
    print(render(rows))
    print(described)
    goals = [row for row in rows if row.ok is not None]
    print(f'{sum(row.ok for row in goals)} of {len(goals)} goals met')
    for line in explain(rows):
        print(line)
    report = {
        'corpus': str(corpus),
        'tokenizer_dir': str(tokenizer_dir),
        'repeat': args.repeat,
        'quick': args.quick,
        'judge_grid': grid,
        'rows': [asdict(row) for row in rows],
        'smoke_runs': {
            'ours_cold': [asdict(side) for side in cold],
            'ours_warm': [asdict(side) for side in warm],
            'builtin': [asdict(side) for side in builtin],
            'import_evalscope_seconds': floors,
        },
        'grid_runs': {side: asdict(result) for side, result in grid_runs.items()},
    }
    if args.json:
        write_json_report(args.json, report)
    if not (args.quick or args.no_record or args.smoke_only):
        write_record('run', by_name(report['rows'], 'measurement', 'unit'), report=report, notes=args.notes)
    return 0


if __name__ == '__main__':
    sys.exit(main())
