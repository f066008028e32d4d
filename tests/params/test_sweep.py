"""The adaptive sweep's parameters (params/sweep.py): the grid by default, and each bad value refused naming the
parameter and what is allowed, before any request."""

from __future__ import annotations

from typing import Any

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.tasks.compose import parse_params


def test_the_grid_is_the_default() -> None:
    params = parse_params({})
    assert (params.sweep, params.sweep_budget_prompts, params.sweep_budget_tokens) == ('grid', None, None)
    assert params.sweep_confidence == 0.95


def test_an_adaptive_sweep_with_its_budgets() -> None:
    params = parse_params({'sweep': 'adaptive', 'sweep_budget_prompts': 40, 'sweep_budget_tokens': 10**6})
    assert (params.sweep, params.sweep_budget_prompts, params.sweep_budget_tokens) == ('adaptive', 40, 10**6)


@pytest.mark.parametrize(
    ('extra', 'param', 'allowed'),
    [
        ({'sweep': 'smart'}, 'sweep', "'grid' or 'adaptive'"),
        ({'sweep': 'adaptive', 'sweep_budget_prompts': 0}, 'sweep_budget_prompts', 'positive'),
        ({'sweep': 'adaptive', 'sweep_budget_tokens': -5}, 'sweep_budget_tokens', 'positive'),
        ({'sweep': 'adaptive', 'sweep_confidence': 1.0}, 'sweep_confidence', 'between 0.5 and 1'),
        ({'sweep': 'adaptive', 'sweep_confidence': 0.5}, 'sweep_confidence', 'between 0.5 and 1'),
        ({'sweep_budget_prompts': 10}, 'sweep_budget_prompts', "sweep: 'adaptive'"),
        ({'sweep_budget_tokens': 10}, 'sweep_budget_tokens', "sweep: 'adaptive'"),
        ({'sweep': 'adaptive', 'absent_control': True}, 'sweep', "absent_control with sweep: 'grid'"),
        # a bool is an int to pydantic: true ran as a budget of one prompt
        ({'sweep': 'adaptive', 'sweep_budget_prompts': True}, 'sweep_budget_prompts', 'true is not a budget'),
        ({'sweep': 'adaptive', 'sweep_budget_tokens': True}, 'sweep_budget_tokens', 'true is not a budget'),
        # below one prompt of the shortest length (the default grid's 1,000 tokens): nothing could be sent
        ({'sweep': 'adaptive', 'sweep_budget_tokens': 999}, 'sweep_budget_tokens', 'at least 1,000'),
        (
            {
                'sweep': 'adaptive',
                'sweep_budget_tokens': 2500,
                'context_lengths': [3000, 4000],
                'tokenizer_path': 'server',
            },
            'sweep_budget_tokens',
            "3,000 tokens of the model server's tokenizer",
        ),
    ],
)
def test_bad_values_are_refused_naming_the_parameter(extra: dict[str, Any], param: str, allowed: str) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params(extra)
    assert info.value.param == param
    assert allowed in str(info.value)


def test_a_budget_of_the_cheapest_sample_is_allowed() -> None:
    params = parse_params({'sweep': 'adaptive', 'sweep_budget_tokens': 1000, 'context_lengths': [1000, 2000]})
    assert params.sweep_budget_tokens == 1000
