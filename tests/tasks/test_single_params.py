"""The single task owns its needle bank: its parameters, the checks that refuse a bank where it would be ignored,
and its picks, which samples ask it for; other tasks pick nothing."""

from __future__ import annotations

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.tasks import Task, get_task
from evalscope_niah.tasks.compose import parameters, parse_params
from evalscope_niah.tasks.single.hooks import asks_user_needles, needles_per_cell
from evalscope_niah.tasks.single.params import BANK_OPTIONS, SingleParams


def test_the_bank_options_are_the_single_tasks_own() -> None:
    owners = {name: parameters()[name].owner for name in ('needle_bank', *BANK_OPTIONS)}
    assert owners == dict.fromkeys(owners, 'single')
    assert get_task('single').params_model is SingleParams


def test_a_changed_bank_option_means_the_builtin_bank() -> None:
    assert SingleParams(n_needles=2).needle_bank == 'builtin'
    assert SingleParams(n_needles=1).needle_bank is None  # a default, as EvalScope passes along, changes nothing
    assert SingleParams(n_runs=2, needle_bank='bank.jsonl').needle_bank == 'bank.jsonl'
    assert SingleParams(n_needles=2, n_runs=3).changed_bank_options() == ['n_needles', 'n_runs']


def test_needles_per_cell_is_asked_of_the_tasks() -> None:
    single = get_task('single')
    params = parse_params({'n_needles': 2, 'n_runs': 3})
    # inspect_evals spreads n_needles over the cells: one sample per cell and run.
    assert single.needles_per_cell(params) == 3 == params.needles_per_cell()
    assert single.needles_per_cell(parse_params({})) == 1
    for name in ('multi_retrieval', 'reasoning', 'associative'):
        assert needles_per_cell(get_task(name), params) == 1


def test_the_picks_are_bank_entries_of_the_subsets_language() -> None:
    single = get_task('single')
    subset = parse_params({}).resolve_subset('chinese')
    assert single.picks(subset, parse_params({})) == ()
    params = parse_params({'n_needles': 3, 'sample_method': 'sequential', 'context_lengths': [1000, 2000]})
    picks = single.picks(subset, params)
    # One per cell (2 lengths x 10 depths), the three picked needles cycled over them as inspect_evals does.
    assert len(picks) == 20 and {entry.language for entry in picks} == {'zh'}
    assert [entry.id for entry in picks[:4]] == ['zh-01', 'zh-02', 'zh-03', 'zh-01']
    assert single.sent_texts(parse_params({})) is None
    needles, questions = single.sent_texts(params)
    assert {param for param, _ in needles + questions} == {'needle_bank'}


@pytest.mark.parametrize(
    ('extra', 'param'),
    [
        ({'needle_bank': 'builtin', 'task': 'associative'}, 'needle_bank'),
        ({'fixed_index': 2, 'answer': 'kite'}, 'answer'),
        ({'needle_bank': 'builtin', 'subsets': {'english': {'keyword': 'x'}}}, 'subsets.english.keyword'),
        ({'needle_bank': 'builtin', 'subsets': {'english': {'task': 'associative'}}}, 'subsets.english.task'),
    ],
)
def test_the_single_tasks_check_refuses_a_bank_that_would_be_ignored(extra: dict, param: str) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params(extra)
    assert info.value.param == param


def test_the_task_type_has_no_single_only_flags() -> None:
    for name in ('accepts_bank', 'uses_subset_needles', 'bank'):
        assert not hasattr(Task, name)
    # Whether user needles are read is asked of the task: single always, a chain task with a keyword.
    assert asks_user_needles(get_task('single'), keyword=None)
    assert not asks_user_needles(get_task('reasoning'), keyword=None)
    assert asks_user_needles(get_task('reasoning'), keyword='Paris')
    assert not asks_user_needles(get_task('multi_retrieval'), keyword='Paris')
