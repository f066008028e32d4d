"""The run's plan is one frozen object the adapter sets once, at the end of load: before it no subset is planned, and
no hook can change a piece of it afterwards."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import evalscope_niah
from evalscope_niah.integration.run_state import RunPlan

ADAPTER = Path(evalscope_niah.__file__).parent / 'integration' / 'adapter.py'


def test_before_load_no_subset_is_planned() -> None:
    plan = RunPlan()
    assert (plan.samplers, plan.expected_cells, plan.judge_check, plan.rule_fallback) == ({}, {}, {}, frozenset())
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.judge_check = {}  # type: ignore[misc]


def test_the_subsets_scored_by_rule_are_those_whose_judge_failed_its_check() -> None:
    @dataclasses.dataclass(frozen=True)
    class Verdict:
        qualified: bool

    plan = RunPlan(judge_check={'english': Verdict(qualified=True), 'chinese': Verdict(qualified=False)})
    assert plan.rule_fallback == frozenset({'chinese'})


def test_the_adapter_sets_the_plan_in_one_place() -> None:
    """Every assignment of self._plan outside __init__ is in load(), once."""
    tree = ast.parse(ADAPTER.read_text(encoding='utf-8'))
    setters = [
        function.name
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef)
        for node in ast.walk(function)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Attribute) and target.attr == '_plan'
    ]
    assert setters == ['__init__', 'load']
