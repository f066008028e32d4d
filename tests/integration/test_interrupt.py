"""Whole-request deadlines in a real run, and Ctrl-C: a dripping model or judge is given up on near its timeout and
recorded as a fault (never scored); the first Ctrl-C stops a run blocked on a dripping server within seconds, keeps
what finished and says in one line how to resume.

The test server drips (FaultPlan.drip: headers, then one byte every 0.2 s for up to 60 s), so each read of the client
is quick: only the deadline ends these requests. Drips stop on their own, so a failing test cannot hang for ever.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip('evalscope')

from evalscope import run_task

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.integration.interrupt import install_deadline
from evalscope_niah.reporting.result_files import read_results
from evalscope_niah.testing.openai_server import (
    FaultPlan,
    OpenAICompatServer,
    make_judge_responder,
    needle_finder,
    overlap_grader,
)
from tests.support.tasks import UNCHECKED_JUDGE, judge_block, task_config, task_settings

MODEL, JUDGE = 'dripping-model', 'dripping-judge'
DRIP = FaultPlan(drip=1.0, drip_interval_s=0.2, drip_seconds=60)
# A 2 s deadline, one EvalScope attempt (the openai SDK still makes its own 3), no sleep between attempts.
QUICK = {'timeout': 2, 'retries': 1, 'retry_interval': 0}
EXTRA = {'context_lengths': [600], 'document_depth_percents': [0]}
REPO = Path(__file__).resolve().parents[2]


def _results(work_dir: Path) -> list:
    return read_results(work_dir / 'reports' / MODEL / 'needle_haystack_results.jsonl')


def _predictions(work_dir: Path, model: str = MODEL) -> list[dict]:
    path = work_dir / 'predictions' / model / 'needle_haystack_english.jsonl'
    return [json.loads(line) for line in path.read_text(encoding='utf-8').splitlines()] if path.exists() else []


def test_evalscopes_openai_model_gets_the_deadline_once():
    # install_deadline reaches into the openai SDK's client (its private httpx client): this fails if that moves.
    from evalscope.models.openai_compatible import OpenAICompatibleAPI

    api = OpenAICompatibleAPI(model_name='m', base_url='http://127.0.0.1:9/v1', api_key='x')
    assert install_deadline(api) is True
    transport = api.client._client._transport
    assert getattr(transport, 'has_deadline', False)
    assert install_deadline(api) is True and api.client._client._transport is transport
    assert install_deadline(object()) is False


@pytest.mark.parametrize('fault', ['drip', 'long_body'])
def test_a_model_that_never_finishes_its_reply_is_an_error_not_a_score(tmp_path, fixture_corpus_dir, fault):
    plan = FaultPlan(**{fault: 1.0}, drip_interval_s=0.2, drip_seconds=60, hang_seconds=60)
    with OpenAICompatServer({MODEL: needle_finder}, {MODEL: plan}, max_seconds=120) as server:
        task = task_config(
            server, fixture_corpus_dir, tmp_path, model=MODEL, extra={**EXTRA, **UNCHECKED_JUDGE},
            subsets=['english'], generation_config=QUICK, ignore_errors=True,
        )  # fmt: skip
        run_task(task)
        assert server.fault_counts[fault] == len(server.requests_for(MODEL)) >= 1
    [result] = _results(tmp_path)
    assert result.accuracy is None and 'Timeout' in result.error
    assert _predictions(tmp_path) == []  # nothing saved: --use-cache asks again


def test_a_dripping_judge_falls_back_to_the_rule_score_and_is_counted(tmp_path, fixture_corpus_dir):
    responders = {MODEL: needle_finder, JUDGE: make_judge_responder(overlap_grader)}
    with OpenAICompatServer(responders, {JUDGE: DRIP}, max_seconds=120) as server:
        task = task_config(
            server, fixture_corpus_dir, tmp_path, model=MODEL, extra={**EXTRA, **UNCHECKED_JUDGE},
            subsets=['english'], judge=judge_block(server, JUDGE, **QUICK),
        )  # fmt: skip
        run_task(task)
        assert server.fault_counts['drip'] == len(server.requests_for(JUDGE)) >= 1
    [result] = _results(tmp_path)
    assert (result.accuracy, result.judge_status, result.error) == (1.0, 'failed', None)


def test_a_dripping_judge_fails_the_judge_check_before_the_model_runs(tmp_path, fixture_corpus_dir):
    responders = {MODEL: needle_finder, JUDGE: make_judge_responder(overlap_grader)}
    with OpenAICompatServer(responders, {JUDGE: DRIP}, max_seconds=120) as server:
        task = task_config(
            server, fixture_corpus_dir, tmp_path, model=MODEL, extra=EXTRA, subsets=['english'],
            judge=judge_block(server, JUDGE, **QUICK),
        )  # fmt: skip
        with pytest.raises(NiahConfigError) as error:
            run_task(task)
        assert server.requests_for(JUDGE) and server.requests_for(MODEL) == []
    assert error.value.param == 'judge_check'
    # Given up at its deadline (a timeout), not when the server stopped dripping (a dropped connection).
    assert 'did not answer in time' in str(error.value), error.value


# The first request is answered, the second drips (seeded picks of FaultPlan(drip=0.5) for this model name).
_SEED = 2
_INTERRUPTED_RUN = """
import json, sys
from evalscope import TaskConfig, run_task
run_task(TaskConfig(**json.loads(sys.argv[1])))
"""


def _command(how: str, settings: dict[str, Any]) -> list[str]:
    if how == 'run_task':
        return [sys.executable, '-c', _INTERRUPTED_RUN, json.dumps(settings)]
    return [
        str(Path(sys.executable).with_name('evalscope-niah')), 'eval', '--model', settings['model'],
        '--api-url', settings['api_url'], '--api-key', 'x', '--datasets', 'needle_haystack',
        '--dataset-args', json.dumps(settings['dataset_args']), '--judge', json.dumps(settings['judge']),
        '--eval-batch-size', '1', '--generation-config', json.dumps(settings['generation_config']),
        '--work-dir', settings['work_dir'], '--no-timestamp',
    ]  # fmt: skip


def _interrupt(server: OpenAICompatServer, settings: dict[str, Any], how: str, requests: int) -> str:
    """Run in a child process; Ctrl-C once the server has ``requests`` requests; the output, once it has ended."""
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(REPO), os.environ.get('PYTHONPATH', '')])}
    process = subprocess.Popen(
        _command(how, settings), cwd=settings['work_dir'], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    try:
        assert server.wait_for_requests(requests, timeout=120), f'the run never sent request {requests}'
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)  # the drip would last 60 s, the deadline 60 s
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, output
    assert 'Traceback' not in output, output
    [line] = [line for line in output.splitlines() if '--use-cache' in line]
    assert f'--use-cache {settings["work_dir"]}' in line and 'interrupted' in line
    return output


@pytest.mark.parametrize('how', ['run_task', 'evalscope-niah eval'])
def test_the_first_ctrl_c_stops_a_run_blocked_on_a_dripping_server(tmp_path, fixture_corpus_dir, how):
    plan = FaultPlan(drip=0.5, drip_interval_s=0.2, drip_seconds=60)
    with OpenAICompatServer({'slow-model': needle_finder}, {'slow-model': plan}, _SEED, max_seconds=120) as server:
        settings: dict[str, Any] = task_settings(
            server, fixture_corpus_dir, tmp_path, model='slow-model',
            extra={'context_lengths': [600, 700], 'document_depth_percents': [0], **UNCHECKED_JUDGE},
            subsets=['english'], eval_batch_size=1, generation_config={'timeout': 60, 'retries': 5},
        )  # fmt: skip
        _interrupt(server, settings, how, requests=2)
        assert server.fault_counts['drip'] == 1
    # The answered sample is kept; the cut one has no row, so a resume asks for it again.
    [kept] = _predictions(tmp_path, 'slow-model')
    assert server.requests[0].reply in json.dumps(kept, ensure_ascii=False)


def test_the_first_ctrl_c_stops_a_judge_check_blocked_on_a_dripping_judge(tmp_path, fixture_corpus_dir):
    responders = {MODEL: needle_finder, JUDGE: make_judge_responder(overlap_grader)}
    with OpenAICompatServer(responders, {JUDGE: DRIP}, max_seconds=120) as server:
        settings = task_settings(
            server, fixture_corpus_dir, tmp_path, model=MODEL, extra=EXTRA, subsets=['english'],
            judge=judge_block(server, JUDGE, timeout=60, retries=5), generation_config={'timeout': 60},
        )  # fmt: skip
        _interrupt(server, settings, 'run_task', requests=1)
        assert server.requests_for(MODEL) == []
