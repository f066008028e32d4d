"""The adaptive sweep's plan file and what the reports make of it (reporting/sweep_plan.py, outputs.py): cells not
tested are counted from the plan, listed in the summary, drawn as empty cells labelled 'not tested', and never get a
row in the results or cells files."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from evalscope_niah.reporting.outputs import OutputFiles, write_run_outputs
from evalscope_niah.reporting.sample_record import SampleResult
from evalscope_niah.reporting.sweep_plan import planned_axes, subset_plan, untested_cells, write_sweep_plan

PLANNED = [(length, depth) for length in (1000, 2000, 3000) for depth in (0.0, 100.0) for _ in range(2)]
ROUNDS = [[(1000, 0.0), (1000, 100.0), (2000, 0.0)], [(1000, 0.0)]]


def _result(length: int, depth: float, accuracy: float) -> SampleResult:
    return SampleResult(
        subset='english',
        context_length=length,
        depth_percent=depth,
        accuracy=accuracy,
        rule_recall=accuracy,
        levenshtein=None,
        judge_accuracy=None,
        judge_status='not_called',
    )


def test_the_plan_counts_what_was_sent_of_the_grid() -> None:
    entry = subset_plan(PLANNED, ROUNDS, stop='pinned')
    assert planned_axes(entry) == ([1000, 2000, 3000], [0.0, 100.0])
    assert (entry['grid_prompts'], entry['sent_prompts']) == (12, 4)
    assert (entry['grid_tokens'], entry['sent_tokens']) == (2 * 2 * 6000, 5000)
    assert entry['rounds'][0] == [[1000, 0.0, 1], [1000, 100.0, 1], [2000, 0.0, 1]]
    assert untested_cells(entry) == [(2000, 100.0), (3000, 0.0), (3000, 100.0)]


def test_untested_cells_are_listed_and_drawn_empty_never_filled_in(tmp_path: Path) -> None:
    entry = subset_plan(PLANNED, ROUNDS, stop='budget')
    results = [_result(1000, 0.0, 1.0), _result(1000, 0.0, 1.0), _result(1000, 100.0, 1.0), _result(2000, 0.0, 0.0)]
    files = OutputFiles()
    write_sweep_plan(tmp_path / files.sweep_plan, {'english': entry}, settings={'seed': 0})
    write_run_outputs(tmp_path, results, threshold=0.85, mode='absolute', sweep_plan={'english': entry})
    with (tmp_path / files.cells).open() as handle:
        cells = [(int(row['context_length']), float(row['depth_percent'])) for row in csv.DictReader(handle)]
    assert cells == [(1000, 0.0), (1000, 100.0), (2000, 0.0)]
    assert len((tmp_path / files.results).read_text().splitlines()) == 4
    summary = json.loads((tmp_path / files.summary).read_text())
    sweep = summary['sweep']['english']
    assert sweep['stop'] == 'budget' and sweep['tested_cells'] == 3
    assert sweep['untested_cells'] == [[2000, 100.0], [3000, 0.0], [3000, 100.0]]
    # The longest length was never sent: the effective length stays what was measured (1000), not the grid's end.
    assert summary['effective_context_length']['english']['length'] == 1000
    html = (tmp_path / f'{files.heatmap_prefix}_english.html').read_text()
    assert 'adaptive sweep: 3 of 6 cells tested; grey = not tested' in html
    assert '3k' in html  # the untested length is a column of the heatmap, not dropped
    plan = json.loads((tmp_path / files.sweep_plan).read_text())
    assert plan['format'] == 1 and plan['subsets']['english']['cells'][-1]['sent'] == 0
