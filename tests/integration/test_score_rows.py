"""The row of a sample that ended in an error keeps its cell and a bounded message (the tally of rows:
test_run_state.py; whole runs: tests/test_lying_server.py)."""

from __future__ import annotations

import pytest

pytest.importorskip('evalscope')

from evalscope_niah.integration.score_rows import error_result
from tests.support.results import row_meta


def test_an_error_row_keeps_the_cell_and_a_bounded_message() -> None:
    row = error_result(row_meta('a', 50.0), 'X: ' + 'y' * 10_000)
    assert (row.context_length, row.depth_percent, row.accuracy, row.judge_status) == (600, 50.0, None, 'not_called')
    assert row.error.startswith('X: y') and len(row.error) == 500
