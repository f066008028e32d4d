"""The run's metrics beyond accuracy, computed from plain records (no EvalScope)."""

from __future__ import annotations

import pytest

from evalscope_niah.reporting.length_status import EffectiveBound
from evalscope_niah.reporting.run_metrics import effective_length_message, subset_metrics
from evalscope_niah.reporting.sample_record import SampleResult
from evalscope_niah.reporting.stats import effective_context_length


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


def test_a_bounded_effective_length_reports_what_is_known_to_pass_and_an_unknown_one_nothing() -> None:
    # Every sample at 2000 errored: 1000 is known to pass (a bound), never 1000 as if 2000 had failed in words, and
    # the message the run logs says so; with the shortest length errored nothing is known, so no 0 is reported.
    errors = [_result(2000, None, error='HTTP 500'), _result(2000, None, error='HTTP 500')]
    metrics = _by_name(
        subset_metrics([_result(1000, 1.0), _result(4000, 1.0)], errors, threshold=0.85, mode='absolute')
    )
    assert metrics['effective_context_length'] == 1000
    bound = effective_context_length([_result(1000, 1.0), *errors], subset='english', threshold=0.85).bound
    assert effective_length_message(bound, subset='english', tokenizer='Qwen/Qwen3-0.6B') == (
        'subset english: effective context length at least 1,000; 2,000 unknown: 2 server errors (Qwen3 tokens): '
        'unknown, not failed; resume the run with --use-cache DIR to retry the errored samples'
    )
    assert effective_length_message(EffectiveBound(1000), subset='en', tokenizer=None) is None
    shortest_down = [_result(1000, None, error='HTTP 500'), _result(2000, 1.0)]
    assert 'effective_context_length' not in _by_name(
        subset_metrics([], shortest_down, threshold=0.85, mode='absolute')
    )


def test_errors_and_budget_failures_are_shares_of_every_sample() -> None:
    results = [_result(1000, 1.0), _result(1000, None, budget_exhausted=True)]
    errors = [_result(1000, None, error='TimeoutError: x'), _result(1000, None, error='TimeoutError: y')]
    metrics = _by_name(subset_metrics(results, errors, threshold=0.85, mode='absolute'))
    assert metrics['inference_error_rate'] == pytest.approx(2 / 4)
    assert metrics['budget_exhausted_rate'] == pytest.approx(1 / 4)
    assert metrics['no_answer_rate'] == 0.0


def test_replies_with_no_final_answer_are_a_share_of_every_sample() -> None:
    results = [_result(1000, 1.0), _result(1000, None, rule_recall=None, levenshtein=None, no_answer='reasoning_only')]
    errors = [_result(1000, None, error='TimeoutError: x')]
    metrics = _by_name(subset_metrics(results, errors, threshold=0.85, mode='absolute'))
    assert metrics['no_answer_rate'] == pytest.approx(1 / 3)
    assert metrics['inference_error_rate'] == pytest.approx(1 / 3)  # not an error


def test_controls_give_rates_and_stay_out_of_the_effective_length() -> None:
    controls = [
        _result(1000, 1.0, depth_percent=None, control=True, task_values={'guessed': 0.0}),
        _result(1000, 0.0, depth_percent=None, control=True, task_values={'guessed': 1.0}),
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


def test_served_tokens_give_a_ratio_and_words_when_lengths_are_not_the_models() -> None:
    from evalscope_niah.reporting.run_metrics import served_drift_message

    drifted = [_result(1000, 1.0, served_prompt_tokens=2180), _result(2000, 1.0, served_prompt_tokens=4300)]
    metrics = _by_name(subset_metrics(drifted, [], threshold=0.85, mode='absolute'))
    assert metrics['served_prompt_ratio'] == pytest.approx((2.18 + 2.15) / 2)
    message = served_drift_message(drifted, subset='english', tokenizer='Qwen/Qwen3-0.6B')
    assert 'lengths are Qwen/Qwen3-0.6B tokens; this model read 2.17x as many (median' in message
    exact = [_result(1000, 1.0, served_prompt_tokens=1000)]
    assert served_drift_message(exact, subset='english', tokenizer='q') is None
    unreported = [_result(1000, 1.0)]  # no usage: no ratio, no words, never a 0
    assert 'served_prompt_ratio' not in _by_name(subset_metrics(unreported, [], threshold=0.85, mode='absolute'))
    assert served_drift_message(unreported, subset='english', tokenizer='q') is None


def test_a_judge_failing_on_many_samples_is_said_in_words() -> None:
    from evalscope_niah.reporting.run_metrics import judge_failure_message

    failing = [_result(1000, 1.0, judge_status='failed') for _ in range(3)] + [
        _result(1000, 1.0, judge_status='ok', judge_accuracy=1.0)
    ]
    assert 'the judge failed on 3 of 4 samples (75%)' in judge_failure_message(failing, subset='english')
    healthy = [_result(1000, 1.0, judge_status='ok', judge_accuracy=1.0) for _ in range(20)]
    assert judge_failure_message(healthy, subset='english') is None
    assert judge_failure_message([_result(1000, 1.0)], subset='english') is None  # rule-scored: nothing to say


def test_effective_length_is_also_given_in_the_models_tokens_when_they_differ() -> None:
    results = [_result(1000, 1.0, served_prompt_tokens=2200), _result(2000, 1.0, served_prompt_tokens=4400)]
    metrics = _by_name(subset_metrics(results, [], threshold=0.85, mode='absolute'))
    assert metrics['effective_context_length'] == 2000
    assert metrics['effective_context_length_served'] == 4400
    same = [_result(1000, 1.0, served_prompt_tokens=1000)]
    assert 'effective_context_length_served' not in _by_name(subset_metrics(same, [], threshold=0.85, mode='absolute'))
