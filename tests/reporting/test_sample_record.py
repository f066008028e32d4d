"""Per-sample result records: validation, the dict form written to the results file, and rows of older versions."""

from __future__ import annotations

import dataclasses
import math

import pytest

from evalscope_niah.reporting.sample_record import GUESSED, SampleResult
from tests.support.results import control, errored, sample

# --------------------------------------------------------------------------------------------------------------------
# SampleResult
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    'kwargs',
    [
        {'judge_status': 'maybe'},
        {'judge_status': 'ok'},  # ok without a judge score
        {'judge_status': 'failed', 'judge_accuracy': 1.0},  # a score from a failed judge
        {'accuracy': 1.5},
        {'accuracy': float('nan')},
        {'rule_recall': -0.1},
        {'levenshtein': float('inf')},
        {'error': 'timeout'},  # an error next to a score
        {'context_length': 0},
        {'depth_percent': 100.5},
    ],
)
def test_sample_result_rejects_inconsistent_values(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        sample(**kwargs)  # type: ignore[arg-type]


def test_sample_result_dict_round_trip_and_defaults() -> None:
    original = sample(
        1 / 3,
        subset='中文',
        context_length=4600,
        depth_percent=33.333333333333336,
        rule_recall=0.1 + 0.2,
        levenshtein=0.7,
        judge_accuracy=1 / 3,
        judge_status='ok',
        budget_exhausted=True,
    )
    assert SampleResult.from_dict(original.to_dict()) == original
    minimal = {k: v for k, v in errored().to_dict().items() if k not in ('budget_exhausted',)}
    assert SampleResult.from_dict(minimal).budget_exhausted is False
    # JSON ints for float fields are accepted and normalised.
    assert SampleResult.from_dict({**sample().to_dict(), 'depth_percent': 50}).depth_percent == 50.0


@pytest.mark.parametrize(
    'change',
    [
        {'extra': 1},
        {'context_length': True},
        {'context_length': 1000.0},
        {'accuracy': '1.0'},
        {'budget_exhausted': 'no'},
        {'no_answer': 'empty'},
        {'no_answer': 'reasoning_only'},  # beside a score
        {'answer_keys': 'saffron'},  # a string, not a list of keys
        {'answer_keys': [1, 2]},
    ],
)
def test_sample_result_from_dict_is_strict(change: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        SampleResult.from_dict({**sample().to_dict(), **change})


def test_answer_keys_are_written_when_known_and_read_back() -> None:
    keyed = dataclasses.replace(sample(), answer_keys=('eat a sandwich and sit in Dolores Park on a sunny day',))
    assert keyed.to_dict()['answer_keys'] == ['eat a sandwich and sit in Dolores Park on a sunny day']
    assert SampleResult.from_dict(keyed.to_dict()) == keyed
    assert 'answer_keys' not in sample().to_dict()  # none known: the row is as before
    assert SampleResult.from_dict(sample().to_dict()).answer_keys == ()  # rows of older versions
    long = dataclasses.replace(sample(), answer_keys=('x' * 5000,))
    assert len(long.answer_keys[0]) <= 1000  # a key is a span of a needle the user wrote: bounded as answers are


def test_sample_result_from_dict_missing_required_field() -> None:
    data = sample().to_dict()
    del data['judge_status']
    with pytest.raises(ValueError, match='judge_status'):
        SampleResult.from_dict(data)


# --------------------------------------------------------------------------------------------------------------------
# Control samples and task values
# --------------------------------------------------------------------------------------------------------------------


def test_control_sample_round_trip_and_old_rows_still_read() -> None:
    ctrl = control(0.0, guessed=True, context_length=4000)
    assert SampleResult.from_dict(ctrl.to_dict()) == ctrl
    assert ctrl.to_dict()['task_values'] == {GUESSED: 1.0}
    multi = SampleResult.from_dict(sample(0.5, precision=2 / 3).to_dict())
    assert multi.task_values == {'precision': pytest.approx(2 / 3)} and multi.control is False
    # Rows written before task values had their own field: guessed (a boolean) and precision at the top level.
    old_control = {**{k: v for k, v in control(0.0).to_dict().items() if k != 'task_values'}, 'guessed': True}
    assert SampleResult.from_dict(old_control).task_values == {GUESSED: 1.0}
    old_multi = {**sample(0.5).to_dict(), 'precision': 0.25, 'guessed': None}
    assert SampleResult.from_dict(old_multi).task_values == {'precision': 0.25}
    # A row written before control samples existed: no control key and no task values at all.
    old_row = {k: v for k, v in sample(1.0).to_dict().items() if k != 'control'}
    assert set(old_row) == {f for f in sample().to_dict() if f != 'control'} and 'task_values' not in old_row
    restored = SampleResult.from_dict(old_row)
    assert (restored.control, restored.task_values, restored.depth_percent) == (False, {}, 0.0)


@pytest.mark.parametrize(
    ('base', 'change', 'fragment'),
    [
        (sample(), {'depth_percent': None}, 'depth_percent'),  # a needle sample needs a depth
        (control(), {'depth_percent': 50.0}, 'depth_percent'),  # a control has none
        (sample(), {'control': True}, 'depth_percent'),
        (sample(), {'task_values': {'precision': math.nan}}, 'precision'),  # a task value is a finite number
        (sample(), {'task_values': {'precision': True}}, 'precision'),
        (sample(), {'task_values': {'accuracy': 1.0}}, 'accuracy'),  # and never shadows a field
    ],
)
def test_control_fields_are_validated(base: SampleResult, change: dict[str, object], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        dataclasses.replace(base, **change)  # type: ignore[arg-type]


def test_control_fields_from_dict_are_typed() -> None:
    with pytest.raises(ValueError, match='control'):
        SampleResult.from_dict({**control().to_dict(), 'control': 'yes'})
    with pytest.raises(ValueError, match='guessed'):
        SampleResult.from_dict({**control().to_dict(), 'task_values': {'guessed': 'yes'}})
    with pytest.raises(ValueError, match='task_values'):
        SampleResult.from_dict({**control().to_dict(), 'task_values': [1.0]})
    with pytest.raises(ValueError, match='depth_percent'):  # None depth on a needle row
        SampleResult.from_dict({**sample().to_dict(), 'depth_percent': None})


def test_a_reply_with_no_final_answer_is_neither_scored_nor_an_error() -> None:
    flagged = sample(None, no_answer='reasoning_only')
    assert (flagged.no_answer_excluded, flagged.errored, flagged.budget_excluded) == (True, False, False)
    assert SampleResult.from_dict(flagged.to_dict()) == flagged
    assert 'no_answer' not in sample().to_dict()  # files of runs without such replies are unchanged
    assert SampleResult.from_dict(sample(None, error='x').to_dict()).no_answer is None
    with pytest.raises(ValueError, match='no_answer'):
        sample(None, error='HTTP 500', no_answer='tool_call_only')
