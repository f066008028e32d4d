"""The adaptive sweep's plan file and what the reports make of it (reporting/sweep_plan.py, outputs.py): cells not
tested are counted from the plan, listed in the summary, drawn as empty cells labelled 'not tested', and never get a
row in the results or cells files."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from evalscope_niah.reporting.outputs import OutputFiles, write_run_outputs
from evalscope_niah.reporting.sample_record import SampleResult
from evalscope_niah.reporting.sweep_plan import (
    planned_axes,
    subset_plan,
    untested_cells,
    untested_lengths,
    write_sweep_plan,
)

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


def test_lengths_no_round_sent_are_named_with_the_samples_they_plan() -> None:
    planned = [(300, 0.0), (300, 50.0), (500, 0.0), (500, 50.0), (500, 50.0), (700, 0.0)]
    entry = subset_plan(planned, [[(300, 0.0), (300, 50.0)], [(500, 50.0)]], stop='budget')
    # 500 is partly sent: tested (its unsent cells are not a length's verdict); 700 never was.
    assert untested_lengths(entry) == {700: '1 sample not tested'}
    assert untested_lengths(subset_plan(planned, [], stop='budget')) == {
        300: '2 samples not tested',
        500: '3 samples not tested',
        700: '1 sample not tested',
    }


def test_a_plan_file_reads_back_and_a_hostile_one_is_refused_whole(tmp_path: Path, monkeypatch) -> None:
    from evalscope_niah.reporting import sweep_plan

    planned = [(300, 0.0), (300, 50.0), (500, 0.0)]
    entry = subset_plan(planned, [[(300, 0.0)]], stop='budget')
    path = write_sweep_plan(tmp_path / 'plan.json', {'english': entry}, settings={'threshold': 0.85})
    read = sweep_plan.read_sweep_plan(path)
    assert untested_lengths(read['english']) == untested_lengths(entry) == {500: '1 sample not tested'}
    hostile = {
        'nested': '[' * 100_000 + ']' * 100_000,
        'no plan': '{"format": 1, "subsets": []}',
        'a cell off the axes': json.dumps({'format': 1, 'subsets': {'english': {**entry, 'context_lengths': [300]}}}),
        'a negative count': json.dumps(
            {'format': 1, 'subsets': {'english': {**entry, 'cells': [{**entry['cells'][0], 'sent': -1}]}}}
        ),
        'a stop it never writes': json.dumps({'format': 1, 'subsets': {'english': {**entry, 'stop': '<b>'}}}),
        'a length that is no integer': json.dumps(
            {'format': 1, 'subsets': {'english': {**entry, 'context_lengths': [300, True]}}}
        ),
    }
    for name, text in hostile.items():
        bad = tmp_path / f'{name}.json'
        bad.write_text(text, encoding='utf-8')
        with pytest.raises(ValueError, match='not a needle_haystack sweep plan'):
            sweep_plan.read_sweep_plan(bad)
    monkeypatch.setattr(sweep_plan, 'MAX_PLAN_BYTES', 100)
    with pytest.raises(ValueError, match='at most 100 are read'):
        sweep_plan.read_sweep_plan(path)  # refused by its size, before it is parsed
