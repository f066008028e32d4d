"""Kept fast: rerun the generation and smoke-run figures and print each next to the newest dated record, with the
change in percent. Run it before calling a change done (docs/en/performance.md).

    python benchmarks/bench_check.py [--corpus ../shared/corpus] [--repeat N] [--quick]

It runs ``bench_generation.py --grid both`` and ``bench_run.py --smoke-only`` (each in its own process, as their
own command lines do, without writing the day's record), then reads the newest ``generation-*.json`` and
``run-*.json`` under ``benchmarks/results/`` and prints one line per figure: the record's value, today's, and the
change. Times are whole processes on whatever machine this is, so compare ratios (built-in / ours, measured in the
same run) before seconds; a time that moved with its ratio unchanged is the machine, not the change.

``--quick`` runs both once on the tiny demo grid (figures mean nothing; the 'quick' rows have no record to compare
with): it checks that this script still runs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, QUICK_HELP, REPO_ROOT, RESULTS, by_name, format_table

HERE = Path(__file__).resolve().parent
# (record, the columns that name a row, the fields compared: figure name -> True where higher is better).
CHECKS = {
    'generation': (('grid', 'measurement'), {'seconds': False, 'speedup': True, 'over_generation': False}),
    'run': (('measurement', 'unit'), {'ours': False, 'ratio': True}),
}


def newest_record(name: str, results: Path = RESULTS) -> tuple[str, dict] | None:
    """(file name, figures) of the newest ``<name>-<date>.json``, by the date in its name; None without one."""
    found = sorted(results.glob(f'{name}-????-??-??.json'), key=lambda path: path.stem[-10:])
    if not found:
        return None
    return found[-1].name, json.loads(found[-1].read_text(encoding='utf-8'))['figures']


def compare(name: str, rows: list[dict], record: tuple[str, dict] | None) -> list[tuple[str, ...]]:
    """One line per figure of today's ``rows``: figure, record value, today's, change in percent, better/worse."""
    keys, fields = CHECKS[name]
    figures = by_name(rows, *keys)
    recorded = record[1] if record else {}
    lines = []
    for row_name, row in figures.items():
        for field, higher_is_better in fields.items():
            now = row.get(field)
            if now is None or (name == 'run' and row.get('unit') != 's wall'):
                continue
            before = recorded.get(row_name, {}).get(field)
            if before is None:
                lines.append((f'{row_name} / {field}', '-', f'{now:.2f}', '-', 'new'))
                continue
            change = (now - before) / before * 100 if before else 0.0
            better = (change > 0) == higher_is_better
            lines.append(
                (
                    f'{row_name} / {field}',
                    f'{before:.2f}',
                    f'{now:.2f}',
                    f'{change:+.1f}%',
                    'same' if abs(change) < 0.05 else 'better' if better else 'worse',
                )
            )
    return lines


def run_script(script: str, arguments: Sequence[str], json_file: Path) -> list[dict]:
    command = [sys.executable, str(HERE / script), *arguments, '--json', str(json_file)]
    print('$ ' + ' '.join(command[1:]), file=sys.stderr, flush=True)
    done = subprocess.run(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True, check=False)
    print(done.stdout, file=sys.stderr, flush=True)  # the script's own table and verdicts
    if done.returncode != 0:
        raise SystemExit(f'{script} failed (exit {done.returncode})')
    if not json_file.is_file():
        # bench_run writes no figures when EvalScope's built-in cannot run (no seaborn: the bench extra): every figure
        # it records is a ratio to the built-in. Its own table above still shows our times.
        print(f'{script}: no figures to compare (the built-in side was skipped: pip install -e .[bench])')
        return []
    return json.loads(json_file.read_text(encoding='utf-8'))['rows']


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--corpus', type=Path, default=DEFAULT_CORPUS, help=f'default: {DEFAULT_CORPUS}')
    parser.add_argument(
        '--repeat',
        type=int,
        help='runs per measurement in both scripts (default 2; 1 with --quick, whose figures mean nothing)',
    )
    parser.add_argument('--quick', action='store_true', help=QUICK_HELP)
    args = parser.parse_args(argv)
    if args.repeat is None:
        args.repeat = 1 if args.quick else 2
    if args.repeat < 1:
        parser.error('--repeat must be at least 1')
    common = ['--quick'] if args.quick else ['--corpus', str(args.corpus), '--no-record']
    common += ['--repeat', str(args.repeat)]
    with tempfile.TemporaryDirectory(prefix='bench-check-') as workdir:
        today = {
            'generation': run_script('bench_generation.py', [*common, '--grid', 'both'], Path(workdir) / 'g.json'),
            'run': run_script('bench_run.py', [*common, '--smoke-only'], Path(workdir) / 'r.json'),
        }
    lines = []
    for name, rows in today.items():
        record = newest_record(name)
        print(f'{name}: compared with {record[0] if record else "no record"}')
        lines += compare(name, rows, record)
    print(format_table(('figure', 'record', 'now', 'change', ''), lines))
    print('seconds: lower is better; speedup and ratio (built-in / ours): higher is better; over_generation: lower')
    return 0


if __name__ == '__main__':
    sys.exit(main())
