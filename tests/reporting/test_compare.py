"""Behavioural tests for reporting.compare: finding runs, labels, the comparison figure, table and CSV."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from PIL import Image

from evalscope_niah.reporting.compare import (
    COMPARE_CSV_COLUMNS,
    NoResultsError,
    _build_comparison_figure,
    _unique_labels,
    build_comparison,
    find_runs,
    format_comparison_table,
    plot_comparison_png,
    run_compare,
    write_comparison_csv,
)
from evalscope_niah.reporting.outputs import RESULTS_FILE
from evalscope_niah.reporting.result_files import write_results
from evalscope_niah.reporting.sample_record import SampleResult
from tests.support.results import EFFECTIVE_THRESHOLD


def result(subset: str, length: int, depth: float | None, accuracy: float | None) -> SampleResult:
    return SampleResult(
        subset=subset,
        context_length=length,
        depth_percent=depth,
        accuracy=accuracy,
        rule_recall=None,
        levenshtein=None,
        judge_accuracy=None,
        judge_status='not_called',
        control=depth is None,
    )


def write_run(work_dir: Path, model: str, good_up_to: dict[str, int], *, run: str = 'run1') -> Path:
    results = [
        result(subset, length, depth, 1.0 if length <= limit else 0.0)
        for subset, limit in good_up_to.items()
        for length in (1000, 2000, 4000, 8000)
        for depth in (0.0, 50.0, 100.0, None)
    ]
    return write_results(work_dir / run / 'reports' / model / RESULTS_FILE, results)


@pytest.fixture
def work_dirs(tmp_path: Path) -> list[Path]:
    write_run(tmp_path / 'a', 'qwen', {'english': 4000, 'chinese': 2000})
    write_run(tmp_path / 'b', 'qwen', {'english': 8000})
    write_run(tmp_path / 'b', 'llama', {'english': 1000, 'chinese': 0}, run='run2')
    return [tmp_path / 'a', tmp_path / 'b']


def test_unique_labels_disambiguate_only_the_collisions() -> None:
    assert _unique_labels([('qwen', 'qwen (a)'), ('llama', 'llama (a)'), ('qwen', 'qwen (b)')]) == [
        'qwen (a)',
        'llama',
        'qwen (b)',
    ]
    # Same dir twice: still distinct columns.
    assert _unique_labels([('m', 'm (a)'), ('m', 'm (a)')]) == ['m (a)', 'm (a) #2']
    assert _unique_labels([]) == []


def test_find_runs_reads_every_model_in_order(work_dirs: list[Path]) -> None:
    runs = find_runs(work_dirs)
    assert [(r.label, r.model_id, r.work_dir.name) for r in runs] == [
        ('qwen (a)', 'qwen', 'a'),
        ('qwen (b)', 'qwen', 'b'),
        ('llama', 'llama', 'b'),
    ]
    assert all(r.results_file.name == RESULTS_FILE for r in runs)
    assert len(runs[0].results) == 2 * 4 * 4


def test_find_runs_names_every_dir_without_results(tmp_path: Path, work_dirs: list[Path]) -> None:
    (tmp_path / 'empty').mkdir()
    with pytest.raises(NoResultsError) as info:
        find_runs([*work_dirs, tmp_path / 'empty', tmp_path / 'missing'])
    assert info.value.dirs == [str(tmp_path / 'empty'), str(tmp_path / 'missing')]
    assert RESULTS_FILE in str(info.value)


def test_comparison_entries_and_table(work_dirs: list[Path]) -> None:
    comparison = build_comparison(find_runs(work_dirs), threshold=EFFECTIVE_THRESHOLD)
    assert comparison.subsets == ('chinese', 'english')
    lengths = {(e.model, e.subset): e.effective.length for e in comparison.entries}
    assert lengths == {
        ('qwen (a)', 'chinese'): 2000,
        ('qwen (a)', 'english'): 4000,
        ('qwen (b)', 'english'): 8000,
        ('llama', 'chinese'): None,
        ('llama', 'english'): 1000,
    }
    assert comparison.entry('qwen (b)', 'chinese') is None
    lines = format_comparison_table(comparison).splitlines()
    assert lines[0].startswith('effective context length (absolute: accuracy >= 0.85; 95% bootstrap CI;')
    assert lines[1:] == [
        'model     chinese            english',
        'qwen (a)  2k [2k, 2k]        4k [4k, 4k]',
        'qwen (b)  n/a                8k [8k, 8k]',
        'llama     none [none, none]  1k [1k, 1k]',
    ]


def test_comparison_rejects_bad_arguments_and_empty_runs(work_dirs: list[Path], tmp_path: Path) -> None:
    runs = find_runs(work_dirs)
    with pytest.raises(ValueError, match='threshold'):
        build_comparison(runs, threshold=0.0)
    with pytest.raises(ValueError, match='mode'):
        build_comparison(runs, mode='both', threshold=EFFECTIVE_THRESHOLD)  # type: ignore[arg-type]
    write_results(tmp_path / 'c' / 'reports' / 'm' / RESULTS_FILE, [result('english', 1000, None, 1.0)])
    with pytest.raises(ValueError, match='no needle samples'):
        build_comparison(find_runs([tmp_path / 'c']), threshold=EFFECTIVE_THRESHOLD)


def test_comparison_csv(tmp_path: Path, work_dirs: list[Path]) -> None:
    comparison = build_comparison(find_runs(work_dirs), threshold=0.9, mode='relative')
    path = write_comparison_csv(tmp_path / 'out.csv', comparison)
    with open(path, encoding='utf-8', newline='') as handle:
        reader = csv.DictReader(handle)
        assert tuple(reader.fieldnames or ()) == COMPARE_CSV_COLUMNS
        records = list(reader)
    assert len(records) == 5  # missing (model, subset) pairs have no row
    first = records[0]
    assert (first['model'], first['model_id'], first['subset'], first['mode'], first['threshold']) == (
        'qwen (a)',
        'qwen',
        'chinese',
        'relative',
        '0.9',
    )
    assert (first['effective_length'], first['shortest_length'], first['longest_length']) == ('2000', '1000', '8000')
    llama_zh = next(r for r in records if r['model'] == 'llama' and r['subset'] == 'chinese')
    assert (llama_zh['effective_length'], llama_zh['ci_low'], llama_zh['base_score']) == ('', '', '0.0')


def test_a_comparison_states_a_bound_as_one(tmp_path: Path) -> None:
    # Every sample at 2k errored (a server outage): the model's length is at least 1k, 2k unknown, never 1k settled.
    errored = [
        dataclasses.replace(result('english', 2000, depth, None), error='HTTP 500') for depth in (0.0, 50.0, 100.0)
    ]
    results = [result('english', length, depth, 1.0) for length in (1000, 4000) for depth in (0.0, 50.0, 100.0)]
    write_results(tmp_path / 'w' / 'reports' / 'm' / RESULTS_FILE, [*results, *errored])
    comparison = build_comparison(find_runs([tmp_path / 'w']), threshold=EFFECTIVE_THRESHOLD)
    assert (
        format_comparison_table(comparison).splitlines()[2]
        == 'm      at least 1k [1k, 1k]; 2k unknown: 3 server errors'
    )
    with open(write_comparison_csv(tmp_path / 'out.csv', comparison), encoding='utf-8', newline='') as handle:
        [row] = list(csv.DictReader(handle))
    assert (row['effective_length'], row['unknown_length'], row['unknown_reason']) == (
        '1000',
        '2000',
        '3 server errors',
    )


def test_comparison_figure_grid_one_colorbar_marks_and_empty_panel(work_dirs: list[Path]) -> None:
    comparison = build_comparison(find_runs(work_dirs), threshold=EFFECTIVE_THRESHOLD)
    fig = _build_comparison_figure(comparison, show_score=False)
    try:
        *panels, colorbar = fig.axes
        assert len(panels) == 2 * 3  # rows = subsets, columns = models
        assert colorbar.get_ylabel() == 'accuracy'  # the single shared colorbar
        heatmaps = [ax for ax in panels if ax.collections]
        assert all(ax.collections[0].get_clim() == (0.0, 1.0) for ax in heatmaps)
        assert len(heatmaps) == 5
        titles = [ax.get_title() for ax in panels]
        assert titles[:3] == [
            'qwen (a) · chinese\neffective: 2k [2k, 2k]',
            'qwen (b) · chinese',
            'llama · chinese\neffective: none [none, none]',
        ]
        (empty,) = [ax for ax in panels if not ax.collections]
        assert [t.get_text() for t in empty.texts] == ['no chinese results']
        # A dashed line at the right edge of the effective column: 4k is the third column of qwen (a) / english.
        english_a = panels[3]
        dashed = [line.get_xdata()[0] for line in english_a.get_lines() if line.get_linestyle() == '--']
        assert dashed == [3]
        assert not [line for line in panels[2].get_lines() if line.get_linestyle() == '--']  # none: no line
    finally:
        fig.clear()


def test_comparison_png_and_run_compare_into_existing_dir(tmp_path: Path, work_dirs: list[Path]) -> None:
    before = plt.get_fignums()
    comparison = build_comparison(find_runs(work_dirs), threshold=EFFECTIVE_THRESHOLD)
    plain = plot_comparison_png(comparison, path=tmp_path / 'plain.png')
    scored = plot_comparison_png(comparison, path=tmp_path / 'scored.png', show_score=True)
    assert plt.get_fignums() == before
    with Image.open(plain) as a, Image.open(scored) as b:
        assert a.format == b.format == 'PNG'
        assert a.size == b.size and a.width > 1500
    assert plain.read_bytes() != scored.read_bytes()
    out_dir = tmp_path / 'out'
    out_dir.mkdir()
    output = run_compare(work_dirs, output=out_dir, threshold=EFFECTIVE_THRESHOLD)
    assert (output.png, output.csv) == (out_dir / 'compare.png', out_dir / 'compare.csv')
    assert output.table == format_comparison_table(output.comparison)
    assert sorted(p.name for p in out_dir.iterdir()) == ['compare.csv', 'compare.png']


def test_comparison_csv_and_figure_take_hostile_names_literally(tmp_path: Path) -> None:
    subset = '=HYPERLINK("http://evil.example","$x$")'
    write_run(tmp_path / 'w', '@model', {subset: 2000})
    output = run_compare([tmp_path / 'w'], output=tmp_path / 'out.png', threshold=EFFECTIVE_THRESHOLD)
    with open(output.csv, encoding='utf-8', newline='') as handle:
        rows = list(csv.reader(handle))
    assert not any(field.startswith(('=', '+', '-', '@', '\t', '\r')) for row in rows for field in row)
    assert rows[1][:4] == ["'@model", "'@model", str(tmp_path / 'w'), "'" + subset]
    fig = _build_comparison_figure(output.comparison, show_score=False)
    try:
        assert fig.axes[0].get_title() == f'@model · {subset}\neffective: 2k [2k, 2k]'  # drawn, '$' not mathtext
    finally:
        fig.clear()
