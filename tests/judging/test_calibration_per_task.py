"""The judge check follows the task: where a task asks for several values (EvalScope's multi-needle example, the
multi_retrieval task) the calibration's right answers name them all and one value alone is part credit, and every
answer is right, partial or wrong by that task's own rule score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalscope_niah.judging.qualification import PASS_MIN_RATING, build_calibration, judge_qualifies
from evalscope_niah.making.samples import iter_plans
from evalscope_niah.metadata import SampleMeta
from evalscope_niah.tasks import get_task
from evalscope_niah.tasks.compose import parse_params
from evalscope_niah.tasks.single.hooks import calibration_values
from tests.support.peer_configs import EVALSCOPE_MULTI

RIGHT, WRONG = 2 / 3, 2 / 9  # the accuracies of the ratings PASS_MIN_RATING (7) and FAIL_MAX_RATING (3)
CONFIGS = {
    'evalscope_multi': dict(EVALSCOPE_MULTI),
    'multi_retrieval': {'task': 'multi_retrieval', 'context_lengths': [2000], 'num_needles': 4},
}


def _meta(config: str, subset: str, corpus_dir: Path) -> SampleMeta:
    plans = iter_plans(parse_params(CONFIGS[config]), corpus_dir=corpus_dir, subsets=[subset])
    return next(plan for plan in plans if plan.meta.needles).meta


def _calibration(meta: SampleMeta):
    return build_calibration(
        question=meta.question,
        reference=meta.reference_answer,
        needles=meta.needles,
        language=meta.language,
        answer=meta.answer_keys[0] if meta.answer_keys else None,
        values=calibration_values(get_task(meta.task), meta),
    )


@pytest.mark.parametrize('subset', ['english', 'chinese'])
@pytest.mark.parametrize('config', list(CONFIGS))
def test_calibration_answers_agree_with_the_task_rule(config: str, subset: str, fixture_corpus_dir: Path) -> None:
    meta = _meta(config, subset, fixture_corpus_dir)
    values = calibration_values(get_task(meta.task), meta)
    assert len(values) > 1
    items = {item.category: item for item in _calibration(meta)}
    task = get_task(meta.task)
    accuracy = {name: task.rule_score(item.answer, meta).values['acc'] for name, item in items.items()}
    for name in ('reference', 'short_answer', 'paraphrase'):  # right: every value named
        assert items[name].expect_pass and accuracy[name] >= RIGHT, (name, accuracy[name])
    assert all(value in items['short_answer'].answer for value in values)
    # One value alone: part credit by the rule, so expected not to pass.
    partial = items['one_of_many']
    assert partial.partial and partial.critical and not partial.expect_pass
    assert WRONG < accuracy['one_of_many'] < RIGHT
    for name in ('other_entity', 'refusal', 'injection'):  # wrong: no value of the answer
        assert not items[name].expect_pass and accuracy[name] <= WRONG, (name, accuracy[name])


@pytest.mark.parametrize(('partial_rating', 'qualified'), [(1, True), (3, True), (5, True), (7, False), (10, False)])
def test_a_judge_must_not_call_part_credit_right(partial_rating: int, qualified: bool, fixture_corpus_dir: Path):
    items = _calibration(_meta('evalscope_multi', 'english', fixture_corpus_dir))
    ratings = [partial_rating if item.partial else 10 if item.expect_pass else 1 for item in items]
    replies = [json.dumps({'reasoning': 'graded', 'rating': rating}) for rating in ratings]
    result = judge_qualifies(items, replies)
    assert result.qualified is qualified
    record = result.to_dict()['items'][0]
    assert record['category'] == 'one_of_many' and record['partial'] is True
    assert record['correct'] is (partial_rating < PASS_MIN_RATING)


def test_one_value_tasks_keep_ten_answers(fixture_corpus_dir: Path) -> None:
    for task in ('single', 'reasoning', 'associative'):
        plans = iter_plans(parse_params({'task': task}), corpus_dir=fixture_corpus_dir, subsets=['english'], limit=1)
        meta = next(plans).meta
        assert calibration_values(get_task(task), meta) == ()
        assert len(_calibration(meta)) == 10
