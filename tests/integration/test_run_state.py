"""The adapter's knowledge of a run: the plan is one frozen object set in __init__ and completed once, at the end of
load; what the run gathers is one tally, filled by its methods, in which every sample asked ends as one row."""

from __future__ import annotations

import ast
import dataclasses
import threading
from pathlib import Path

import pytest

pytest.importorskip('evalscope')

import evalscope_niah
from evalscope_niah.integration.run_state import RunPlan, RunTally
from evalscope_niah.integration.score_rows import LOST_SAMPLE_ERROR, error_result
from tests.support.results import row_meta

INTEGRATION = Path(evalscope_niah.__file__).parent / 'integration'
ADAPTER = INTEGRATION / 'adapter.py'


def test_before_load_no_subset_is_planned() -> None:
    plan = RunPlan()
    assert (plan.samplers, plan.expected_cells, plan.judge_check, plan.rule_fallback) == ({}, {}, {}, frozenset())
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.judge_check = {}  # type: ignore[misc]
    loaded = plan.loaded(expected_cells={'english': {}})
    assert (plan.expected_cells, loaded.expected_cells) == ({}, {'english': {}})  # a new plan, the old unchanged


def test_the_subsets_scored_by_rule_are_those_whose_judge_failed_its_check() -> None:
    @dataclasses.dataclass(frozen=True)
    class Verdict:
        qualified: bool

    plan = RunPlan(judge_check={'english': Verdict(qualified=True), 'chinese': Verdict(qualified=False)})
    assert plan.rule_fallback == frozenset({'chinese'})


def _instance_attributes_set(path: Path) -> dict[str, set[str]]:
    """attribute -> the methods that assign ``self.<attribute>``."""
    setters: dict[str, set[str]] = {}
    for function in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
        if isinstance(function, ast.FunctionDef):
            for node in ast.walk(function):
                targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, 'target', None)]
                for target in targets if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) else []:
                    if isinstance(target, ast.Attribute) and ast.unparse(target.value) == 'self':
                        setters.setdefault(target.attr, set()).add(function.name)
    return setters


def test_the_adapter_keeps_only_its_plan_and_its_tally() -> None:
    """The adapter's own state is the plan (set in __init__, completed in load) and the tally (made in __init__);
    its mixin (live_pages.py) sets none."""
    assert _instance_attributes_set(ADAPTER) == {'_plan': {'__init__', 'load'}, '_tally': {'__init__'}}
    assert _instance_attributes_set(INTEGRATION / 'live_pages.py') == {}


def test_a_sample_asked_and_never_ended_is_one_error_row_saying_so(tmp_path: Path) -> None:
    tally = RunTally()
    prediction_dir = str(tmp_path / 'predictions' / 'model')
    for sample_id, depth in enumerate((0.0, 50.0, 100.0)):
        tally.asked(sample_id, row_meta('a', depth), prediction_dir=prediction_dir)
    tally.asked(0, row_meta('b', 0.0), prediction_dir=prediction_dir)  # ids are per subset
    assert tally.report_dir == str(tmp_path / 'reports' / 'model')
    tally.scored('a', [(0, error_result(row_meta('a', 0.0), 'stands in for a score'))])
    tally.errored(2, error_result(row_meta('a', 100.0), 'ValueError: x'))
    tally.close_lost(['b'])
    tally.close_lost(['b'])  # ended by its row: once only
    assert [row.subset for row in tally.errors_of('b')] == ['b']
    tally.close_lost()
    lost = [row for row in tally.errors_of('a') if row.error == LOST_SAMPLE_ERROR]
    assert [(row.depth_percent, row.accuracy) for row in lost] == [(50.0, None)]
    tally.close_lost()
    assert len(tally.rows()) == 4 and tally.error_subsets() == {'a', 'b'}


def test_a_sample_asked_again_keeps_one_row_its_last() -> None:
    tally = RunTally()
    tally.errored(7, error_result(row_meta('a', 0.0), 'first try'))
    tally.forget_errors('a', [7])
    assert tally.rows() == [] and tally.error_subsets() == set()
    tally.errored(7, error_result(row_meta('a', 0.0), 'second try'))
    tally.errored(7, error_result(row_meta('a', 0.0), 'third try'))
    assert [row.error for row in tally.rows()] == ['third try']


def test_worker_threads_fill_the_tally_without_losing_a_row(tmp_path: Path) -> None:
    tally = RunTally()
    prediction_dir = str(tmp_path / 'predictions' / 'model')

    def worker(start: int) -> None:
        for sample_id in range(start, start + 500):
            tally.asked(sample_id, row_meta('a', 0.0), prediction_dir=prediction_dir)
            tally.errored(sample_id, error_result(row_meta('a', 0.0), f'E: {sample_id}'))

    threads = [threading.Thread(target=worker, args=(start,)) for start in range(0, 2000, 500)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    tally.close_lost()
    assert sorted(row.error for row in tally.rows()) == sorted(f'E: {sample_id}' for sample_id in range(2000))
