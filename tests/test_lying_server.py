"""A server that lies: every field a model server reports about itself or a reply, each lie against a real run.

The test server (evalscope_niah.testing.openai_server, ``Lies``) answers every prompt right (``needle_finder``) but lies
in one field. Each test asserts the documented outcome (docs/en/guarantees.md): a lie in a recorded value is dropped
with one warning and the run scores as usual; a reply EvalScope cannot read is an error counted as such; a window
or tokenizer that cannot be trusted stops the run before any model request. Nothing already computed is lost.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip('evalscope')

from evalscope import TaskConfig, run_task

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.integration import replies
from evalscope_niah.integration.score_rows import LOST_SAMPLE_ERROR
from evalscope_niah.making.tokenization import shipped_qwen3_dir
from evalscope_niah.reporting.outputs import CELLS_FILE, RESULTS_FILE
from evalscope_niah.reporting.result_files import read_cells_csv, read_results
from evalscope_niah.reporting.sample_record import MAX_TEXT_CHARS, SampleResult
from evalscope_niah.serving import endpoint
from evalscope_niah.serving.server_values import shown
from evalscope_niah.testing.openai_server import (
    Lies,
    OpenAICompatServer,
    make_judge_responder,
    needle_finder,
    overlap_grader,
)
from tests.support.reports import overall_scores
from tests.support.tasks import UNCHECKED_JUDGE, judge_block, task_settings

MODEL, JUDGE = 'honest-answers', 'lying-judge'
DEPTHS = [0, 100]
# One attempt per request, no sleep: a lie is told the same way every time, so retries only cost time here.
ONCE = {'retries': 1, 'retry_interval': 0}


def _run(
    corpus_dir: Path, work_dir: Path, lies: Lies, *, judged: bool = False, max_tokens: int | None = None
) -> tuple[Any, list[SampleResult], OpenAICompatServer]:
    responders = {MODEL: needle_finder, JUDGE: make_judge_responder(overlap_grader)}
    generation = {**ONCE, **({'max_tokens': max_tokens} if max_tokens else {})}
    with OpenAICompatServer(responders, lies=lies, max_seconds=120) as server:
        extra = {'context_lengths': [600], 'document_depth_percents': DEPTHS, **UNCHECKED_JUDGE}
        judge = {'judge': judge_block(server, JUDGE, **ONCE)} if judged else {}
        settings = task_settings(
            server, corpus_dir, work_dir, model=MODEL, extra=extra, subsets=['english'], generation_config=generation,
            ignore_errors=True, **judge,
        )  # fmt: skip
        report = run_task(TaskConfig(**settings))['needle_haystack']
    return report, read_results(work_dir / 'reports' / MODEL / RESULTS_FILE), server


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == 'evalscope_niah.serving.server_values']


# ---- usage: recorded, never needed to score ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('usage', 'field'),
    [
        ({'prompt_tokens': -7}, 'usage.prompt_tokens'),
        ({'prompt_tokens': 10**15}, 'usage.prompt_tokens'),
        ({'completion_tokens': -3}, 'usage.completion_tokens'),
    ],
    ids=['negative', 'huge', 'negative-completion'],
)
def test_an_implausible_usage_count_is_dropped_with_one_warning(
    usage: dict, field: str, fixture_corpus_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        report, results, server = _run(fixture_corpus_dir, tmp_path, Lies(usage=usage))
    assert len(server.requests_for(MODEL)) == len(DEPTHS)
    assert [r.accuracy for r in results] == [1.0] * len(DEPTHS)  # scored as usual: the answers were right
    assert all(r.error is None for r in results)
    lie = next(iter(usage.values()))
    assert all(lie not in (r.served_prompt_tokens, r.served_completion_tokens) for r in results)
    warnings = _warnings(caplog)
    assert len(warnings) == 1, warnings  # one per run and field, not one per sample
    assert f'{field} = {lie}' in warnings[0] and server.base_url in warnings[0]
    if field == 'usage.prompt_tokens':  # the lie never enters the served/planned ratio
        assert 'served_prompt_ratio' not in overall_scores(report)
        assert all(r.served_prompt_tokens is None for r in results)


@pytest.mark.parametrize(
    ('usage', 'shown_value'),
    [({'prompt_tokens': 'many'}, "'many'"), ({'prompt_tokens': 7.5}, '7.5'), ({'completion_tokens': math.nan}, 'nan')],
    ids=['string', 'fraction', 'nan'],
)
def test_a_usage_evalscope_rejects_is_an_error_counted_as_such(
    usage: dict, shown_value: str, fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    report, results, server = _run(fixture_corpus_dir, tmp_path, Lies(usage=usage))
    assert len(server.requests_for(MODEL)) == len(DEPTHS)  # one request each: the same reply would come again
    assert len(results) == len(DEPTHS) and all(r.accuracy is None for r in results)
    for result in results:
        assert 'UnreadableReplyError' in result.error and 'EvalScope cannot read' in result.error
        assert f'(got {shown_value})' in result.error
    assert report.execution_summary.errored == len(DEPTHS)


def test_a_lying_completion_count_does_not_explain_a_cut_reply(
    fixture_corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replies, 'REPLY_BACKOFF_S', 0.0)
    lies = Lies(finish_reason='length', usage={'completion_tokens': 10**15})
    _, results, server = _run(fixture_corpus_dir, tmp_path, lies, max_tokens=48)
    # 10**15 >= max_tokens would say the budget was used up; dropped, the cut is a server fault, asked once more.
    assert len(server.requests_for(MODEL)) == 2 * len(DEPTHS)
    assert all(r.accuracy == 1.0 and r.budget_exhausted for r in results)  # the whole answer came before the cut


@pytest.mark.parametrize(
    ('usage', 'problem'),
    [('x', "'str' object has no attribute 'prompt_tokens'"), ({'prompt_tokens_details': [1]}, 'cached_tokens')],
    ids=['usage-string', 'details-list'],
)
def test_a_usage_of_the_wrong_shape_is_an_error_that_says_so(
    usage: Any, problem: str, fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    report, results, _ = _run(fixture_corpus_dir, tmp_path, Lies(usage=usage))
    for result in results:
        assert result.accuracy is None and 'UnreadableReplyError' in result.error
        assert "the model server's reply (AttributeError" in result.error and problem in result.error
    assert report.execution_summary.errored == len(DEPTHS)


# ---- finish reasons and model names --------------------------------------------------------------------------------


@pytest.mark.parametrize('finish_reason', ['🙂' * 1000, 123, 'stop\x00length'], ids=['long', 'number', 'nul'])
def test_an_unknown_finish_reason_is_scored_as_an_answer(
    finish_reason: Any, fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    _, results, _ = _run(fixture_corpus_dir, tmp_path, Lies(finish_reason=finish_reason))
    assert [r.accuracy for r in results] == [1.0] * len(DEPTHS)
    assert not any(r.budget_exhausted for r in results)


def test_a_long_model_name_is_harmless(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    _, results, _ = _run(fixture_corpus_dir, tmp_path, Lies(model_name='x' * 100_000))
    assert [r.accuracy for r in results] == [1.0] * len(DEPTHS)


def test_a_model_name_that_is_no_string_is_an_error_counted_as_such(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    report, results, _ = _run(fixture_corpus_dir, tmp_path, Lies(model_name={'id': 1}))
    assert all(r.accuracy is None and 'model: Input should be a valid string' in r.error for r in results)
    assert report.execution_summary.errored == len(DEPTHS)


# ---- replies: 10 MB, not UTF-8 -------------------------------------------------------------------------------------


def test_a_10_mb_reply_is_scored_and_stored_bounded(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    _, results, _ = _run(fixture_corpus_dir, tmp_path, Lies(reply_tail=b' ' + b'x' * 10_000_000))
    assert [r.accuracy for r in results] == [1.0] * len(DEPTHS)  # the right answer came first
    assert all(len(r.answer) <= MAX_TEXT_CHARS and 'cut' in r.answer for r in results)
    assert (tmp_path / 'reports' / MODEL / RESULTS_FILE).stat().st_size < 10_000


def test_a_reply_that_is_not_utf8_is_an_error_counted_as_such(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    report, results, _ = _run(fixture_corpus_dir, tmp_path, Lies(reply_tail=b' \xff\xfe'))
    assert all(r.accuracy is None and 'not UTF-8' in r.error and "b'\\xff'" in r.error for r in results)
    assert report.execution_summary.errored == len(DEPTHS)


@pytest.mark.parametrize('tail', [b' ' + b'x' * 10_000_000, b' \xff\xfe'], ids=['10MB', 'not-utf8'])
def test_a_lying_judge_falls_back_to_the_rule_score(tail: bytes, fixture_corpus_dir: Path, tmp_path: Path) -> None:
    report, results, server = _run(fixture_corpus_dir, tmp_path, Lies(liars=(JUDGE,), reply_tail=tail), judged=True)
    assert server.requests_for(JUDGE)
    assert [r.accuracy for r in results] == [1.0] * len(DEPTHS)
    if tail.startswith(b' \xff'):  # unreadable: a judge failure, counted; the rule score decides
        assert all(r.judge_status == 'failed' for r in results)
        assert overall_scores(report)['judge_failures'] == len(DEPTHS)


# ---- every sample asked ends as a row, whatever a reply held ---------------------------------------------------------

# Four samples, every second reply hostile: the honest ones show a hostile one spoils nothing around it.
EVERY_DEPTH = [0, 33, 66, 100]
# A message field and the raw JSON text the server sends as its value.
HOSTILE_MESSAGES = {
    'surrogate': {'content': '"\\ud83d"'},
    'surrogate-in-answer': {'content': '"The best thing \\udc00 to do"'},
    'surrogate-reasoning': {'reasoning_content': '"\\ud83d thinking"'},
    'nul': {'content': '"a\\u0000b"'},
    'number': {'content': '123'},
    'null': {'content': 'null'},
    'list': {'content': '[1, "x"]'},
    'object': {'content': '{"text": "x"}'},
    'bool': {'content': 'true'},
    'deep': {'content': '[' * 100_000 + ']' * 100_000},
    'reasoning-number': {'reasoning_content': '7'},
}


def _every_row(corpus_dir: Path, work_dir: Path, lies: Lies) -> tuple[Any, list[SampleResult]]:
    with OpenAICompatServer({MODEL: needle_finder}, lies=lies, max_seconds=120) as server:
        extra = {'context_lengths': [600], 'document_depth_percents': EVERY_DEPTH}
        settings = task_settings(
            server, corpus_dir, work_dir, model=MODEL, extra=extra, subsets=['english'], generation_config=ONCE,
            ignore_errors=True,
        )  # fmt: skip
        report = run_task(TaskConfig(**settings))['needle_haystack']
    return report, read_results(work_dir / 'reports' / MODEL / RESULTS_FILE)


def _assert_one_row_per_sample(work_dir: Path, results: list[SampleResult]) -> None:
    """Each sample asked is one row: scored, or an error saying why (no budget is set here); the cells CSV counts
    each of them."""
    assert sorted(r.depth_percent for r in results) == EVERY_DEPTH
    for result in results:
        assert (result.accuracy is not None) != bool(result.error), result
    cells = read_cells_csv(work_dir / 'reports' / MODEL / CELLS_FILE)
    assert sum(cell.n + cell.errors for cell in cells) == len(EVERY_DEPTH)


@pytest.mark.parametrize('message', HOSTILE_MESSAGES.values(), ids=HOSTILE_MESSAGES.keys())
def test_every_sample_asked_ends_as_a_row_whatever_the_reply_held(
    message: dict[str, str], fixture_corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replies, 'REPLY_BACKOFF_S', 0.0)
    report, results = _every_row(fixture_corpus_dir, tmp_path, Lies(message_json=message, every=2))
    _assert_one_row_per_sample(tmp_path, results)
    assert sum(r.accuracy == 1.0 for r in results) >= len(EVERY_DEPTH) // 2  # the honest replies scored as usual
    assert not any(r.error and 'LostSampleError' in r.error for r in results)  # each ended where it should
    assert report.execution_summary.errored == sum(bool(r.error) for r in results)


def test_a_lone_surrogate_is_replaced_and_recorded_and_the_answer_scored(
    fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    lies = Lies(message_json={'content': '"\\ud83d The best thing to do in San Francisco"'}, every=2)
    _, results = _every_row(fixture_corpus_dir, tmp_path, lies)
    repaired = [r for r in results if r.answer and r.answer.startswith('\ufffd')]
    assert len(repaired) == len(EVERY_DEPTH) // 2 and all(r.error is None for r in repaired)
    predictions = (tmp_path / 'predictions' / MODEL).glob('*.jsonl')
    rows = [json.loads(line) for path in predictions for line in path.read_text('utf-8').splitlines()]
    replaced = [(row['model_output']['metadata'] or {}).get('niah_replaced_surrogates') for row in rows]
    assert sorted(replaced, key=str) == [1, 1, None, None]


def test_a_sample_evalscope_fails_to_save_is_an_error_row_not_lost(
    fixture_corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the repair switched off, EvalScope's writer fails on the surrogate after our hooks returned: the path of
    # any failure we do not foresee. The ledger still gives that sample its row, counted.
    monkeypatch.setattr(replies, '_writable', lambda output: output)
    report, results = _every_row(fixture_corpus_dir, tmp_path, Lies(message_json={'content': '"\\ud83d"'}, every=2))
    _assert_one_row_per_sample(tmp_path, results)
    lost = [r for r in results if r.error]
    assert len(lost) == 2 and all(r.error == LOST_SAMPLE_ERROR for r in lost)
    assert report.execution_summary.errored == 2


def test_every_sample_lost_still_writes_its_rows(
    fixture_corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replies, '_writable', lambda output: output)
    _, results = _every_row(fixture_corpus_dir, tmp_path, Lies(message_json={'content': '"\\ud83d"'}))
    assert sorted(r.depth_percent for r in results) == EVERY_DEPTH
    assert all(r.error == LOST_SAMPLE_ERROR for r in results)


# ---- the window: stops the run before any model request ------------------------------------------------------------


@pytest.mark.parametrize('style', ['vllm', 'llama.cpp'])
@pytest.mark.parametrize('window', ['8192', 0, -4096, 10**15, 8192.0], ids=repr)
def test_an_untrustworthy_window_stops_the_run_before_any_request(
    style: str, window: Any, fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    responders = {MODEL: needle_finder}
    options = {'api_style': style, 'tokenizer_dir': str(shipped_qwen3_dir()), 'lies': Lies(window=window)}
    with OpenAICompatServer(responders, max_seconds=120, **options) as server:
        extra = {'context_lengths': [600], 'document_depth_percents': [50]}
        settings = task_settings(server, fixture_corpus_dir, tmp_path, model=MODEL, extra=extra, subsets=['english'])
        with pytest.raises(NiahConfigError) as caught:
            run_task(TaskConfig(**settings))
        assert server.requests == []
    assert caught.value.param == 'api_url'
    message = str(caught.value)
    field = 'max_model_len' if style == 'vllm' else 'n_ctx'
    assert server.url in message and field in message and f'context window as {shown(window)}' in message


# ---- tokenizer_path 'server': stops the run before any model request -----------------------------------------------


def _stopped_by_server_tokenizer(
    lies: Lies, corpus: Path, work_dir: Path, *, api_style: str, max_seconds: float
) -> tuple[NiahConfigError, str]:
    """A run with ``tokenizer_path: 'server'`` against a server whose /tokenize lies: the error it stops with
    (checked to name the parameter, before any model request) and the server's URL."""
    options = {'api_style': api_style, 'tokenizer_dir': str(shipped_qwen3_dir()), 'lies': lies}
    with OpenAICompatServer({MODEL: needle_finder}, max_seconds=max_seconds, **options) as server:
        extra = {'tokenizer_path': 'server', 'context_lengths': [600], 'document_depth_percents': [50]}
        settings = task_settings(server, corpus, work_dir, model=MODEL, extra=extra, subsets=['english'])
        with pytest.raises(NiahConfigError) as caught:
            run_task(TaskConfig(**settings))
        assert server.requests == []
    assert caught.value.param == 'tokenizer_path'
    return caught.value, server.url


@pytest.mark.parametrize('style', ['vllm', 'llama.cpp'])
@pytest.mark.parametrize(
    ('lie', 'fragment'),
    [('wrong_count', 'counts cannot be trusted'), ('garbage', "answered 'many' where a token id belongs")],
)
def test_a_lying_tokenizer_stops_the_run_before_any_request(
    style: str, lie: str, fragment: str, fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    error, server_url = _stopped_by_server_tokenizer(
        Lies(tokenize=lie), fixture_corpus_dir, tmp_path, api_style=style, max_seconds=120
    )
    assert fragment in str(error) and server_url in str(error)


def test_a_silent_tokenizer_stops_the_run_within_its_timeout(
    fixture_corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(endpoint, 'TOKENIZE_TIMEOUT_S', 1.0)  # the default (60 s) is the same code path, longer
    error, _ = _stopped_by_server_tokenizer(
        Lies(tokenize='silent'), fixture_corpus_dir, tmp_path, api_style='vllm', max_seconds=60
    )
    assert str(error).count('no answer within 1 s') == 2  # both tokenize forms were tried, each bounded
