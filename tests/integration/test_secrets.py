"""Secrets never stored: servers that quote the API key back (a 401 echoing it, a judge reply holding it) leave it
in no file of the run and in nothing printed; the key is sent, and only redacted text is kept."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

pytest.importorskip('evalscope')

from evalscope import TaskConfig, run_task

from evalscope_niah.reporting.outputs import JUDGE_CHECK_FILE, RESULTS_FILE
from evalscope_niah.reporting.result_files import read_results
from evalscope_niah.serving.redact import REDACTED
from evalscope_niah.testing.openai_server import FaultPlan, OpenAICompatServer, make_judge_responder, needle_finder
from tests.support.tasks import UNCHECKED_JUDGE, judge_block, task_settings

MODEL, JUDGE = 'mock-model', 'mock-judge'
MODEL_KEY, JUDGE_KEY = 'sk-model-0123456789abcdef', 'sk-judge-fedcba9876543210'
EXTRA = {'context_lengths': [600], 'document_depth_percents': [50]}


def _settings(server: OpenAICompatServer, corpus_dir: Path, work_dir: Path, **extra) -> dict:
    judge = judge_block(server, JUDGE)
    judge['models'][0]['api_key'] = JUDGE_KEY
    return task_settings(
        server,
        corpus_dir,
        work_dir,
        model=MODEL,
        extra={**EXTRA, **extra},
        subsets=['english'],
        api_key=MODEL_KEY,
        judge=judge,
        ignore_errors=True,
    )


def _files_holding(work_dir: Path, *secrets: str) -> list[str]:
    return sorted(
        str(path.relative_to(work_dir))
        for path in work_dir.rglob('*')
        if path.is_file() and any(secret.encode() in path.read_bytes() for secret in secrets)
    )


def _printed(capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> str:
    out, err = capfd.readouterr()
    return out + err + caplog.text


def _sent_key(server: OpenAICompatServer, model: str) -> str:
    return server.requests_for(model)[0].headers['authorization']


def test_a_model_server_echoing_its_key_in_a_401_leaves_it_nowhere(
    fixture_corpus_dir: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    faults = {MODEL: FaultPlan(echo_key_status=401)}
    with OpenAICompatServer({MODEL: needle_finder}, faults, max_seconds=60) as server:
        run_task(TaskConfig(**_settings(server, fixture_corpus_dir, tmp_path, **UNCHECKED_JUDGE)))
        assert _sent_key(server, MODEL) == f'Bearer {MODEL_KEY}'
    [result] = read_results(tmp_path / 'reports' / MODEL / RESULTS_FILE)
    # The error stays readable, and says what happened: only the key is gone.
    assert result.accuracy is None and result.error.startswith('AuthenticationError: Error code: 401')
    assert f'Incorrect API key provided: {REDACTED}' in result.error
    assert _files_holding(tmp_path, MODEL_KEY, JUDGE_KEY) == []
    printed = _printed(capfd, caplog)
    assert MODEL_KEY not in printed and REDACTED in printed  # EvalScope's own error log reads the redacted error


def test_a_retried_error_echoing_the_key_is_logged_redacted(
    fixture_corpus_dir: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """A 500 is retried inside EvalScope, which logs each failed attempt before the call comes back to us."""
    caplog.set_level(logging.INFO)
    faults = {MODEL: FaultPlan(echo_key_status=500)}
    with OpenAICompatServer({MODEL: needle_finder}, faults, max_seconds=60) as server:
        settings = _settings(server, fixture_corpus_dir, tmp_path, **UNCHECKED_JUDGE)
        # Two attempts; EvalScope logs a failed one only when it waits before the next.
        settings.update(generation_config={'retries': 2, 'retry_interval': 1}, model_args={'max_retries': 0})
        run_task(TaskConfig(**settings))
        assert len(server.requests_for(MODEL)) == 2  # retried once
    printed = _printed(capfd, caplog)
    assert 'Attempt 1 / 2 failed' in printed and MODEL_KEY not in printed
    assert _files_holding(tmp_path, MODEL_KEY, JUDGE_KEY) == []


@pytest.mark.parametrize('judge_check', ['fallback', 'off'])
def test_a_judge_echoing_its_key_in_a_401_leaves_it_nowhere(
    judge_check: str,
    fixture_corpus_dir: Path,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The judge check's warnings and file ('fallback'), and the reviews of a run that judges ('off')."""
    caplog.set_level(logging.INFO)
    faults = {JUDGE: FaultPlan(echo_key_status=401)}
    judge = make_judge_responder(lambda question, reference, answer: 10)
    with OpenAICompatServer({MODEL: needle_finder, JUDGE: judge}, faults, max_seconds=60) as server:
        run_task(TaskConfig(**_settings(server, fixture_corpus_dir, tmp_path, judge_check=judge_check)))
        assert _sent_key(server, JUDGE) == f'Bearer {JUDGE_KEY}'
    assert _files_holding(tmp_path, MODEL_KEY, JUDGE_KEY) == []
    printed = _printed(capfd, caplog)
    assert JUDGE_KEY not in printed
    if judge_check == 'fallback':
        warnings = [
            record.getMessage() for record in caplog.records if 'calibration call failed' in record.getMessage()
        ]
        # The check names the failure, not the server's body (judge_failures): the key has nowhere to come through.
        assert warnings and all('rejected the API key' in warning for warning in warnings)
    else:
        [review] = [json.loads(line) for line in next((tmp_path / 'reviews' / MODEL).glob('*.jsonl')).open()]
        assert REDACTED in json.dumps(review)  # the judge's failed attempt keeps its (redacted) error


def test_a_judge_reply_quoting_its_key_is_stored_redacted(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    def leaky_judge(messages: list[dict]) -> str:
        return json.dumps({'reasoning': f'I was called with {JUDGE_KEY}.', 'rating': 10})

    with OpenAICompatServer({MODEL: needle_finder, JUDGE: leaky_judge}, max_seconds=60) as server:
        run_task(TaskConfig(**_settings(server, fixture_corpus_dir, tmp_path, judge_check='fallback')))
    check = json.loads((tmp_path / 'reports' / MODEL / JUDGE_CHECK_FILE).read_text(encoding='utf-8'))
    item = check['english']['items'][0]
    assert REDACTED in item['reply'] and item['reason'] == f'I was called with {REDACTED}.'
    assert _files_holding(tmp_path, MODEL_KEY, JUDGE_KEY) == []


def test_every_secret_of_the_task_config_is_collected(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    from evalscope_niah.integration.secrets import configured_secrets

    with OpenAICompatServer({MODEL: needle_finder}, max_seconds=60) as server:
        settings = _settings(server, fixture_corpus_dir, tmp_path)
    settings['generation_config'] = {'extra_headers': {'Authorization': 'Bearer header-token-0123456789'}}
    secrets = configured_secrets(TaskConfig(**settings))
    assert {MODEL_KEY, JUDGE_KEY, 'Bearer header-token-0123456789', 'header-token-0123456789'} <= set(secrets)
