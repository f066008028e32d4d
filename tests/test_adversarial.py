"""The adversarial answer table (tests/support/adversarial.py) through the four rule entry points."""

from __future__ import annotations

import collections

import pytest

from tests.support.adversarial import OUTCOMES, TASKS, Case, all_cases, meets, score_case, summary

CASES = all_cases()


@pytest.mark.parametrize('case', CASES, ids=[f'{n}-{c.task}-{c.language}-{c.category}' for n, c in enumerate(CASES)])
def test_case_meets_its_expected_outcome(case: Case) -> None:
    verdict = score_case(case)
    assert meets(case, verdict), f'{case.label} expected {case.expected}, got {verdict}'
    assert verdict.explanation  # every verdict says why


def test_table_covers_every_task_language_and_the_wrong_categories() -> None:
    assert len(CASES) >= 200
    assert {case.expected for case in CASES} <= set(OUTCOMES)
    per_cell = collections.Counter((case.task, case.language) for case in CASES)
    assert {cell for cell, count in per_cell.items() if count >= 20} == {
        (task, lang) for task in TASKS for lang in ('en', 'zh')
    }
    categories = {case.category for case in CASES}
    assert categories >= {
        'right', 'paraphrase', 'partial', 'other entity', 'negation', 'retraction', 'hedge list', 'paste',
        'number dump', 'name list', 'refusal', 'guess', 'other language', 'injection',
    }  # fmt: skip


@pytest.mark.parametrize('language', ['en', 'zh'])
def test_control_recognises_at_least_fifteen_abstentions_per_language(language: str) -> None:
    right = [c for c in CASES if c.task == 'control' and c.language == language and c.category == 'right']
    assert len({c.answer for c in right}) >= 15
    assert all(score_case(c).score == 1.0 for c in right)


def test_summary_reports_every_task(capsys: pytest.CaptureFixture[str]) -> None:
    table = summary(CASES)
    print(table)  # pytest -s shows the figures for the README
    rows = table.splitlines()[2:]
    assert [row.split('|')[1].strip() for row in rows] == list(TASKS)
