"""Reply bounds: peak memory, disk and time of a whole run whose server answers a 200 MB reply or 10**6 choices.

    python benchmarks/bench_reply_bounds.py [--lifted] [--json FILE] [--quick]

A local test server (``evalscope_niah.testing``) answers every model request with its 'huge_reply' fault: one answer
of 200 MB, or 188 MB of copies of the right choice (about 10**6 choices), sent in 1 MiB chunks. Each case is one
``run_task`` of one sample (600 tokens, the shipped demo corpus) in a fresh child process with
``generation_config`` ``{'timeout': 30, 'retries': 1, 'retry_interval': 0}`` and ``ignore_errors``; the honest case
(a normal reply) is the baseline. Columns: the child's wall seconds and peak RSS (``os.wait4``), bytes on disk under
its work dir when it ends, model requests the server answered (tries), and how the sample ended.

``--lifted`` adds the 200 MB answer with ``max_reply_bytes`` lifted to 1 GB (the reply is read and parsed whole, then
cut where it is stored): what the cap saves. Without --quick the figures go to a dated record
``benchmarks/results/reply_bounds-YYYY-MM-DD.json`` (docs/en/performance.md quotes it). ``--quick``: 20 MB replies
(seconds): it checks that the script still runs, its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    QUICK_HELP,
    by_name,
    child_env,
    dir_bytes,
    format_table,
    measure,
    quick_corpus,
    write_json_report,
    write_record,
)

MODEL = 'huge-replies'
GENERATION = {'timeout': 30, 'retries': 1, 'retry_interval': 0}
# Goals (issue 37, item 3): each try reads at most the cap, so a hostile reply costs about what an honest one does.
PEAK_GOAL_MB = 800
DISK_GOAL_BYTES = 1_000_000


def cases(megabytes: int, *, lifted: bool) -> list[dict[str, Any]]:
    size = megabytes * 1_000_000
    found = [
        {'case': 'honest reply', 'fault': None, 'extra': {}},
        {'case': f'one {megabytes} MB answer', 'fault': {'huge_shape': 'content', 'huge_bytes': size}, 'extra': {}},
        {
            # about 190 bytes a copy of the right choice: 188 MB are about 10**6 choices
            'case': f'{round(megabytes * 0.94)} MB of choices',
            'fault': {'huge_shape': 'choices', 'huge_bytes': round(size * 0.94)},
            'extra': {},
        },
    ]
    if lifted:
        found.append(
            {
                'case': f'one {megabytes} MB answer, cap lifted',
                'fault': {'huge_shape': 'content', 'huge_bytes': size},
                'extra': {'max_reply_bytes': 1 << 30},
            }
        )
    return found


def child(spec: dict[str, Any]) -> None:
    """The measured process: one run_task of one sample; prints how it ended."""
    from evalscope import TaskConfig, run_task

    from evalscope_niah.reporting.outputs import RESULTS_FILE
    from evalscope_niah.reporting.result_files import read_results

    dataset = {
        'local_path': spec['corpus'],
        'subset_list': ['english'],
        'extra_params': {'context_lengths': [600], 'document_depth_percents': [50], **spec['extra']},
    }
    config = TaskConfig(
        model=MODEL, api_url=spec['api_url'], api_key='x', eval_type='openai_api', datasets=['needle_haystack'],
        dataset_args={'needle_haystack': dataset}, judge={'strategy': 'rule'}, work_dir=spec['work_dir'],
        no_timestamp=True, generation_config=GENERATION, ignore_errors=True,
    )  # fmt: skip
    run_task(config)
    result = read_results(Path(spec['work_dir']) / 'reports' / MODEL / RESULTS_FILE)[0]
    ended = f'accuracy {result.accuracy}' if result.error is None else result.error.split(':')[0]
    print(json.dumps({'ended': ended, 'error': (result.error or '')[:300]}))


def run_case(case: dict[str, Any], root: Path, corpus: Path, index: int) -> dict[str, Any]:
    from evalscope_niah.testing.openai_server import FaultPlan, OpenAICompatServer, needle_finder

    faults = {MODEL: FaultPlan(huge_reply=1.0, **case['fault'])} if case['fault'] else None
    run_dir = root / f'{index:02d}'
    work_dir = run_dir / 'outputs'
    run_dir.mkdir()
    with OpenAICompatServer({MODEL: needle_finder}, faults, max_seconds=3600) as server:
        spec = {'api_url': server.base_url, 'corpus': str(corpus), 'work_dir': str(work_dir), 'extra': case['extra']}
        command = [sys.executable, __file__, '--child', json.dumps(spec)]
        measured = measure(command, child_env(ours=True), run_dir / 'log.txt', timeout=900)
        tries = len(server.requests_for(MODEL))
    lines = (run_dir / 'log.txt').read_text(errors='replace').strip().splitlines()
    ended = json.loads(lines[-1]) if lines and lines[-1].startswith('{') else {'ended': 'no result', 'error': ''}
    return {
        'case': case['case'],
        'reply_bytes': case['fault']['huge_bytes'] if case['fault'] else None,
        'max_reply_bytes': case['extra'].get('max_reply_bytes'),
        'seconds': round(measured.seconds, 1),
        'peak_mb': round(measured.peak_mb),
        'timed_out': measured.timed_out,
        'disk_bytes': dir_bytes(work_dir)['*'] if work_dir.exists() else 0,
        'tries': tries,
        **ended,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--lifted', action='store_true', help='also the 200 MB answer with max_reply_bytes at 1 GB')
    parser.add_argument('--json', type=Path, help='also write the results here')
    parser.add_argument('--child', help=argparse.SUPPRESS)
    parser.add_argument('--quick', action='store_true', help=QUICK_HELP + ' (20 MB replies)')
    args = parser.parse_args(argv)
    if args.child:
        child(json.loads(args.child))
        return 0
    results = []
    with tempfile.TemporaryDirectory(prefix='niah-bench-reply-bounds-') as temporary:
        root = Path(temporary)
        corpus = quick_corpus(root)
        for index, case in enumerate(cases(20 if args.quick else 200, lifted=args.lifted)):
            results.append(run_case(case, root, corpus, index))
            print(f'{results[-1]["case"]}: {results[-1]["seconds"]} s, {results[-1]["peak_mb"]} MB', flush=True)
    rows = [
        [
            r['case'],
            f'{r["seconds"]:.1f}',
            f'{r["peak_mb"]:,}',
            f'{r["disk_bytes"]:,}',
            str(r['tries']),
            r['ended'],
        ]
        for r in results
    ]
    print()
    print('One sample per run, timeout 30 s; tries: requests the server answered; peak RSS of the run (os.wait4):')
    print(format_table(['reply', 'seconds', 'peak MB', 'disk bytes', 'tries', 'sample ended'], rows))
    bounded = [r for r in results if r['reply_bytes'] and not r['max_reply_bytes']]
    ok = all(r['peak_mb'] < PEAK_GOAL_MB and r['disk_bytes'] < DISK_GOAL_BYTES for r in bounded)
    print(f'goal: peak under {PEAK_GOAL_MB} MB and disk under {DISK_GOAL_BYTES:,} bytes: {"PASS" if ok else "MISS"}')
    record = {'peak_goal_mb': PEAK_GOAL_MB, 'disk_goal_bytes': DISK_GOAL_BYTES, 'results': results}
    if args.json:
        write_json_report(args.json, record)
    if not args.quick:
        write_record('reply_bounds', by_name(results, 'case'), report=record)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
