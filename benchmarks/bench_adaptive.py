"""Adaptive sweep vs the full grid (issue 39): how often each names a model's true effective context length, and what
share of the full grid's prompt tokens the adaptive sweep spends.

usage: python benchmarks/bench_adaptive.py [--models N] [--quick] [--no-record] [--smollm2]

1. The study: 100 simulated models (benchmarks/adaptive_sim.py: right with a probability that falls with length beyond
   a limit and dips at middle depths, with a fixed noise per cell; limits spread evenly over the grid), each measured
   once by the full grid and once by the adaptive sweep (making/adaptive_plan.py, its default confidence), both read by
   the run's own estimator (reporting/stats.effective_context_length). The grid is bench_scale's 100k-1M x 10 depths,
   with 3 haystacks per cell in four independent draws of the 100 models (one draw's count moves by a few models
   from noise alone; the pooled 400 are the steadier figure), and with 1 haystack per cell on the first draw.
   Goals: the adaptive sweep names the true length at least as often as the grid, on at most 25 % of its prompt
   tokens.
2. End to end: one simulated model on the test server, the same grid run twice through EvalScope's run_task (sweep
   grid, then adaptive), on the shipped demo corpus: both effective lengths and what each sent.
3. With --smollm2: the demo's SmolLM2-135M (llama.cpp on this machine's CPUs) on a 4 x 3 x 1 grid of 250-1000
   tokens, grid then adaptive (minutes on 2 cores).

Figures are printed; without --quick (or with --no-record) a dated JSON record goes to benchmarks/results/.
``--quick``: 10 models and a tiny end-to-end grid: checks the script runs; figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import QUICK_HELP, format_table, quick_corpus, verdict, write_record
from adaptive_sim import (
    answer,
    estimate,
    grid_units,
    make_models,
    run_adaptive,
    run_grid,
    true_effective_length,
)

from evalscope_niah.making.adaptive_plan import AdaptiveSettings
from evalscope_niah.params.grading import ScoringParams
from evalscope_niah.params.sweep import SweepParams

LENGTHS = [100_000 * (i + 1) for i in range(10)]  # bench_scale's grid: 100k..1M
DEPTHS = [float(round(i * 100 / 9)) for i in range(10)]
GOAL_TOKEN_SHARE = 0.25
# Independent draws of the 100 models: one draw's count moves by a few models from noise alone.
MODEL_SEEDS = (1, 2, 3, 4)


def study(count: int, repeats: int, *, seed: int) -> dict:
    """The full grid and the adaptive sweep on the same ``count`` simulated models."""
    threshold = ScoringParams().effective_length_threshold
    settings = AdaptiveSettings(threshold=threshold, confidence=SweepParams().sweep_confidence, seed=0)
    units = grid_units(LENGTHS, DEPTHS, repeats)
    grid_tokens = sum(unit.context_length for unit in units)
    named = {'grid': 0, 'adaptive': 0}
    spent_tokens = spent_prompts = 0
    rounds: list[int] = []
    for index, model in enumerate(make_models(count, LENGTHS, DEPTHS, seed=seed)):
        truth = true_effective_length(model, LENGTHS, DEPTHS, threshold=threshold)
        # Separate draws for the two sweeps: each is one run of the model, as two real runs would be.
        grid_scores = run_grid(units, answer(model, random.Random(f'grid{index}')))
        scores, used_rounds, _ = run_adaptive(units, answer(model, random.Random(f'adaptive{index}')), settings)
        named['grid'] += estimate(grid_scores, units, threshold=threshold) == truth
        named['adaptive'] += estimate(scores, units, threshold=threshold) == truth
        spent_tokens += sum(key[0] for key in scores)
        spent_prompts += len(scores)
        rounds.append(used_rounds)
    return {
        'models': count,
        'model_seed': seed,
        'repeats': repeats,
        'grid_prompts_per_model': len(units),
        'grid_named_true_length': named['grid'],
        'adaptive_named_true_length': named['adaptive'],
        'adaptive_token_share': spent_tokens / (grid_tokens * count),
        'adaptive_prompt_share': spent_prompts / (len(units) * count),
        'adaptive_rounds_mean': sum(rounds) / count,
        'adaptive_rounds_max': max(rounds),
    }


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


def _row(figures: dict) -> list[str]:
    goals = (
        figures['adaptive_named_true_length'] >= figures['grid_named_true_length'],
        figures['adaptive_token_share'] <= GOAL_TOKEN_SHARE,
    )
    return [
        f'10 x 10 x {figures["repeats"]}',
        f'seed {figures["model_seed"]}' if 'model_seed' in figures else f'{figures["models"]} (all draws)',
        str(figures['grid_named_true_length']),
        str(figures['adaptive_named_true_length']),
        f'{figures["adaptive_token_share"]:.1%}',
        f'{figures["adaptive_prompt_share"]:.1%}',
        f'{figures["adaptive_rounds_mean"]:.1f} / {figures["adaptive_rounds_max"]}',
        ' '.join(verdict(ok) for ok in goals),
    ]


def _pooled(studies: list[dict]) -> dict:
    """The draws together (equal sizes: shares and means average)."""
    count = len(studies)
    return {
        'models': sum(figures['models'] for figures in studies),
        'repeats': studies[0]['repeats'],
        'grid_named_true_length': sum(figures['grid_named_true_length'] for figures in studies),
        'adaptive_named_true_length': sum(figures['adaptive_named_true_length'] for figures in studies),
        'adaptive_token_share': sum(figures['adaptive_token_share'] for figures in studies) / count,
        'adaptive_prompt_share': sum(figures['adaptive_prompt_share'] for figures in studies) / count,
        'adaptive_rounds_mean': sum(figures['adaptive_rounds_mean'] for figures in studies) / count,
        'adaptive_rounds_max': max(figures['adaptive_rounds_max'] for figures in studies),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--models', type=int, default=100, help='simulated models in the study (default 100)')
    parser.add_argument('--quick', action='store_true', help=QUICK_HELP)
    parser.add_argument('--no-record', action='store_true', help='do not write the dated record in benchmarks/results')
    parser.add_argument(
        '--smollm2', action='store_true', help="also the demo's SmolLM2 (local llama.cpp): grid vs adaptive, minutes"
    )
    args = parser.parse_args(argv)
    count = 10 if args.quick else args.models
    seeds = MODEL_SEEDS[:1] if args.quick else MODEL_SEEDS
    studies = [study(count, 3, seed=seed) for seed in seeds] + [study(count, 1, seed=seeds[0])]
    rows = [_row(figures) for figures in studies]
    if len(seeds) > 1:
        rows.append(_row(_pooled(studies[: len(seeds)])))
    print(f'{count} simulated models per draw, lengths 100k-1M, threshold {ScoringParams().effective_length_threshold}')
    header = ['grid (len x depth x rep)', 'models', 'grid named', 'adaptive named', 'token share', 'prompt share']
    print(format_table([*header, 'rounds mean/max', 'goals'], rows))
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
        figures = {'study': studies, 'end_to_end': e2e, **({'smollm2': real} if real is not None else {})}
        write_record('adaptive', figures)
    return 0


if __name__ == '__main__':
    sys.exit(main())
