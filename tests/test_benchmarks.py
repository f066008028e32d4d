"""Every script in benchmarks/ still runs: each one's --quick (a tiny grid on the shipped demo corpus, no ../shared),
as its own command line in a fresh process, must exit 0 and print its table. A benchmark that stops running (as
bench_run and bench_scale did when the judge check landed) fails the suite instead of waiting for the next
measurement."""

from __future__ import annotations

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
# format_table's rule under the header ('----  ---') or a Markdown table's ('| --- | --- |').
TABLE_RULE = re.compile(r'^[-| ]*---[-| ]*$', re.MULTILINE)


def test_every_benchmark_is_listed() -> None:
    # A new script is picked up by the glob; this guards the glob itself (a moved folder would run nothing).
    assert {'bench_run.py', 'bench_scale.py', 'bench_generation.py'} <= set(BENCHMARKS)


@pytest.mark.parametrize(
    'script',
    [pytest.param(name, marks=pytest.mark.slow) if name in NEED_LOCAL_MODEL else name for name in BENCHMARKS],
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
