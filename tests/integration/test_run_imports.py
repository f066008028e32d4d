"""What a smoke run imports: matplotlib only to draw its PNG, after every sample has been sent (issue 44). Checked
in a fresh interpreter, since the test process may hold matplotlib already: the model server runs inside the run's
own process and notes, at each request, whether matplotlib has been imported yet."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip('evalscope')

REPO = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, sys
from pathlib import Path

from evalscope_niah.testing.openai_server import OpenAICompatServer, needle_finder

corpus, work_dir = sys.argv[1], sys.argv[2]
seen = []


def model(messages):
    seen.append('matplotlib' in sys.modules)
    return needle_finder(messages)


with OpenAICompatServer({'smoke-model': model}, max_seconds=300) as server:
    from evalscope import TaskConfig, run_task

    extra = {'context_lengths': [600, 1200], 'document_depth_percents': [0, 100]}
    run_task(TaskConfig(
        model='smoke-model', api_url=server.base_url, api_key='x', eval_type='openai_api',
        datasets=['needle_haystack'], limit=2, judge={'strategy': 'rule'}, work_dir=work_dir, no_timestamp=True,
        dataset_args={'needle_haystack': {'local_path': corpus, 'subset_list': ['english'], 'extra_params': extra}},
    ))
pngs = sorted(path.name for path in Path(work_dir).rglob('*.png'))
print(json.dumps({'at_requests': seen, 'at_end': 'matplotlib' in sys.modules, 'pngs': pngs}))
"""


def test_a_smoke_run_imports_matplotlib_only_after_its_samples_are_sent(tmp_path, fixture_corpus_dir) -> None:
    done = subprocess.run(
        [sys.executable, '-c', CHILD, str(fixture_corpus_dir), str(tmp_path / 'outputs')],
        cwd=REPO,
        env={**os.environ, 'HF_HUB_OFFLINE': '1'},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report['at_requests'] == [False, False]  # two samples sent, matplotlib not imported before either
    assert report['at_end'] and report['pngs']  # it was imported for the heatmap PNG the run wrote
