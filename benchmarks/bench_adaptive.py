"""Adaptive sweep vs the full grid (issue 43): on the model families real evaluations meet, how often the adaptive sweep
names the full grid's effective context length (within one grid step, and exactly), and what share of the grid's
prompt tokens it spends.

usage: python benchmarks/bench_adaptive.py [--models N] [--quick] [--no-record] [--smollm2]

1. The study: per family (benchmarks/adaptive_sim.py: falling with length; dipping at middle lengths and recovering;
   lost in the middle by depth; noisy; all of these at once) ``--models`` random models (limits, dips and thresholds
   crossings spread over the length axis), each on five grid shapes (Kamradt's 35 lengths x 35 depths, its first 21
   lengths, 21 x 12 depths, 10 x 10 x 3 haystacks at 100k-1M, 12 doubling-every-two lengths x 5 depths x 3). Every
   sample's answer is picked once; the full grid reads all of them, the adaptive sweep (making/adaptive_plan.py, its
   default confidence) those it sends, and both are read by the run's own estimator
   (reporting/stats.effective_context_length). Goals: within one grid step of the grid in at least 98 % of the runs
   of every family, at most 30 % of the grid's prompt tokens overall (the mean of the runs' shares).
2. End to end: one simulated model on the test server, the same grid run twice through EvalScope's run_task (sweep
   grid, then adaptive), on the shipped demo corpus: both effective lengths and what each sent.
3. With --smollm2: the demo's SmolLM2-135M (llama.cpp on this machine's CPUs) on a 4 x 3 x 1 grid of 250-1000
   tokens, grid then adaptive (minutes on 2 cores).

Figures are printed; without --quick (or with --no-record) a dated JSON record goes to benchmarks/results/.
``--quick``: 4 models per family and a tiny end-to-end grid: checks the script runs; figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import QUICK_HELP, format_table, quick_corpus, verdict, write_record
from adaptive_sim import FAMILIES, answers, estimate, grid_units, make_models, run_adaptive

from evalscope_niah.making.adaptive_plan import AdaptiveSettings
from evalscope_niah.params.grading import ScoringParams
from evalscope_niah.params.sweep import SweepParams

_KAMRADT = [1000 + round(i * 127_000 / 34) for i in range(35)]  # 1k-128k in 35 steps, as his published grids
# name -> (lengths, depths, haystacks per cell)
GRIDS: dict[str, tuple[list[int], list[float], int]] = {
    '35 x 35 x 1': (_KAMRADT, [round(i * 100 / 34, 2) for i in range(35)], 1),
    '21 x 35 x 1': (_KAMRADT[:21], [round(i * 100 / 34, 2) for i in range(35)], 1),
    '21 x 12 x 1': (_KAMRADT[:21], [round(i * 100 / 11, 2) for i in range(12)], 1),
    '10 x 10 x 3': ([100_000 * (i + 1) for i in range(10)], [float(round(i * 100 / 9)) for i in range(10)], 3),
    '12 x 5 x 3': ([round(4000 * 2 ** (i / 2)) for i in range(12)], [0.0, 25.0, 50.0, 75.0, 100.0], 3),
}
GOAL_WITHIN_ONE_STEP = 0.98
GOAL_TOKEN_SHARE = 0.30
MODEL_SEED = 1


def study(count: int) -> list[dict]:
    """One row per (family, grid): the adaptive sweep against the full grid on ``count`` random models."""
    threshold = ScoringParams().effective_length_threshold
    settings = AdaptiveSettings(threshold=threshold, confidence=SweepParams().sweep_confidence, seed=0)
    rows = []
    for family in FAMILIES:
        for grid, (lengths, depths, repeats) in GRIDS.items():
            units = grid_units(lengths, depths, repeats)
            grid_tokens = sum(unit.context_length for unit in units)
            index = {length: position for position, length in enumerate(lengths)}
            within = exact = rounds = 0
            shares: list[float] = []
            for number, model in enumerate(make_models(family, count, lengths, depths, seed=MODEL_SEED)):
                answered = answers(model, units, seed=f'{family}:{grid}:{number}')
                by_grid = estimate(answered, units, threshold=threshold)
                scores, _, used_rounds, _ = run_adaptive(units, answered.__getitem__, settings)
                by_sweep = estimate(scores, units, threshold=threshold)
                steps = abs(index.get(by_grid, -1) - index.get(by_sweep, -1))  # None: below the shortest, -1
                within += steps <= 1
                exact += steps == 0
                shares.append(sum(key[0] for key in scores) / grid_tokens)
                rounds += used_rounds
            rows.append(
                {
                    'family': family,
                    'grid': grid,
                    'models': count,
                    'within_one_step': within / count,
                    'same_length': exact / count,
                    'token_share': sum(shares) / count,
                    'rounds_mean': rounds / count,
                }
            )
    return rows


def _pooled(rows: list[dict]) -> dict:
    """Rows together (equal model counts: rates and shares average)."""
    return {
        key: sum(row[key] for row in rows) / len(rows)
        for key in ('within_one_step', 'same_length', 'token_share', 'rounds_mean')
    } | {'models': sum(row['models'] for row in rows)}


def summarize(rows: list[dict]) -> dict:
    families = {family: _pooled([row for row in rows if row['family'] == family]) for family in FAMILIES}
    grids = {grid: _pooled([row for row in rows if row['grid'] == grid]) for grid in GRIDS}
    overall = _pooled(rows)
    overall['worst_family_within_one_step'] = min(figures['within_one_step'] for figures in families.values())
    return {'families': families, 'grids': grids, 'overall': overall, 'runs': rows}


def end_to_end(quick: bool) -> dict:
    """One simulated model through run_task twice: sweep grid and sweep adaptive, on the same grid."""
    from evalscope import TaskConfig, run_task

    from evalscope_niah.integration import register
    from evalscope_niah.testing.openai_server import OpenAICompatServer
    from evalscope_niah.testing.simulated import SimulatedModel

    register()
    grid = (
        {'context_lengths': [300, 700, 1100, 1500], 'document_depth_percents': [0, 50, 100]}
        if quick
        else {'context_lengths': [300 + 200 * i for i in range(8)], 'document_depth_percents': [0, 25, 50, 75, 100]}
    )
    grid['num_repeats'] = 1 if quick else 3
    figures = {'grid': grid}
    with tempfile.TemporaryDirectory() as scratch:
        corpus = quick_corpus(Path(scratch))
        for sweep in ('grid', 'adaptive'):
            model = SimulatedModel(limit=900, fall=400, top=0.98, dip=0.15, seed=3)
            with OpenAICompatServer({'sim': model}) as server:
                work = Path(scratch) / sweep
                dataset = {
                    'local_path': str(corpus),
                    'subset_list': ['english'],
                    'extra_params': {**grid, 'sweep': sweep},
                }
                run_task(
                    TaskConfig(
                        model='sim',
                        api_url=server.base_url,
                        api_key='x',
                        eval_type='openai_api',
                        datasets=['needle_haystack'],
                        dataset_args={'needle_haystack': dataset},
                        judge={'strategy': 'rule'},
                        work_dir=str(work),
                        no_timestamp=True,
                        eval_batch_size=4,
                    )
                )
                requests = server.requests_for('sim')
            reports = work / 'reports' / 'sim'
            summary = json.loads((reports / 'needle_haystack_summary.json').read_text())
            rows = (reports / 'needle_haystack_results.jsonl').read_text().splitlines()
            figures[sweep] = {
                'effective_length': summary['effective_context_length']['english']['length'],
                'prompts': len(requests),
                'planned_tokens': sum(json.loads(row)['context_length'] for row in rows),
            }
    return figures


def real_model() -> dict:
    """The demo's SmolLM2-135M (llama.cpp on this machine's CPUs) on a small grid, sweep grid then adaptive."""
    from evalscope_niah.integration.run import run_task_settings
    from evalscope_niah.making.corpus import DEMO_CORPUS_DIR, DEMO_CORPUS_FILES
    from evalscope_niah.serving.local_model import LocalModelServer

    # Small: SmolLM2 reads ~100 prompt tokens/s on 2 idle cores, far fewer on shared ones.
    grid = {'context_lengths': [250, 500, 750, 1000], 'document_depth_percents': [0, 50, 100], 'num_repeats': 1}
    figures: dict = {'grid': grid}
    with tempfile.TemporaryDirectory() as scratch, LocalModelServer() as server:
        for sweep in ('grid', 'adaptive'):
            work = Path(scratch) / sweep
            extra = {**grid, 'sweep': sweep, 'subsets': {'english': {'corpus_file': DEMO_CORPUS_FILES['english']}}}
            run_task_settings(
                {
                    'model': server.model_name,
                    'api_url': server.base_url,
                    'api_key': 'EMPTY',
                    'eval_type': 'openai_api',
                    'datasets': ['needle_haystack'],
                    'dataset_args': {
                        'needle_haystack': {
                            'local_path': str(DEMO_CORPUS_DIR),
                            'subset_list': ['english'],
                            'extra_params': extra,
                        }
                    },
                    'judge': {'strategy': 'rule'},
                    'generation_config': {'temperature': 0.0, 'max_tokens': 64, 'stop_seqs': ['\n\n']},
                    'eval_batch_size': 1,
                    'work_dir': str(work),
                    'no_timestamp': True,
                }
            )
            figures[sweep] = _run_figures(next(work.rglob('needle_haystack_summary.json')).parent)
    return figures


def _run_figures(reports: Path) -> dict:
    summary = json.loads((reports / 'needle_haystack_summary.json').read_text())
    rows = (reports / 'needle_haystack_results.jsonl').read_text().splitlines()
    effective = summary['effective_context_length']['english']
    return {
        'effective_length': effective['length'],
        'ci': [effective['ci_low'], effective['ci_high']],
        'prompts': len(rows),
        'planned_tokens': sum(json.loads(row)['context_length'] for row in rows),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--models', type=int, default=100, help='random models per family (default 100)')
    parser.add_argument('--quick', action='store_true', help=QUICK_HELP)
    parser.add_argument('--no-record', action='store_true', help='do not write the dated record in benchmarks/results')
    parser.add_argument(
        '--smollm2', action='store_true', help="also the demo's SmolLM2 (local llama.cpp): grid vs adaptive, minutes"
    )
    args = parser.parse_args(argv)
    count = 4 if args.quick else args.models
    study_figures = summarize(study(count))
    threshold = ScoringParams().effective_length_threshold
    print(f'{count} random models per family and grid, threshold {threshold}, same answers for grid and adaptive')
    header = ['', 'models', 'within one step', 'same length', 'token share', 'rounds (mean)', 'goal']
    table = [
        [
            name,
            str(figures['models']),
            f'{figures["within_one_step"]:.1%}',
            f'{figures["same_length"]:.1%}',
            f'{figures["token_share"]:.1%}',
            f'{figures["rounds_mean"]:.1f}',
            verdict(figures['within_one_step'] >= GOAL_WITHIN_ONE_STEP),
        ]
        for name, figures in study_figures['families'].items()
    ]
    overall = study_figures['overall']
    table.append(
        [
            'overall',
            str(overall['models']),
            f'{overall["within_one_step"]:.1%}',
            f'{overall["same_length"]:.1%}',
            f'{overall["token_share"]:.1%}',
            f'{overall["rounds_mean"]:.1f}',
            verdict(overall['token_share'] <= GOAL_TOKEN_SHARE),
        ]
    )
    print(format_table(header, table))
    print('\nper grid (length x depth x haystacks), all families:')
    print(
        format_table(
            ['grid', 'within one step', 'same length', 'token share', 'rounds (mean)'],
            [
                [
                    grid,
                    f'{figures["within_one_step"]:.1%}',
                    f'{figures["same_length"]:.1%}',
                    f'{figures["token_share"]:.1%}',
                    f'{figures["rounds_mean"]:.1f}',
                ]
                for grid, figures in study_figures['grids'].items()
            ],
        )
    )
    e2e = end_to_end(args.quick)
    print('\nend to end through run_task (test server, simulated model, demo corpus):')
    print(
        format_table(
            ['sweep', 'effective length', 'prompts', 'prompt tokens'],
            [
                [s, str(e2e[s]['effective_length']), str(e2e[s]['prompts']), str(e2e[s]['planned_tokens'])]
                for s in ('grid', 'adaptive')
            ],
        )
    )
    real = real_model() if args.smollm2 else None
    if real is not None:
        print('\nSmolLM2-135M (llama.cpp, this machine), english, rule score:')
        print(
            format_table(
                ['sweep', 'effective length', 'CI', 'prompts', 'prompt tokens'],
                [
                    [
                        s,
                        str(real[s]['effective_length']),
                        str(real[s]['ci']),
                        str(real[s]['prompts']),
                        str(real[s]['planned_tokens']),
                    ]
                    for s in ('grid', 'adaptive')
                ],
            )
        )
    if not (args.quick or args.no_record):
        figures = {'study': study_figures, 'end_to_end': e2e, **({'smollm2': real} if real is not None else {})}
        write_record('adaptive', figures)
    return 0


if __name__ == '__main__':
    sys.exit(main())
