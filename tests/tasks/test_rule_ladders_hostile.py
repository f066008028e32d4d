"""Every task ladder stays fast on hostile input."""

from __future__ import annotations

import time

import pytest

from evalscope_niah.scoring.single_needle import single_needle_score
from evalscope_niah.tasks.control.rules import absent_control_score
from evalscope_niah.tasks.multi_retrieval.rules import multi_retrieval_score
from evalscope_niah.tasks.reasoning.rules import chain_answer_score
from tests.support.rule_facts import (
    GIOSTRA,
    SF_NEEDLE,
    SF_QUESTION,
)

# --- all four entry points stay fast on hostile input ------------------------------------------------------------


@pytest.mark.parametrize('hostile', ['not ' * 250_000, ' ' * 1_000_000, '不是' * 500_000, 'Jack, ' * 160_000])
def test_entry_points_are_fast_on_a_megabyte(hostile: str) -> None:
    started = time.perf_counter()
    single_needle_score(
        hostile, needles=(SF_NEEDLE,), question=SF_QUESTION, reference=SF_NEEDLE, answer_keys=('Jack',), language='en'
    )
    chain_answer_score(hostile, needles=GIOSTRA, keyword='Jack', reference='Jack.', language='en')
    multi_retrieval_score(hostile, values=('4821937',), reference='4821937', distractor_values=('1234567',))
    absent_control_score(hostile, language='zh', needle_answers=('Jack',))
    assert time.perf_counter() - started < 5.0
