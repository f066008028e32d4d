"""Behavioural tests for evalscope_niah.plotting: PNG/HTML heatmaps and plot_all error handling."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from evalscope_niah.plotting import (
    HeatmapError,
    _build_heatmap_figure,
    _build_plotly_figure,
    plot_all,
    plot_heatmap_html,
    plot_heatmap_png,
)
from evalscope_niah.report import CellSummary

PNG_MAGIC = b'\x89PNG\r\n\x1a\n'


def cell(
    context_length: int,
    depth_percent: float,
    accuracy: float | None,
    *,
    subset: str = 'en',
    n: int = 3,
    errors: int = 0,
    judge_failures: int = 0,
) -> CellSummary:
    return CellSummary(
        subset=subset,
        context_length=context_length,
        depth_percent=depth_percent,
        n=n if accuracy is not None else 0,
        accuracy=accuracy,
        rule_recall=accuracy,
        levenshtein=0.9 if accuracy is not None else None,
        judge_failures=judge_failures,
        errors=errors,
        ci_low=None if accuracy is None else max(0.0, accuracy - 0.2),
        ci_high=None if accuracy is None else min(1.0, accuracy + 0.2),
    )


@pytest.fixture
def cells() -> list[CellSummary]:
    # 3 lengths x 3 depths for 'en'; (32k, 50%) only errored, (4k, 100%) never ran.
    en = [
        cell(1000, 0.0, 1.0),
        cell(4000, 0.0, 0.75),
        cell(32000, 0.0, 0.5),
        cell(1000, 50.0, 1.0),
        cell(4000, 50.0, 2 / 3, judge_failures=1),
        cell(32000, 50.0, None, errors=3),
        cell(1000, 100.0, 0.25),
        cell(32000, 100.0, 0.0),
    ]
    return [*en, cell(1000, 0.0, 0.0, subset='zh'), cell(2000, 50.0, 1.0, subset='zh')]


def texts(fig_cells: list[CellSummary], **kwargs: object) -> list[str]:
    fig = _build_heatmap_figure(fig_cells, subset='en', **kwargs)  # type: ignore[arg-type]
    try:
        return [t.get_text() for t in fig.axes[0].texts]
    finally:
        fig.clear()


# --------------------------------------------------------------------------------------------------------------------
# PNG
# --------------------------------------------------------------------------------------------------------------------


def test_png_is_valid_and_no_figures_leak(tmp_path: Path, cells: list[CellSummary]) -> None:
    before = plt.get_fignums()
    path = plot_heatmap_png(cells, subset='en', path=tmp_path / 'en.png', show_score=True)
    assert plt.get_fignums() == before
    assert path == tmp_path / 'en.png'
    data = path.read_bytes()
    assert len(data) > 0
    assert data[:8] == PNG_MAGIC
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        assert image.format == 'PNG'
        assert image.width > 500 and image.height > 300
    assert [p.name for p in tmp_path.iterdir()] == ['en.png']  # atomic write left no temp file


def test_figure_axes_ticks_and_fixed_colour_limits(cells: list[CellSummary]) -> None:
    fig = _build_heatmap_figure(cells, subset='en')
    try:
        ax = fig.axes[0]
        mesh = ax.collections[0]
        assert mesh.get_clim() == (0.0, 1.0)
        assert mesh.colorbar is not None
        assert mesh.colorbar.ax.get_ylabel() == 'accuracy'
        assert [t.get_text() for t in ax.get_xticklabels()] == ['1k', '4k', '32k']
        assert [t.get_text() for t in ax.get_yticklabels()] == ['0', '50', '100']
        # Depth 0 at the top: the y axis is inverted and row 0 sits at the smallest y.
        bottom, top = ax.get_ylim()
        assert bottom > top
        assert list(ax.get_yticks()) == sorted(ax.get_yticks())
        # Empty cells (errored-only and never-run) are masked, i.e. drawn as the grey background.
        values = mesh.get_array()
        assert isinstance(values, np.ma.MaskedArray)
        assert int(values.mask.sum()) == 2
        assert 'en' in ax.get_title()
        assert 'mean accuracy 0.60 (n=21)' in ax.get_title()  # (1 + .75 + .5 + 1 + 2/3 + .25 + 0) / 7, n=3 each
        assert ax.get_xlabel() == 'Context length (tokens)'
    finally:
        fig.clear()


def test_title_mean_is_weighted_by_samples() -> None:
    # 3 samples at 1.0 and 1 at 0.0: the sample mean is 0.75 (an unweighted mean of cells would say 0.50).
    fig = _build_heatmap_figure([cell(1000, 0.0, 1.0, n=3), cell(2000, 0.0, 0.0, n=1)], subset='en')
    try:
        assert 'mean accuracy 0.75 (n=4)' in fig.axes[0].get_title()
    finally:
        fig.clear()


def test_color_scale_does_not_stretch_to_data(cells: list[CellSummary]) -> None:
    # All cells in [0.5, 0.75]: limits must stay (0, 1) so colours are comparable between models.
    narrow = [cell(1000, 0.0, 0.5), cell(2000, 0.0, 0.75)]
    fig = _build_heatmap_figure(narrow, subset='en')
    try:
        assert fig.axes[0].collections[0].get_clim() == (0.0, 1.0)
    finally:
        fig.clear()


def test_show_score_writes_cell_values(cells: list[CellSummary]) -> None:
    shown = texts(cells, show_score=True)
    assert sorted(t for t in shown if t != '—') == sorted(['1.00', '0.75', '0.50', '1.00', '0.67', '0.25', '0.00'])
    assert shown.count('—') == 2
    assert texts(cells, show_score=False) == []


def test_custom_title_and_many_columns_are_rotated() -> None:
    wide = [cell(1000 * (i + 1), 0.0, 1.0) for i in range(12)]
    fig = _build_heatmap_figure(wide, subset='en', title='My model')
    try:
        ax = fig.axes[0]
        assert ax.get_title().startswith('My model')
        assert 'en' in ax.get_title()
        assert all(label.get_rotation() == 45 for label in ax.get_xticklabels())
    finally:
        fig.clear()


def test_png_raises_for_unknown_subset(tmp_path: Path, cells: list[CellSummary]) -> None:
    with pytest.raises(ValueError, match='no cells'):
        plot_heatmap_png(cells, subset='fr', path=tmp_path / 'fr.png')
    assert not (tmp_path / 'fr.png').exists()


# --------------------------------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------------------------------


def test_html_is_standalone_with_hover_fields(tmp_path: Path, cells: list[CellSummary]) -> None:
    path = plot_heatmap_html(cells, subset='en', path=tmp_path / 'en.html')
    html = path.read_text(encoding='utf-8')
    for field in ('context length', 'depth', 'mean accuracy', 'n:', 'rule recall mean', 'judge failures', 'errors'):
        assert field in html
    # plotly.js is inlined: no <script src=...> at all, so it works offline.
    assert re.search(r'<script[^>]*\bsrc=', html) is None
    assert 'Plotly.newPlot' in html
    assert len(html) > 1_000_000


def test_html_figure_axes_and_fixed_scale(cells: list[CellSummary]) -> None:
    fig = _build_plotly_figure(cells, subset='en')
    spec = json.loads(fig.to_json())
    trace = spec['data'][0]
    assert (trace['zmin'], trace['zmax']) == (0, 1)
    assert trace['x'] == ['1k', '4k', '32k']
    assert trace['y'] == ['0', '50', '100']
    assert spec['layout']['yaxis']['autorange'] == 'reversed'
    assert spec['layout']['xaxis']['type'] == 'category'
    assert trace['z'][1][2] is None  # errored-only cell is a gap
    assert trace['z'][1][1] == pytest.approx(2 / 3)
    # Hover data for the errored-only cell reports its error count.
    assert trace['customdata'][1][2][:7] == ['32,000', '50', 'n/a', '0', 'n/a', '0', '3']
    assert trace['customdata'][1][1][5] == '1'  # judge failures of (4k, 50%)


# --------------------------------------------------------------------------------------------------------------------
# plot_all
# --------------------------------------------------------------------------------------------------------------------


def test_plot_all_writes_png_and_html_per_subset(tmp_path: Path, cells: list[CellSummary]) -> None:
    before = plt.get_fignums()
    written = plot_all(cells, output_dir=tmp_path / 'out', show_score=True)
    assert plt.get_fignums() == before
    assert [p.name for p in written] == [
        'needle_haystack_heatmap_en.png',
        'needle_haystack_heatmap_en.html',
        'needle_haystack_heatmap_zh.png',
        'needle_haystack_heatmap_zh.html',
    ]
    assert all(p.is_file() and p.stat().st_size > 0 for p in written)
    assert sorted(p.name for p in (tmp_path / 'out').iterdir()) == sorted(p.name for p in written)


def test_plot_all_logs_and_raises_for_bad_subset_after_drawing_good_one(
    tmp_path: Path, cells: list[CellSummary], caplog: pytest.LogCaptureFixture
) -> None:
    good = [c for c in cells if c.subset == 'zh']
    bad = [cell(1000, 0.0, 1.0, subset='bad'), cell(1000, 0.0, 0.0, subset='bad')]  # duplicate cell
    with caplog.at_level(logging.ERROR, logger='evalscope_niah.plotting'), pytest.raises(HeatmapError) as info:
        plot_all(bad + good, output_dir=tmp_path, prefix='hm')
    assert 'bad' in str(info.value)
    assert set(info.value.failures) == {'bad'}
    assert isinstance(info.value.failures['bad'], ValueError)
    assert isinstance(info.value.__cause__, ValueError)
    records = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(records) == 1
    assert 'bad' in records[0].getMessage() and 'duplicate' in records[0].getMessage()
    assert records[0].exc_info is not None
    # 'bad' sorts before 'zh', yet 'zh' was still drawn.
    assert sorted(p.name for p in tmp_path.iterdir()) == ['hm_zh.html', 'hm_zh.png']


def test_plot_all_sanitizes_file_names(tmp_path: Path) -> None:
    written = plot_all([cell(1000, 0.0, 1.0, subset='../en v2.1')], output_dir=tmp_path, prefix='p')
    assert [p.name for p in written] == ['p_.._en_v2.1.png', 'p_.._en_v2.1.html']
    assert all(p.parent == tmp_path for p in written)


def test_plot_all_rejects_empty_input(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match='no cells'):
        plot_all([], output_dir=tmp_path)
