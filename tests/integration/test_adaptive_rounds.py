"""sweep: 'adaptive' through EvalScope's run_task against the test server's simulated model: rounds chosen from the
answers, untested cells absent from every results file and listed as not tested, and a run killed after a few
answers resumed with use_cache choosing the same rounds without asking again what was answered."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from evalscope_niah.testing.openai_server import OpenAICompatServer
from evalscope_niah.testing.simulated import SimulatedModel
from tests.support.tasks import task_settings

pytest.importorskip('evalscope')

from evalscope import TaskConfig, run_task

from evalscope_niah.integration import register

MODEL = 'sim'
# Sharp: every answer right up to ~900 tokens (the server's rough count), every answer wrong from ~1000 on.
SIMULATED = SimulatedModel(limit=900, fall=100)
GRID = {
    'context_lengths': [300, 500, 700, 900, 1100, 1300, 1500],
    'document_depth_percents': [0, 25, 50, 75, 100],
    'num_repeats': 2,
    'sweep': 'adaptive',
}
ANSWERED_BEFORE_THE_KILL = 8  # the first round sends 6: the kill falls in the second

CHILD = """
import json, sys
from evalscope import TaskConfig, run_task
from evalscope_niah.integration import register
register()
run_task(TaskConfig(**json.loads(sys.argv[1])))
"""


class HeldAfter:
    """The simulated model, but the request after the first ``count`` waits (the run is killed meanwhile)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.calls = 0
        self.lock = threading.Lock()
        self.release = threading.Event()

    def __call__(self, messages: list[dict]) -> str:
        with self.lock:
            self.calls += 1
            held = self.calls > self.count
        if held:
            self.release.wait(120)
        return SIMULATED(messages)


def _settings(server: OpenAICompatServer, corpus_dir: Path, work_dir: Path) -> dict[str, Any]:
    return task_settings(server, corpus_dir, work_dir, model=MODEL, extra=GRID, subsets=['english'], eval_batch_size=1)


def _user_prompts(server: OpenAICompatServer) -> list[str]:
    return [json.dumps(request.messages, sort_keys=True) for request in server.requests_for(MODEL)]


def _report_dir(work_dir: Path) -> Path:
    return work_dir / 'reports' / MODEL


@pytest.fixture(scope='module')
def uninterrupted(fixture_corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    register()
    work_dir = tmp_path_factory.mktemp('whole')
    with OpenAICompatServer({MODEL: SIMULATED}) as server:
        run_task(TaskConfig(**_settings(server, fixture_corpus_dir, work_dir)))
        return work_dir, _user_prompts(server)


def test_only_the_chosen_cells_are_sent_and_the_rest_are_marked_not_tested(uninterrupted) -> None:
    work_dir, prompts = uninterrupted
    reports = _report_dir(work_dir)
    plan = json.loads((reports / 'needle_haystack_sweep_plan.json').read_text())['subsets']['english']
    assert plan['stop'] == 'pinned'
    assert plan['grid_prompts'] == 7 * 5 * 2
    assert len(prompts) == plan['sent_prompts'] < plan['grid_prompts']
    assert plan['context_lengths'] == GRID['context_lengths'] and len(plan['cells']) == 35
    tested = {(cell['context_length'], cell['depth_percent']) for cell in plan['cells'] if cell['sent']}
    untested = {(cell['context_length'], cell['depth_percent']) for cell in plan['cells'] if not cell['sent']}
    assert tested and untested
    rows = [json.loads(line) for line in (reports / 'needle_haystack_results.jsonl').read_text().splitlines()]
    assert len(rows) == plan['sent_prompts']
    assert {(row['context_length'], row['depth_percent']) for row in rows} == tested  # nothing filled in
    with (reports / 'needle_haystack_cells.csv').open() as handle:
        cells = {(int(row['context_length']), float(row['depth_percent'])) for row in csv.DictReader(handle)}
    assert cells == tested
    summary = json.loads((reports / 'needle_haystack_summary.json').read_text())
    assert {tuple(cell) for cell in summary['sweep']['english']['untested_cells']} == untested
    assert summary['effective_context_length']['english']['length'] == 900
    assert (reports / 'needle_haystack_heatmap_english.png').is_file()


def test_a_killed_run_resumes_to_the_same_rounds_without_asking_again(
    uninterrupted, fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    whole_dir, whole_prompts = uninterrupted
    work_dir = tmp_path / 'run'
    held = HeldAfter(ANSWERED_BEFORE_THE_KILL)
    # One server for both runs: the api_url is part of what EvalScope's cache checks.
    with OpenAICompatServer({MODEL: held}, max_seconds=300) as server:
        settings = _settings(server, fixture_corpus_dir, work_dir)
        child = subprocess.Popen([sys.executable, '-c', CHILD, json.dumps(settings)], stderr=subprocess.PIPE)
        try:
            assert server.wait_for_requests(ANSWERED_BEFORE_THE_KILL + 1, timeout=120), child.stderr.read()[-3000:]
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=60)
        finally:
            held.release.set()  # the held request answers nobody; the resumed run's are not held
            child.stderr.close()
        run_task(TaskConfig(**settings, use_cache=str(work_dir)))
        prompts = _user_prompts(server)
    answered = prompts[:ANSWERED_BEFORE_THE_KILL]
    resumed = prompts[ANSWERED_BEFORE_THE_KILL + 1 :]  # after the one cut by the kill
    assert not set(resumed) & set(answered)  # nothing answered before the kill is asked again
    assert sorted(answered + resumed) == sorted(whole_prompts)  # and together they are the uninterrupted run's
    plans = [
        json.loads((_report_dir(directory) / 'needle_haystack_sweep_plan.json').read_text())['subsets']['english']
        for directory in (whole_dir, work_dir)
    ]
    assert plans[0]['rounds'] == plans[1]['rounds']
    assert plans[0]['cells'] == plans[1]['cells']
