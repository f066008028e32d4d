"""Reliability: server faults are retried, recorded, and never scored as 0; replies cut inside their reasoning are
budget failures, cut visible answers are scored as they stand.

A real HTTP server on 127.0.0.1 (evalscope_niah.testing.openai_server) injects seeded faults into the model and
the judge. The model is `needle_finder`, which always retrieves the needle: any score below 1.0 is a fault that
leaked into it.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalscope_niah.reporting.result_files import read_results
from evalscope_niah.testing.openai_server import (
    FaultPlan,
    OpenAICompatServer,
    make_judge_responder,
    needle_finder,
    overlap_grader,
)
from tests.support.reports import cell_scores, overall_scores
from tests.support.tasks import UNCHECKED_JUDGE, judge_block, task_config

pytest.importorskip('evalscope')

from evalscope import TaskConfig, run_task
from evalscope.api.model import GenerateConfig, ModelOutput, ModelUsage

from evalscope_niah.integration import replies
from evalscope_niah.integration.replies import EmptyReplyError, budget_failure, generate_checked, model_call_config

MODEL, JUDGE = 'flaky-model', 'flaky-judge'
LENGTHS, DEPTHS = [600, 1200], [0, 50, 100]
GARBAGE = 0.05 / 3  # 5 % garbage, split evenly between malformed JSON, empty content and a length cut
FAULTS = FaultPlan(
    http_500=0.20, http_429=0.10, hang=0.05, malformed_json=GARBAGE, empty_content=GARBAGE, length=GARBAGE,
    hang_seconds=3, retry_after_seconds=1,
)  # fmt: skip
# With this seed the picks give every fault kind within the first dozen requests of model and judge (asserted).
SEED = 227
# Small client timeout (hangs last 3 s) and no sleep between EvalScope's attempts; the SDK's own 2 retries stay.
FAST = {'timeout': 1, 'retries': 5, 'retry_interval': 0}
INJECTED_KINDS = ('http_500', 'http_429', 'hang', 'malformed_json', 'empty_content', 'length')


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replies, 'REPLY_BACKOFF_S', 0.0)


def _task(server: OpenAICompatServer, corpus_dir: Path, work_dir: Path, **overrides: Any) -> TaskConfig:
    extra = {'context_lengths': [600], 'document_depth_percents': [0], **UNCHECKED_JUDGE}
    options = {'subsets': ['english'], 'generation_config': dict(FAST), **overrides}
    return task_config(server, corpus_dir, work_dir, model=MODEL, extra=extra, **options)


def _judge(server: OpenAICompatServer, **generation: Any) -> dict[str, Any]:
    return judge_block(server, JUDGE, **{**FAST, **generation})


def _results(work_dir: Path) -> list:
    return read_results(work_dir / 'reports' / MODEL / 'needle_haystack_results.jsonl')


def _rows(work_dir: Path, kind: str, subset: str = 'english') -> list[dict]:
    path = work_dir / kind / MODEL / f'needle_haystack_{subset}.jsonl'
    return [json.loads(line) for line in path.read_text(encoding='utf-8').splitlines()] if path.exists() else []


def _scripted(*replies: str | None) -> Callable[[list[dict]], str]:
    """A responder that gives `replies` in order (None: the real answer), then real answers."""
    calls = iter(replies)

    def respond(messages: list[dict]) -> str:
        reply = next(calls, None)
        return needle_finder(messages) if reply is None else reply

    return respond


# --------------------------------------------------------------------------------------------------------------------
# The fault run: every kind of fault, model and judge, a 2 x 2 x 3 grid
# --------------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope='module')
def fault_run(tmp_path_factory: pytest.TempPathFactory, fixture_corpus_dir: Path) -> dict[str, Any]:
    work_dir = tmp_path_factory.mktemp('faults')
    responders = {MODEL: needle_finder, JUDGE: make_judge_responder(overlap_grader)}
    faults = {MODEL: FAULTS, JUDGE: FAULTS}
    with OpenAICompatServer(responders, faults, seed=SEED, max_requests=600, max_seconds=120) as server:
        dataset_args = {
            'needle_haystack': {
                'local_path': str(fixture_corpus_dir),
                'extra_params': {'context_lengths': LENGTHS, 'document_depth_percents': DEPTHS, **UNCHECKED_JUDGE},
            }
        }
        task = _task(server, fixture_corpus_dir, work_dir, dataset_args=dataset_args, judge=_judge(server))
        report = run_task(task)['needle_haystack']
        return {'report': report, 'work_dir': work_dir, 'faults': server.fault_counts, 'requests': server.requests}


def test_fault_run_injected_every_kind_of_fault(fault_run):
    faults = fault_run['faults']
    assert all(faults[kind] > 0 for kind in INJECTED_KINDS), faults
    assert {r.model for r in fault_run['requests'] if r.fault} == {MODEL, JUDGE}


def test_fault_run_scores_every_cell_and_never_zero(fault_run):
    scores = cell_scores(fault_run['report'])
    assert len(scores) == 2 * len(LENGTHS) * len(DEPTHS)
    assert set(scores.values()) == {1.0}
    results = _results(fault_run['work_dir'])
    assert len(results) == len(scores)
    assert all(r.accuracy == 1.0 and r.error is None and not r.budget_exhausted for r in results)


def test_fault_run_has_one_row_per_sample(fault_run):
    for subset in ('english', 'chinese'):
        for kind in ('predictions', 'reviews'):
            indices = [row['index'] for row in _rows(fault_run['work_dir'], kind, subset)]
            assert sorted(indices) == list(range(len(LENGTHS) * len(DEPTHS))), (subset, kind)


def test_fault_run_counts_apart_from_answers(fault_run):
    report, results = fault_run['report'], _results(fault_run['work_dir'])
    overall = overall_scores(report)
    assert (overall['inference_error_rate'], overall['budget_exhausted_rate']) == (0.0, 0.0)
    assert report.execution_summary.errored == 0 and not report.execution_summary.incomplete
    # Judge failures (if a fault outlived the retries) fell back to the rule score: counted, still 1.0.
    failed = sum(r.judge_status == 'failed' for r in results)
    assert overall['judge_failures'] == failed
    assert sum((report.judge_summary.failures or {}).values()) == failed
    # Each garbage reply to the model cost one extra call, recorded on the prediction it was retried for.
    discarded = [
        reply
        for subset in ('english', 'chinese')
        for row in _rows(fault_run['work_dir'], 'predictions', subset)
        for reply in (row['model_output'].get('metadata') or {}).get('niah_discarded_replies', [])
    ]
    model_garbage = [
        r.fault for r in fault_run['requests'] if r.model == MODEL and r.fault in ('empty_content', 'length')
    ]
    assert sorted(discarded) == sorted({'empty_content': 'empty', 'length': 'max_tokens'}[f] for f in model_garbage)


# --------------------------------------------------------------------------------------------------------------------
# One mechanism at a time
# --------------------------------------------------------------------------------------------------------------------


def test_empty_replies_are_retried_then_scored(tmp_path, fixture_corpus_dir, no_backoff):
    with OpenAICompatServer({MODEL: _scripted('', '  \n')}, max_seconds=60) as server:
        run_task(_task(server, fixture_corpus_dir, tmp_path))
        assert len(server.requests_for(MODEL)) == 3
    [result] = _results(tmp_path)
    assert (result.accuracy, result.error) == (1.0, None)
    [row] = _rows(tmp_path, 'predictions')
    assert row['model_output']['metadata']['niah_discarded_replies'] == ['empty', 'empty']


def test_a_sample_that_stays_empty_is_an_error_and_resume_retries_it(tmp_path, fixture_corpus_dir, no_backoff):
    """Two samples, one at a time: the first sent gets three empty replies, the second a real answer. The first
    sent is the depth-100 sample (index 1): prefix-friendly order opens a length with its deepest needle."""
    dataset_args = {
        'needle_haystack': {
            'local_path': str(fixture_corpus_dir),
            'subset_list': ['english'],
            'extra_params': {'context_lengths': [600], 'document_depth_percents': [0, 100], **UNCHECKED_JUDGE},
        }
    }
    with OpenAICompatServer({MODEL: _scripted('', '', '')}, max_seconds=60) as server:
        settings = {'dataset_args': dataset_args, 'eval_batch_size': 1, 'ignore_errors': True}
        report = run_task(_task(server, fixture_corpus_dir, tmp_path, **settings))['needle_haystack']
        assert len(server.requests_for(MODEL)) == 4
        errored, scored = sorted(_results(tmp_path), key=lambda r: r.accuracy is not None)
        assert (errored.accuracy, errored.budget_exhausted) == (None, False)
        assert errored.error.startswith('EmptyReplyError') and (errored.context_length, errored.depth_percent) == (
            600,
            100.0,
        )
        assert scored.accuracy == 1.0
        assert overall_scores(report)['inference_error_rate'] == 0.5 and report.execution_summary.errored == 1
        with open(tmp_path / 'reports' / MODEL / 'needle_haystack_cells.csv', encoding='utf-8') as handle:
            cells = {row['depth_percent']: row for row in csv.DictReader(handle)}
        assert (cells['100.0']['n'], cells['100.0']['errors'], cells['100.0']['accuracy']) == ('0', '1', '')
        # Nothing was written for the errored sample, so a resumed run asks for it again, and only for it.
        assert [row['index'] for row in _rows(tmp_path, 'predictions')] == [0]
        run_task(_task(server, fixture_corpus_dir, tmp_path, use_cache=str(tmp_path), **settings))
        assert len(server.requests_for(MODEL)) == 5
    assert sorted(r.accuracy for r in _results(tmp_path)) == [1.0, 1.0]
    for kind in ('predictions', 'reviews'):
        assert sorted(row['index'] for row in _rows(tmp_path, kind)) == [0, 1]


def test_when_every_sample_errors_the_errors_are_still_written(tmp_path, fixture_corpus_dir, no_backoff):
    with OpenAICompatServer({MODEL: needle_finder}, {MODEL: FaultPlan(empty_content=1.0)}, max_seconds=60) as server:
        run_task(_task(server, fixture_corpus_dir, tmp_path, ignore_errors=True))
    [result] = _results(tmp_path)
    assert result.accuracy is None and 'EmptyReplyError' in result.error


def test_without_ignore_errors_an_empty_sample_stops_the_run_unscored(tmp_path, fixture_corpus_dir, no_backoff):
    faults = {MODEL: FaultPlan(empty_content=1.0)}
    with OpenAICompatServer({MODEL: needle_finder}, faults, max_seconds=60) as server, pytest.raises(EmptyReplyError):
        run_task(_task(server, fixture_corpus_dir, tmp_path))
    assert _rows(tmp_path, 'reviews') == [] and _rows(tmp_path, 'predictions') == []


def _thinking_only(messages: list[dict]) -> str:
    return '<think>The question asks about San Francisco. Let me look through the essays one by one'


def _answer_then_ramble(messages: list[dict]) -> str:
    return f'{needle_finder(messages)} Also, ' + 'the essays go on about startups and painting. ' * 8


def test_a_reply_cut_before_its_answer_is_a_budget_failure(tmp_path, fixture_corpus_dir, no_backoff):
    """The server cuts every reply in half with finish_reason=length: the model is still inside <think>."""
    faults = {MODEL: FaultPlan(length=1.0)}
    with OpenAICompatServer({MODEL: _thinking_only, JUDGE: make_judge_responder(overlap_grader)}, faults) as server:
        task = _task(server, fixture_corpus_dir, tmp_path, judge=_judge(server), generation_config=FAST)
        report = run_task(task)['needle_haystack']
        # Retried once: no max_tokens explains the cut (a cut that heals was garbage).
        assert len(server.requests_for(MODEL)) == 2
        assert server.requests_for(JUDGE) == []  # no final answer began: nothing to judge
    [result] = _results(tmp_path)
    assert (result.accuracy, result.error, result.budget_exhausted) == (None, None, True)
    [review] = _rows(tmp_path, 'reviews')
    score = review['sample_score']['score']
    assert (score['value'], score['status'], score['metadata']['budget_exhausted']) == ({}, 'excluded', True)
    overall = overall_scores(report)
    assert (overall['budget_exhausted_rate'], overall['inference_error_rate']) == (1.0, 0.0)
    assert 'accuracy' not in overall  # no score at all, rather than a 0


@pytest.mark.parametrize(('max_tokens', 'requests'), [(None, 2), (4, 1)], ids=['cut-short-of-budget', 'whole-budget'])
def test_a_visible_answer_cut_before_its_fact_is_scored_as_it_stands(
    tmp_path, fixture_corpus_dir, no_backoff, max_tokens, requests
):
    """Half of the needle sentence, cut before the fact: a wrong answer, scored as such and counted as cut, not left
    out (leaving out exactly the cut wrong answers would raise the mean)."""
    faults = {MODEL: FaultPlan(length=1.0)}
    generation = {**FAST, 'max_tokens': max_tokens} if max_tokens else FAST
    with OpenAICompatServer({MODEL: needle_finder, JUDGE: make_judge_responder(overlap_grader)}, faults) as server:
        task = _task(server, fixture_corpus_dir, tmp_path, judge=_judge(server), generation_config=generation)
        report = run_task(task)['needle_haystack']
        assert len(server.requests_for(MODEL)) == requests
    [result] = _results(tmp_path)
    assert (result.error, result.budget_exhausted) == (None, True)
    assert result.accuracy is not None and result.accuracy < 0.5  # scored, and as the wrong answer it is
    overall = overall_scores(report)
    assert overall['accuracy'] == pytest.approx(result.accuracy, abs=1e-4)  # the report rounds to 4 places
    assert (overall['budget_exhausted_rate'], overall['inference_error_rate']) == (1.0, 0.0)


def test_a_reply_cut_after_its_answer_is_scored_and_counted(tmp_path, fixture_corpus_dir, no_backoff):
    faults = {MODEL: FaultPlan(length=1.0)}
    with OpenAICompatServer({MODEL: _answer_then_ramble, JUDGE: make_judge_responder(overlap_grader)}, faults) as s:
        report = run_task(_task(s, fixture_corpus_dir, tmp_path, judge=_judge(s)))['needle_haystack']
        assert len(s.requests_for(JUDGE)) == 1
    [result] = _results(tmp_path)
    assert (result.accuracy, result.judge_status, result.budget_exhausted) == (1.0, 'ok', True)
    overall = overall_scores(report)
    assert (overall['accuracy'], overall['budget_exhausted_rate'], overall['inference_error_rate']) == (1.0, 1.0, 0.0)


def test_reasoning_is_stripped_before_scoring(tmp_path, fixture_corpus_dir):
    def thinking(messages: list[dict]) -> str:
        return f'<think>Wrong guess: eat pizza in Ohio.</think>\n{needle_finder(messages)}'

    with OpenAICompatServer({MODEL: thinking}) as server:
        run_task(_task(server, fixture_corpus_dir, tmp_path))
    [result] = _results(tmp_path)
    assert result.accuracy == 1.0


@pytest.mark.parametrize(
    ('fault', 'verdict'),
    [
        ('malformed_json', None),
        ('empty_content', None),
        ('length', None),
        ('http_500', None),
        (None, 'I would rather not grade this.'),  # 200 with an unparsable verdict
    ],
    ids=['malformed_json', 'empty_content', 'length', 'http_500', 'unparsable'],
)
def test_judge_faults_fall_back_to_the_rule_score_and_are_counted(
    tmp_path, fixture_corpus_dir, no_backoff, fault, verdict
):
    judge_responder = make_judge_responder(overlap_grader) if verdict is None else _scripted(verdict, verdict)
    faults = {JUDGE: FaultPlan(**{fault: 1.0})} if fault else {}
    with OpenAICompatServer({MODEL: needle_finder, JUDGE: judge_responder}, faults) as server:
        judge = _judge(server, retries=2)
        report = run_task(_task(server, fixture_corpus_dir, tmp_path, judge=judge))['needle_haystack']
    [result] = _results(tmp_path)
    assert (result.accuracy, result.judge_status, result.error) == (1.0, 'failed', None)
    assert overall_scores(report)['judge_failures'] == 1.0
    assert report.judge_summary.status == 'degraded'
    assert sum(report.judge_summary.failures.values()) == 1
    [review] = _rows(tmp_path, 'reviews')
    assert review['sample_score']['score']['status'] == 'degraded'


# --------------------------------------------------------------------------------------------------------------------
# Pure pieces
# --------------------------------------------------------------------------------------------------------------------


def _output(content: str, stop_reason: str = 'stop') -> ModelOutput:
    return ModelOutput.from_content(model=MODEL, content=content, stop_reason=stop_reason)  # type: ignore[arg-type]


def test_budget_failure_reads_the_stop_reason():
    assert budget_failure(_output('half an answ', 'max_tokens')) == 'token limit'
    overflow = _output("This model's maximum context length is 8192 tokens", 'model_length')
    assert budget_failure(overflow) == 'context window'
    assert budget_failure(_output('The answer.')) is None
    assert budget_failure(None) is None


def test_generate_checked_bounds_its_calls(no_backoff):
    def calls(*outputs: ModelOutput) -> tuple[Callable[[], ModelOutput], list[int]]:
        count = [0]

        def call() -> ModelOutput:
            count[0] += 1
            return outputs[min(count[0], len(outputs)) - 1]

        return call, count

    call, count = calls(_output('overflow', 'model_length'))
    assert generate_checked(call, what='model').stop_reason == 'model_length' and count == [1]  # never retried
    call, count = calls(_output('cut', 'max_tokens'))
    assert generate_checked(call, what='model').stop_reason == 'max_tokens' and count == [2]  # retried once
    cut = _output('cut', 'max_tokens')
    cut.usage = ModelUsage(output_tokens=48, total_tokens=48)
    call, count = calls(cut)
    assert generate_checked(call, what='model', max_tokens=48) is cut and count == [1]  # the budget explains it
    call, count = calls(_output(''))
    with pytest.raises(EmptyReplyError):
        generate_checked(call, what='model')
    assert count == [replies.REPLY_ATTEMPTS]


def test_default_timeout_grows_with_the_prompt_tokens_in_flight():
    assert model_call_config(GenerateConfig(timeout=30), 128_000) is None  # the user's timeout wins
    assert model_call_config(GenerateConfig(batch_size=8), 4_000).timeout == replies.MIN_TIMEOUT_S
    assert model_call_config(GenerateConfig(batch_size=8), 128_000).timeout == 8 * 128_000 / 500


# An outage that hits one length of the grid, every time (a replica that cannot hold it): the prompt token ranges the
# test server counts (its approximation, not the grid's tokenizer) around each length of OUTAGE_LENGTHS.
OUTAGE_LENGTHS = [500, 1000, 1500]
OUTAGE_AT = {500: (0, 750), 1000: (750, 1250)}


def _outage_run(work_dir: Path, corpus_dir: Path, length: int) -> tuple[Any, dict[str, Any]]:
    """A model that answers every sample right, behind a server that answers HTTP 500 to every request at
    ``length``, run with ignore_errors: the report and the summary's effective length of the subset."""
    extra = {'context_lengths': OUTAGE_LENGTHS, 'document_depth_percents': [0, 50, 100], **UNCHECKED_JUDGE}
    faults = {MODEL: FaultPlan(outage_prompt_tokens=OUTAGE_AT[length])}
    with OpenAICompatServer({MODEL: needle_finder}, faults, max_seconds=120) as server:
        config = task_config(
            server, corpus_dir, work_dir, model=MODEL, extra=extra, subsets=['english'], ignore_errors=True,
            generation_config={**FAST, 'retries': 1},
        )  # fmt: skip
        report = run_task(config)['needle_haystack']
    summary = json.loads((work_dir / 'reports' / MODEL / 'needle_haystack_summary.json').read_text(encoding='utf-8'))
    return report, summary['effective_context_length']['english']


def test_an_outage_at_one_length_bounds_the_effective_length_and_never_moves_it(
    tmp_path, fixture_corpus_dir, no_backoff, caplog
):
    """Every sample at 1,000 tokens errored: the model answered everything it was asked right, so the effective length
    is 'at least 500; 1k unknown: 3 server errors' in the summary, the cells CSV, the console and the heatmaps, never
    500 as if 1,000 had failed."""
    with caplog.at_level('WARNING', logger='evalscope_niah'):
        report, effective = _outage_run(tmp_path, fixture_corpus_dir, 1000)
    assert (effective['length'], effective['unknown_length'], effective['unknown_reason']) == (
        500,
        1000,
        '3 server errors',
    )
    assert [item['status'] for item in effective['per_length']] == ['pass', 'unknown', 'pass']
    assert [item['n'] for item in effective['per_length']] == [3, 0, 3]
    assert overall_scores(report)['effective_context_length'] == 500  # the lengths known to pass (docs say so)
    report_dir = tmp_path / 'reports' / MODEL
    with open(report_dir / 'needle_haystack_cells.csv', encoding='utf-8') as handle:
        rows = list(csv.DictReader(handle))
    assert {(row['context_length'], row['unknown'], row['errors']) for row in rows} == {
        ('500', '', '0'),
        ('1000', '1 server error', '1'),
        ('1500', '', '0'),
    }
    assert any(
        'subset english: effective context length at least 500; 1,000 unknown: 3 server errors' in record.getMessage()
        for record in caplog.records
    )
    html = (report_dir / 'needle_haystack_heatmap_english.html').read_text(encoding='utf-8')
    assert 'effective context length: at least 500; 1k unknown: 3 server errors' in html


def test_an_outage_at_the_shortest_length_leaves_the_effective_length_unknown(tmp_path, fixture_corpus_dir, no_backoff):
    report, effective = _outage_run(tmp_path, fixture_corpus_dir, 500)
    assert (effective['length'], effective['unknown_length'], effective['unknown_reason']) == (
        None,
        500,
        '3 server errors',
    )
    assert [item['status'] for item in effective['per_length']] == ['unknown', 'pass', 'pass']
    assert 'effective_context_length' not in overall_scores(report)  # no 0 that would read as a failure
