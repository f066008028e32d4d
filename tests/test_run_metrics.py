"""The run's metrics beyond accuracy, computed from plain records (no EvalScope)."""

from __future__ import annotations

import pytest

from evalscope_niah.report import SampleResult
from evalscope_niah.run_metrics import subset_metrics


def _result(length: int, accuracy: float | None, **fields) -> SampleResult:
    values = dict(
        subset='english',
        context_length=length,
        depth_percent=50.0,
        accuracy=accuracy,
        rule_recall=accuracy,
        levenshtein=accuracy,
        judge_accuracy=None,
        judge_status='not_called',
    )
    values.update(fields)
    return SampleResult(**values)


def _by_name(records) -> dict[str, float]:
    return {record.name: record.value for record in records}


def test_effective_length_is_the_longest_length_that_holds_the_threshold() -> None:
    results = [_result(1000, 1.0), _result(2000, 0.9), _result(4000, 0.2), _result(8000, 1.0)]
    metrics = _by_name(subset_metrics(results, [], threshold=0.85, mode='absolute'))
    # 8000 passes again, but the effective length is where the leading run of passing lengths ends.
    assert metrics['effective_context_length'] == 2000


def test_errors_and_budget_failures_are_shares_of_every_sample() -> None:
    results = [_result(1000, 1.0), _result(1000, None, budget_exhausted=True)]
    errors = [_result(1000, None, error='TimeoutError: x'), _result(1000, None, error='TimeoutError: y')]
    metrics = _by_name(subset_metrics(results, errors, threshold=0.85, mode='absolute'))
    assert metrics['inference_error_rate'] == pytest.approx(2 / 4)
    assert metrics['budget_exhausted_rate'] == pytest.approx(1 / 4)


def test_controls_give_rates_and_stay_out_of_the_effective_length() -> None:
    controls = [
        _result(1000, 1.0, depth_percent=None, control=True, guessed=False),
        _result(1000, 0.0, depth_percent=None, control=True, guessed=True),
    ]
    metrics = _by_name(subset_metrics([_result(1000, 0.1), *controls], [], threshold=0.85, mode='absolute'))
    assert metrics['absent_abstention_rate'] == 0.5 and metrics['absent_guess_rate'] == 0.5
    assert metrics['effective_context_length'] == 0  # the needle sample fails; controls do not rescue it


def test_judge_agreement_is_reported_when_the_judge_answered() -> None:
    judged = [
        _result(1000, 1.0, judge_accuracy=1.0, judge_status='ok', rule_recall=1.0),
        _result(1000, 0.0, judge_accuracy=0.0, judge_status='ok', rule_recall=1.0),
    ]
    metrics = _by_name(subset_metrics(judged, [], threshold=0.85, mode='absolute'))
    assert metrics['judge_rule_agreement'] == 0.5
    assert metrics['judge_failures'] == 0
