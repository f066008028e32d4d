"""The ledger of samples asked: each one ends as a row; one that ended in none (EvalScope failed to save it after our
hooks returned) becomes an error row saying so, once. Whole runs: tests/test_lying_server.py."""

from __future__ import annotations

import pytest

pytest.importorskip('evalscope')

from evalscope_niah.integration.score_rows import LOST_SAMPLE_ERROR, SampleLedger, error_result
from evalscope_niah.metadata import SampleMeta


def _meta(subset: str, depth: float) -> SampleMeta:
    return SampleMeta(
        subset=subset, language='en', task='single', context_length=600, depth_percent=depth, repeat=0, draw=0,
        needles=('n',), question='q', reference_answer='n', answer_keys=('n',), start_token=0, divergence_token=0,
    )  # fmt: skip


def test_a_sample_asked_and_never_ended_is_one_error_row_saying_so() -> None:
    ledger = SampleLedger()
    for sample_id, depth in enumerate((0.0, 50.0, 100.0)):
        ledger.asked(sample_id, _meta('a', depth))
    ledger.asked(0, _meta('b', 0.0))  # ids are per subset
    ledger.ended('a', [0])  # scored
    ledger.ended('a', [2])  # an error we recorded
    assert ledger.lost(['b']) and ledger.lost(['b']) == []  # ended by its row: once only
    [(lost_id, lost)] = ledger.lost()
    assert lost_id == 1
    assert (lost.subset, lost.depth_percent, lost.accuracy, lost.error) == ('a', 50.0, None, LOST_SAMPLE_ERROR)
    assert ledger.lost() == []


def test_an_error_row_keeps_the_cell_and_a_bounded_message() -> None:
    row = error_result(_meta('a', 50.0), 'X: ' + 'y' * 10_000)
    assert (row.context_length, row.depth_percent, row.accuracy, row.judge_status) == (600, 50.0, None, 'not_called')
    assert row.error.startswith('X: y') and len(row.error) == 500
