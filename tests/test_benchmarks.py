"""Every script in benchmarks/ still runs: each one's --quick (a tiny grid on the shipped demo corpus, no ../shared),
as its own command line in a fresh process, must exit 0 and print its table. A benchmark that stops running (as
bench_run and bench_scale did when the judge check landed) fails the suite instead of waiting for the next
measurement."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = sorted(path.name for path in (REPO / 'benchmarks').glob('bench_*.py'))
# These start real llama.cpp servers (SmolLM2 via xllamacpp; bench_router also vllm-router), like the slow tests.
NEED_LOCAL_MODEL = {'bench_router.py', 'bench_server_tokenizer.py'}
# bench_check --quick runs this one as its own command line, in its own process, on a larger quick grid (both grids):
# running it again alone would check nothing more (the bench_check case below asserts its table was printed).
RUN_BY_BENCH_CHECK = 'bench_generation.py'

# format_table's rule under the header ('----  ---') or a Markdown table's ('| --- | --- |').
TABLE_RULE = re.compile(r'^[-| ]*---[-| ]*$', re.MULTILINE)


def test_every_benchmark_is_listed() -> None:
    # A new script is picked up by the glob; this guards the glob itself (a moved folder would run nothing).
    assert {'bench_run.py', 'bench_scale.py', 'bench_generation.py', 'bench_check.py'} <= set(BENCHMARKS)


@pytest.mark.parametrize(
    'script',
    [
        pytest.param(name, marks=pytest.mark.slow) if name in NEED_LOCAL_MODEL else name
        for name in BENCHMARKS
        if name != RUN_BY_BENCH_CHECK
    ],
)
def test_quick_mode_runs_and_prints_its_table(script: str) -> None:
    env = {**os.environ, 'HF_HUB_OFFLINE': '1', 'TRANSFORMERS_VERBOSITY': 'error'}
    done = subprocess.run(
        [sys.executable, str(REPO / 'benchmarks' / script), '--quick'],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert TABLE_RULE.search(done.stdout), done.stdout[-6000:]
    if script == 'bench_check.py':  # its children's command lines and tables go to its stderr
        ran = done.stderr.split(f'{RUN_BY_BENCH_CHECK} --quick', 1)
        assert len(ran) == 2, done.stderr[-6000:]
        own_output = ran[1].split('\n$ ', 1)[0]  # up to the next script's command line
        assert TABLE_RULE.search(own_output), own_output[-6000:]


def _bench_check():
    sys.path.insert(0, str(REPO / 'benchmarks'))
    try:
        import bench_check
    finally:
        sys.path.remove(str(REPO / 'benchmarks'))
    return bench_check


def test_bench_check_compares_with_the_newest_record(tmp_path: Path) -> None:
    bench_check = _bench_check()
    for day, seconds in (('2026-11-20', 9.0), ('2026-11-28', 2.0), ('2026-11-03', 7.0)):
        figures = {'default ours warm cache': {'seconds': seconds, 'speedup': 10.0}}
        (tmp_path / f'generation-{day}.json').write_text(json.dumps({'figures': figures}))
    (tmp_path / 'generation_other-2026-12-01.json').write_text('{}')  # another benchmark's record
    name, figures = bench_check.newest_record('generation', tmp_path)
    assert name == 'generation-2026-11-28.json' and figures['default ours warm cache']['seconds'] == 2.0
    rows = [
        {'grid': 'default', 'measurement': 'ours warm cache', 'seconds': 1.0, 'speedup': 12.0, 'over_generation': None},
        {'grid': '128k', 'measurement': 'ours warm cache', 'seconds': 3.0, 'speedup': 30.0, 'over_generation': None},
    ]
    assert bench_check.compare('generation', rows, (name, figures)) == [
        ('default ours warm cache / seconds', '2.00', '1.00', '-50.0%', 'better'),
        ('default ours warm cache / speedup', '10.00', '12.00', '+20.0%', 'better'),
        ('128k ours warm cache / seconds', '-', '3.00', '-', 'new'),
        ('128k ours warm cache / speedup', '-', '30.00', '-', 'new'),
    ]
    assert bench_check.newest_record('run', tmp_path) is None


def test_bench_check_reads_a_slower_smoke_run_as_worse() -> None:
    bench_check = _bench_check()
    record = ('run-x.json', {'... beyond EvalScope, ours warm cache s wall': {'ours': 2.0, 'ratio': 5.0}})
    rows = [
        {'measurement': '... beyond EvalScope, ours warm cache', 'unit': 's wall', 'ours': 2.5, 'ratio': 4.0},
        {'measurement': 'smoke run peak RSS (info)', 'unit': 'MB', 'ours': 300.0, 'ratio': 1.2},
    ]
    assert bench_check.compare('run', rows, record) == [
        ('... beyond EvalScope, ours warm cache s wall / ours', '2.00', '2.50', '+25.0%', 'worse'),
        ('... beyond EvalScope, ours warm cache s wall / ratio', '5.00', '4.00', '-20.0%', 'worse'),
    ]
