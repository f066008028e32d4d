"""sweep: 'adaptive' through EvalScope's run_task against the test server's simulated model: rounds chosen from the
answers, untested cells absent from every results file and listed as not tested, a run killed after a few answers
resumed with use_cache choosing the same rounds without asking again what was answered, and a server down at one
length stopping the sweep on errors (asked again, never scored as a fail), then finished by a resume once it healed."""

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

from evalscope_niah.cli import main as cli_main
from evalscope_niah.making.adaptive_plan import ERROR_ATTEMPTS
from evalscope_niah.testing.openai_server import OpenAICompatServer
from evalscope_niah.testing.responders import message_text, needle_finder
from evalscope_niah.testing.simulated import SimulatedModel
from evalscope_niah.testing.wire import approx_tokens
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
ANSWERED_BEFORE_THE_KILL = 8  # the first round sends 8 (the fewest that settle 300): the kill falls in the second

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


# ---- a server fault never decides the boundary ---------------------------------------------------------------------

OUTAGE_GRID = {
    'context_lengths': [300, 500, 700, 900, 1100],
    'document_depth_percents': [0, 50, 100],
    'num_repeats': 2,
    'sweep': 'adaptive',
}
OUTAGE_LENGTH = 900


class OutageAtOneLength:
    """Every answer right (needle_finder), but HTTP 500 to every request about ``OUTAGE_LENGTH`` tokens long (the
    server's rough count, between the grid's neighbours) until ``healed`` is set."""

    def __init__(self) -> None:
        self.healed = threading.Event()
        self.refused = 0
        self.lock = threading.Lock()

    def __call__(self, messages: list[dict]) -> str:
        tokens = approx_tokens('\n'.join(message_text(message) for message in messages))
        if not self.healed.is_set() and OUTAGE_LENGTH - 100 < tokens < OUTAGE_LENGTH + 100:
            with self.lock:
                self.refused += 1
            raise RuntimeError('the model server is down for long prompts')
        return needle_finder(messages)


def test_an_outage_at_one_length_stops_on_errors_never_a_fail_and_a_resume_after_it_healed_finishes(
    fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    register()
    model = OutageAtOneLength()
    reports = _report_dir(tmp_path)
    with OpenAICompatServer({MODEL: model}, max_seconds=120) as server:
        settings = task_settings(
            server,
            fixture_corpus_dir,
            tmp_path,
            model=MODEL,
            extra=OUTAGE_GRID,
            subsets=['english'],
            eval_batch_size=2,
            ignore_errors=True,
            generation_config={'retries': 1, 'retry_interval': 0},
            model_args={'max_retries': 0},
        )
        run_task(TaskConfig(**settings))
        plan = json.loads((reports / 'needle_haystack_sweep_plan.json').read_text())['subsets']['english']
        rows = [json.loads(line) for line in (reports / 'needle_haystack_results.jsonl').read_text().splitlines()]

        model.healed.set()
        run_task(TaskConfig(**settings, use_cache=str(tmp_path)))
        healed_plan = json.loads((reports / 'needle_haystack_sweep_plan.json').read_text())['subsets']['english']
        summary = json.loads((reports / 'needle_haystack_summary.json').read_text())

    assert plan['stop'] == 'errors'  # not 'pinned' one step short: nothing about the model was learnt at 900
    at_outage = [row for row in rows if row['context_length'] == OUTAGE_LENGTH]
    per_length = len(OUTAGE_GRID['document_depth_percents']) * OUTAGE_GRID['num_repeats']
    # Each of its samples asked ERROR_ATTEMPTS times within the run, and one row each: an error, never a score of 0.
    assert len(at_outage) == per_length and all(row['accuracy'] is None and row['error'] for row in at_outage)
    assert model.refused >= per_length * ERROR_ATTEMPTS
    assert all(row['accuracy'] == 1.0 for row in rows if row['context_length'] < OUTAGE_LENGTH)
    assert max(row['context_length'] for row in rows) == OUTAGE_LENGTH  # nothing above it was sent
    # The server healed: the resume asks only what had no answer, and the sweep walks on to the longest length.
    assert healed_plan['stop'] == 'pinned'
    assert summary['effective_context_length']['english']['length'] == OUTAGE_GRID['context_lengths'][-1]


def test_a_sweep_stopped_by_its_budget_reports_at_least_the_lengths_it_passed(
    fixture_corpus_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The model finds every needle up to 900; the budget stops the sweep after the shortest lengths. Those pass, the
    next length was never sent: the effective length is at least the longest sent (in the report, the summary and
    the heatmap), with the next length unknown and why, never a settled number the model could exceed."""
    register()
    extra = {**GRID, 'sweep_budget_prompts': 16}
    with OpenAICompatServer({MODEL: SIMULATED}) as server:
        settings = task_settings(
            server, fixture_corpus_dir, tmp_path, model=MODEL, extra=extra, subsets=['english'], eval_batch_size=1
        )
        report = run_task(TaskConfig(**settings))['needle_haystack']
    reports = _report_dir(tmp_path)
    plan = json.loads((reports / 'needle_haystack_sweep_plan.json').read_text())['subsets']['english']
    assert plan['stop'] == 'budget'
    sent = sorted({cell['context_length'] for cell in plan['cells'] if cell['sent']})
    next_length = GRID['context_lengths'][len(sent)]
    assert sent == GRID['context_lengths'][: len(sent)] and next_length <= 900  # it would have passed
    found = json.loads((reports / 'needle_haystack_summary.json').read_text())['effective_context_length']['english']
    assert found['length'] == sent[-1]
    assert found['unknown_length'] == next_length
    assert found['unknown_reason'] == f'{len(GRID["document_depth_percents"]) * GRID["num_repeats"]} samples not tested'
    reported = [m.score for m in report.metrics if m.identity.name == 'effective_context_length']
    assert reported == [sent[-1]]  # the lengths known to pass, as for any bound
    page = (reports / 'needle_haystack_heatmap_english.html').read_text(encoding='utf-8')
    assert 'samples not tested' in page
    # Redrawn by `evalscope-niah plot`: the plan is read back, so the same bound and the untested cells are drawn.
    page_file = reports / 'needle_haystack_heatmap_english.html'
    page_file.unlink()
    capsys.readouterr()
    assert cli_main(['plot', str(tmp_path)]) == 0
    assert page_file.read_text(encoding='utf-8') == page and 'ignoring' not in capsys.readouterr().err
    assert cli_main(['plot', '--served-tokens', str(tmp_path)]) == 1  # untested lengths have no served counts
    assert 'plot it without --served-tokens' in capsys.readouterr().err
    # A plan file edited into nonsense is said and left out, never half used: the rows alone are drawn.
    plan_file = reports / 'needle_haystack_sweep_plan.json'
    plan_file.write_text(plan_file.read_text().replace('"sent": 0', '"sent": -1'), encoding='utf-8')
    assert cli_main(['plot', str(tmp_path)]) == 0
    assert 'not a needle_haystack sweep plan' in capsys.readouterr().err
