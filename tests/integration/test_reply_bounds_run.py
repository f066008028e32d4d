"""Whole runs against a server whose replies are too large (docs/en/guarantees.md, "A reply's size is bounded"):
a reply over max_reply_bytes, or with 10**6 choices, is refused before parsing, retried, and recorded as a server
fault, never a score, and the run writes little; a long reply under the cap is scored and stored cut; an honest
reply is untouched. A real run_task, the test server on 127.0.0.1 sending its replies in chunks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip('evalscope')

from evalscope import TaskConfig, run_task

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.reporting.outputs import RESULTS_FILE
from evalscope_niah.reporting.result_files import read_results
from evalscope_niah.reporting.sample_record import SampleResult
from evalscope_niah.serving.reply_bounds import MAX_KEPT_REPLY_CHARS
from evalscope_niah.testing.openai_server import (
    FaultPlan,
    Lies,
    OpenAICompatServer,
    make_judge_responder,
    needle_finder,
    overlap_grader,
)
from tests.support.reports import overall_scores
from tests.support.tasks import UNCHECKED_JUDGE, judge_block, task_settings

MODEL, JUDGE = 'huge-replies', 'huge-judge'
DEPTHS = [0, 100]
CAP = 1 << 20
# Two EvalScope attempts, no sleep; the timeout bounds each try (the cap is counted within it).
GENERATION = {'retries': 1, 'retry_interval': 0, 'timeout': 30}


def _run(
    corpus_dir: Path,
    work_dir: Path,
    *,
    faults: FaultPlan | None = None,
    lies: Lies | None = None,
    judged: bool = False,
    **extra: Any,
) -> tuple[Any, list[SampleResult], OpenAICompatServer]:
    responders = {MODEL: needle_finder, JUDGE: make_judge_responder(overlap_grader)}
    faults_by_model = {MODEL: faults} if faults else None
    with OpenAICompatServer(responders, faults_by_model, lies=lies or Lies(), max_seconds=120) as server:
        params = {'context_lengths': [600], 'document_depth_percents': DEPTHS, **extra}
        judge = {'judge': judge_block(server, JUDGE, **GENERATION)} if judged else {}
        settings = task_settings(
            server, corpus_dir, work_dir, model=MODEL, extra=params, subsets=['english'],
            generation_config=GENERATION, ignore_errors=True, **judge,
        )  # fmt: skip
        report = run_task(TaskConfig(**settings))['needle_haystack']
    return report, read_results(work_dir / 'reports' / MODEL / RESULTS_FILE), server


def _bytes_written(work_dir: Path) -> int:
    return sum(path.stat().st_size for path in work_dir.rglob('*') if path.is_file())


def _stored(work_dir: Path) -> dict[str, bytes]:
    """The prediction and review rows: EvalScope's two and three copies of each answer."""
    return {
        kind: b''.join(path.read_bytes() for path in (work_dir / kind / MODEL).glob('*.jsonl'))
        for kind in ('predictions', 'reviews')
    }


@pytest.mark.parametrize('shape', ['content', 'choices'])
def test_an_oversize_reply_is_a_server_fault_never_a_score(shape: str, fixture_corpus_dir: Path, tmp_path: Path):
    # 50 MB a reply (one answer, or about 270,000 choices); the cap reads 1 MiB of each try.
    plan = FaultPlan(huge_reply=1.0, huge_bytes=50_000_000, huge_shape=shape)
    report, results, server = _run(fixture_corpus_dir, tmp_path, faults=plan, max_reply_bytes=CAP)
    assert [r.accuracy for r in results] == [None] * len(DEPTHS)  # no score, no wrong answer
    assert all('OversizeReplyError' in r.error and 'over max_reply_bytes (1,048,576)' in r.error for r in results)
    assert report.execution_summary.errored == len(DEPTHS)
    assert server.fault_counts['huge_reply'] >= 2 * len(DEPTHS)  # retried
    assert _stored(tmp_path) == {'predictions': b'', 'reviews': b''}
    assert _bytes_written(tmp_path) < 1_000_000  # logs, config, reports: no copy of any reply


@pytest.mark.parametrize('label', ['application/json', 'text/event-stream'])
def test_more_choices_than_asked_for_are_a_server_fault(label: str, fixture_corpus_dir: Path, tmp_path: Path):
    # ~1,600 choices, under the cap. Labelled an event stream, the SDK still parses the body as JSON: counted alike.
    plan = FaultPlan(huge_reply=1.0, huge_bytes=300_000, huge_shape='choices', huge_content_type=label)
    _, results, _ = _run(fixture_corpus_dir, tmp_path, faults=plan)
    assert all(r.accuracy is None and 'choices, 1 asked for' in r.error for r in results)


def test_a_long_reply_under_the_cap_is_scored_and_stored_cut(fixture_corpus_dir: Path, tmp_path: Path):
    tail = b' ' + b'x' * 5_000_000  # 5 MB after the right answer: five copies were 25 MB on disk
    report, results, _ = _run(fixture_corpus_dir, tmp_path, lies=Lies(reply_tail=tail))
    assert [r.accuracy for r in results] == [1.0] * len(DEPTHS)  # the answer came first: kept, scored
    stored = _stored(tmp_path)
    assert stored['predictions'].count(b'chars, kept 131,072]') == 2 * len(DEPTHS)
    assert stored['reviews'].count(b'chars, kept 131,072]') == 3 * len(DEPTHS)
    assert len(stored['predictions']) + len(stored['reviews']) < 5 * len(DEPTHS) * (MAX_KEPT_REPLY_CHARS + 20_000)
    assert report.execution_summary.errored == 0


def test_an_honest_reply_is_untouched(fixture_corpus_dir: Path, tmp_path: Path):
    _, results, server = _run(fixture_corpus_dir, tmp_path)
    assert [r.accuracy for r in results] == [1.0] * len(DEPTHS)
    assert sorted(r.answer for r in results) == sorted(request.reply for request in server.requests_for(MODEL))
    assert b'[cut:' not in b''.join(_stored(tmp_path).values())


JUDGE_OVER_CAP = Lies(liars=(JUDGE,), reply_tail=b' ' + b'x' * 2 * CAP)


def test_an_oversize_judge_reply_is_a_judge_failure_and_the_rule_decides(fixture_corpus_dir: Path, tmp_path: Path):
    report, results, server = _run(
        fixture_corpus_dir, tmp_path, lies=JUDGE_OVER_CAP, judged=True, max_reply_bytes=CAP, **UNCHECKED_JUDGE
    )
    assert server.requests_for(JUDGE)
    assert [r.accuracy for r in results] == [1.0] * len(DEPTHS)  # the rule score
    assert all(r.judge_status == 'failed' for r in results)
    assert overall_scores(report)['judge_failures'] == len(DEPTHS)


def test_the_judge_check_reads_under_the_runs_cap(fixture_corpus_dir: Path, tmp_path: Path):
    # The check calls the judge before the run does: the run's cap is on the judge's client already.
    with pytest.raises(NiahConfigError, match=r'OversizeReplyError.*over max_reply_bytes \(1,048,576\)'):
        _run(fixture_corpus_dir, tmp_path, lies=JUDGE_OVER_CAP, judged=True, max_reply_bytes=CAP)
