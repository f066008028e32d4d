"""The bounds the rules decide by (scoring/bounds.py): ordered as their meaning says, and written once."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import evalscope_niah
from evalscope_niah.scoring.bounds import (
    CERTAIN_PASS,
    CONTROL_PARAPHRASE_SHARE,
    LAST_RESORT_UNITS,
    LIST_ITEM_SCORE,
    LISTED_NAME_SCORE,
    PARAPHRASE_SHARE,
    PASTE_MIN_UNITS,
    PASTE_NGRAM,
    RULE_PASS_THRESHOLD,
    UNCERTAIN_LOW,
    UNCERTAIN_SCORE_CAP,
)

PACKAGE = Path(evalscope_niah.__file__).parent
REPO = PACKAGE.parent
# The values issue 23 found repeated as bare literals; each now lives in bounds.py under a name.
BOUND_VALUES = {0.1, 0.25, 0.3, 0.4, 0.9}


def test_scores_are_ordered_fail_then_threshold_then_pass() -> None:
    assert 0 < LISTED_NAME_SCORE <= LIST_ITEM_SCORE < UNCERTAIN_SCORE_CAP < RULE_PASS_THRESHOLD < CERTAIN_PASS <= 1
    assert LISTED_NAME_SCORE == UNCERTAIN_LOW
    assert 0 < PARAPHRASE_SHARE < CONTROL_PARAPHRASE_SHARE < 1


@pytest.mark.parametrize('language', ['en', 'zh'])
def test_the_paste_bound_leaves_verbose_answers_and_the_last_resort_is_far_above_them(language: str) -> None:
    assert PASTE_NGRAM < PASTE_MIN_UNITS[language] < LAST_RESORT_UNITS[language]
    # Several hundred words: verbose right answers (60-200 words) stay far below it.
    assert LAST_RESORT_UNITS['en'] >= 300


def _rule_sources() -> list[Path]:
    return [
        *(path for path in (PACKAGE / 'scoring').glob('*.py') if path.name != 'bounds.py'),
        *PACKAGE.glob('tasks/*/rules.py'),
        REPO / 'tests' / 'support' / 'adversarial.py',
    ]


@pytest.mark.parametrize('path', _rule_sources(), ids=lambda path: f'{path.parent.name}/{path.name}')
def test_no_rule_module_repeats_a_bound_as_a_bare_literal(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding='utf-8'))
    literals = [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, float) and node.value in BOUND_VALUES
    ]
    assert literals == []
