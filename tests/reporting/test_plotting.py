"""Behavioural tests for evalscope_niah.reporting.plotting: PNG/HTML heatmaps and plot_all error handling."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from PIL import Image

from evalscope_niah.reporting import plotting
from evalscope_niah.reporting.heatmap_html import _heatmap_html, _hover_lines
from evalscope_niah.reporting.heatmap_style import CMAP as _CMAP
from evalscope_niah.reporting.heatmap_style import EMPTY_COLOR as _EMPTY_COLOR
from evalscope_niah.reporting.length_status import EffectiveBound
from evalscope_niah.reporting.outputs import HEATMAP_PREFIX
from evalscope_niah.reporting.plotting import (
    HeatmapError,
    _build_heatmap_figure,
    add_accuracy_colorbar,
    draw_heatmap,
    plot_all,
    plot_heatmap_html,
    plot_heatmap_png,
)
from evalscope_niah.reporting.sample_record import SampleResult
from evalscope_niah.reporting.stats import CellSummary, samples_by_cell, summarize_cells

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
    unknown: str | None = None,
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
        unknown=unknown,
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
        cell(32000, 50.0, None, errors=3, unknown='3 server errors'),
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


def test_png_and_html_name_the_tokenizer_that_counted(cells: list[CellSummary]) -> None:
    counted = [dataclasses.replace(c, tokenizer='Qwen/Qwen3-0.6B') for c in cells]
    fig = _build_heatmap_figure(counted, subset='en')
    try:
        ax = fig.axes[0]
        assert ax.get_xlabel() == 'Context length (Qwen3 tokens)'
        assert 'lengths in Qwen3 tokens' in ax.get_title()
    finally:
        fig.clear()
    html = _heatmap_html(counted, subset='en')
    assert '>Context length (Qwen3 tokens)</th>' in html
    assert 'lengths in Qwen3 tokens</p>' in html
    assert '"context length: {} Qwen3 tokens"' in html  # the hover line
    assert 'lengths in' not in _heatmap_html(cells, subset='en')  # unknown tokenizer: plain 'tokens', no claim


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


class _HeatmapTable(HTMLParser):
    """Collects the heatmap table: row headers, data cells (attributes + text) and footer labels, by row."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.section = ''
        self.row_headers: list[str] = []
        self.footer: list[str] = []
        self.rows: list[list[dict[str, str]]] = []
        self._current: dict[str, str] | None = None
        self._th: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ('tbody', 'tfoot'):
            self.section = tag
        elif tag == 'tr' and self.section == 'tbody':
            self.rows.append([])
        elif tag == 'td' and self.section == 'tbody' and dict(attrs).get('data-h') is not None:
            self._current = {k: v or '' for k, v in attrs} | {'text': ''}
        elif tag == 'th' and 'rowspan' not in dict(attrs):
            self._th = []

    def handle_data(self, data: str) -> None:
        if self._current is not None:
            self._current['text'] += data
        if self._th is not None:
            self._th.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == 'td' and self._current is not None:
            self.rows[-1].append(self._current)
            self._current = None
        elif tag == 'th' and self._th is not None:
            text = ''.join(self._th)
            if self.section == 'tbody':
                self.row_headers.append(text)
            elif self.section == 'tfoot' and text:
                self.footer.append(text)
            self._th = None


def parse_table(html: str) -> _HeatmapTable:
    parser = _HeatmapTable()
    parser.feed(html)
    parser.close()
    return parser


def background(td: dict[str, str]) -> str:
    match = re.fullmatch(r'background:(#[0-9A-Fa-f]{6})', td['style'])
    assert match is not None, td['style']
    return match.group(1).lower()


def grid_15x15() -> list[CellSummary]:
    lengths = [1000, 2000, 4000, 8000, 12000, 16000, 24000, 32000, 48000, 64000, 80000, 96000, 112000, 128000, 131072]
    depths = [round(100 * i / 14, 2) for i in range(15)]
    out = []
    for row, depth in enumerate(depths):
        for col, length in enumerate(lengths):
            if (row + col) % 11 == 0:
                out.append(cell(length, depth, None, errors=3))  # errored-only: empty cell with a long hover text
            else:
                out.append(cell(length, depth, ((row * 7 + col * 3) % 13) / 12, n=30, judge_failures=row % 3))
    return out


def test_html_is_standalone_and_offline(tmp_path: Path, cells: list[CellSummary]) -> None:
    path = plot_heatmap_html(cells, subset='en', path=tmp_path / 'en.html')
    assert path == tmp_path / 'en.html'
    assert [p.name for p in tmp_path.iterdir()] == ['en.html']  # atomic write left no temp file
    html = path.read_text(encoding='utf-8')
    assert html.startswith('<!DOCTYPE html>')
    assert '<meta charset="utf-8">' in html
    # No external resource of any kind: no URLs, no src/href at all, no stylesheet links or CSS imports/urls.
    assert re.search(r'https?:|//[a-z0-9]', html, flags=re.IGNORECASE) is None
    assert re.search(r'\b(src|href)\s*=', html, flags=re.IGNORECASE) is None
    assert '<link' not in html and '@import' not in html and 'url(' not in html
    assert re.findall(r'<script[^>]*>', html) == ['<script>']  # one inline script, the tooltip
    assert 'plotly' not in html.lower()


def test_html_plotting_module_does_not_import_plotly() -> None:
    code = (
        'import sys, evalscope_niah.reporting.plotting; sys.exit(any(m.split(".")[0] == "plotly" for m in sys.modules))'
    )
    assert subprocess.run([sys.executable, '-c', code], check=False).returncode == 0


def test_html_layout_title_and_axes(cells: list[CellSummary]) -> None:
    html = _heatmap_html(cells, subset='en')
    table = parse_table(html)
    # rows = depth with 0 on top, columns = context length labels shared with the PNG.
    assert table.row_headers == ['0', '50', '100']
    assert table.footer == ['1k', '4k', '32k', 'Context length (tokens)']
    assert 'Needle depth (%)' in html
    assert [[td['text'] for td in row] for row in table.rows] == [
        ['1.00', '0.75', '0.50'],
        ['1.00', '0.67', '—'],  # errored-only cell
        ['0.25', '—', '0.00'],  # (4k, 100%) never ran
    ]
    assert '<h1>Needle in a haystack</h1>' in html
    assert 'subset: en · mean accuracy 0.60 (n=21)' in html  # same n-weighted mean as the PNG title
    assert '<title>Needle in a haystack · subset: en · mean accuracy 0.60 (n=21)</title>' in html
    assert '<h1>My model</h1>' in _heatmap_html(cells, subset='en', title='My model')
    # Grey cells are explained only when there are some.
    assert 'no scored sample' in html
    assert 'no scored sample' not in _heatmap_html([cell(1000, 0.0, 1.0)], subset='en')


def test_html_hover_fields_per_cell(cells: list[CellSummary]) -> None:
    html = _heatmap_html(cells, subset='en')
    rows = parse_table(html).rows
    assert [len(row) for row in rows] == [3, 3, 3]  # every cell has hover data, empty ones included
    # The tooltip script gets one line template per hover field.
    hover_lines = _hover_lines('tokens')
    assert json.dumps(hover_lines, separators=(',', ':')) in html
    fields = [[td['data-h'].split('|') for td in row] for row in rows]
    assert all(len(f) == len(hover_lines) for row in fields for f in row)

    def tooltip(row: int, col: int) -> list[str]:
        return [line.replace('{}', value) for line, value in zip(hover_lines, fields[row][col], strict=True)]

    assert tooltip(1, 1) == [
        'context length: 4,000 tokens',
        'depth: 50%',
        'mean accuracy: 0.67',
        'n: 3',
        'rule recall mean: 0.67',
        'judge failures: 1',
        'errors: 0',
        '95% CI: [0.47, 0.87]',
        'no final answer (not scored): 0',
    ]
    # Errored-only cell: no colour, and unknown (not a 0) with why; its error count is worth hovering.
    assert fields[1][2] == ['32,000', '50', 'unknown (3 server errors)', '0', 'n/a', '0', '3', 'n/a', '0']
    assert fields[2][1][:3] == ['4,000', '100', 'no data']
    assert fields[0][0][:4] == ['1,000', '0', '1.00', '3']


def test_html_colours_match_png_colormap(cells: list[CellSummary]) -> None:
    rows = parse_table(_heatmap_html(cells, subset='en')).rows
    low, high = to_hex(_CMAP(0.0)), to_hex(_CMAP(1.0))
    assert (low, high) == ('#f0496e', '#0cd79f')  # the ends of Kamradt's red -> green scale
    assert background(rows[2][2]) == low  # accuracy 0.0
    assert background(rows[0][0]) == high  # accuracy 1.0
    assert background(rows[0][2]) == to_hex(_CMAP(0.5))
    assert background(rows[1][2]) == _EMPTY_COLOR.lower()  # errored-only
    assert background(rows[2][1]) == _EMPTY_COLOR.lower()  # never ran
    # Fixed 0-1 scale: a narrow range of scores is not stretched to the ends.
    narrow = parse_table(_heatmap_html([cell(1000, 0.0, 0.5), cell(2000, 0.0, 0.75)], subset='en')).rows
    assert [background(td) for td in narrow[0]] == [to_hex(_CMAP(0.5)), to_hex(_CMAP(0.75))]


def test_html_legend_bar(cells: list[CellSummary]) -> None:
    html = _heatmap_html(cells, subset='en')
    gradient = re.search(r'linear-gradient\(([^)]*)\)', html)
    assert gradient is not None
    stops = gradient.group(1).split(',')
    assert stops[0] == to_hex(_CMAP(1.0)) and stops[-1] == to_hex(_CMAP(0.0))  # 1 at the top, 0 at the bottom
    assert '>accuracy<' in html
    assert re.findall(r'class="tk"[^>]*>([^<]*)<', html) == ['0', '0.25', '0.5', '0.75', '1']


def test_html_escapes_subset_and_title(tmp_path: Path) -> None:
    subset = '<b>x</b>'
    html = _heatmap_html([cell(1000, 0.0, 1.0, subset=subset)], subset=subset, title='<script>alert(1)</script> & "q"')
    assert '<b>' not in html and '<script>alert' not in html
    assert 'subset: &lt;b&gt;x&lt;/b&gt;' in html
    assert '<h1>&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot;</h1>' in html
    # Through plot_all as well: file name sanitized, content escaped.
    written = plot_all([cell(1000, 0.0, 1.0, subset=subset)], output_dir=tmp_path, prefix='p')
    page = next(p for p in written if p.suffix == '.html').read_text(encoding='utf-8')
    assert '<b>' not in page and '&lt;b&gt;x&lt;/b&gt;' in page


def test_html_is_small_for_15x15_grid(tmp_path: Path) -> None:
    path = plot_heatmap_html(grid_15x15(), subset='en', path=tmp_path / 'big.html')
    size = path.stat().st_size
    assert size < 30_000, size
    table = parse_table(path.read_text(encoding='utf-8'))
    assert [len(row) for row in table.rows] == [15] * 15


def test_html_is_deterministic(tmp_path: Path) -> None:
    cells_15 = grid_15x15()
    first = plot_heatmap_html(cells_15, subset='en', path=tmp_path / 'a.html').read_bytes()
    second = plot_heatmap_html(cells_15, subset='en', path=tmp_path / 'b.html').read_bytes()
    shuffled = plot_heatmap_html(cells_15[::-1], subset='en', path=tmp_path / 'c.html').read_bytes()
    assert first == second == shuffled


def test_html_raises_for_unknown_subset(tmp_path: Path, cells: list[CellSummary]) -> None:
    with pytest.raises(ValueError, match='no cells'):
        plot_heatmap_html(cells, subset='fr', path=tmp_path / 'fr.html')
    assert not (tmp_path / 'fr.html').exists()


# --------------------------------------------------------------------------------------------------------------------
# plot_all
# --------------------------------------------------------------------------------------------------------------------


def test_plot_all_writes_png_and_html_per_subset(tmp_path: Path, cells: list[CellSummary]) -> None:
    before = plt.get_fignums()
    written = plot_all(cells, output_dir=tmp_path / 'out', show_score=True, prefix=HEATMAP_PREFIX)
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
    with (
        caplog.at_level(logging.ERROR, logger='evalscope_niah.reporting.plotting'),
        pytest.raises(HeatmapError) as info,
    ):
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
        plot_all([], output_dir=tmp_path, prefix=HEATMAP_PREFIX)


# --------------------------------------------------------------------------------------------------------------------
# Effective context length marker
# --------------------------------------------------------------------------------------------------------------------


def dashed_vertical_lines(fig: Figure) -> list[float]:
    """x positions (data coordinates) of the dashed vertical lines on the heatmap axes."""
    ax = fig.axes[0]
    return [
        float(line.get_xdata()[0])
        for line in ax.get_lines()
        if line.get_linestyle() == '--' and len(set(line.get_xdata())) == 1
    ]


def test_png_marks_effective_length_at_right_edge_of_its_column(cells: list[CellSummary]) -> None:
    fig = _build_heatmap_figure(cells, subset='en', effective_length=4000)
    try:
        # Columns 1k, 4k, 32k span x in [0,1], [1,2], [2,3]: the 4k column ends at x = 2.
        assert dashed_vertical_lines(fig) == [2.0]
        # Stated in the title, above the grid: nothing is drawn inside the axes that could cover a score.
        assert fig.axes[0].get_title().splitlines()[1].endswith(' · effective: 4k')
        assert list(fig.axes[0].texts) == []
    finally:
        fig.clear()
    scored = _build_heatmap_figure(cells, subset='en', effective_length=4000, show_score=True)
    try:
        # With scores drawn, the only texts inside the grid are the scores (and dashes for empty cells).
        assert all(re.fullmatch(r'\d\.\d\d|—', t.get_text()) for t in scored.axes[0].texts)
    finally:
        scored.clear()
    unmarked = _build_heatmap_figure(cells, subset='en')
    try:
        assert dashed_vertical_lines(unmarked) == []
        assert not any(t.get_text().startswith('effective') for t in unmarked.axes[0].texts)
    finally:
        unmarked.clear()


def test_marked_png_differs_from_unmarked_and_leaks_no_figure(tmp_path: Path, cells: list[CellSummary]) -> None:
    before = plt.get_fignums()
    plain = plot_heatmap_png(cells, subset='en', path=tmp_path / 'plain.png')
    none = plot_heatmap_png(cells, subset='en', path=tmp_path / 'none.png', effective_length=None)
    marked = plot_heatmap_png(cells, subset='en', path=tmp_path / 'marked.png', effective_length=1000)
    assert plt.get_fignums() == before
    with Image.open(plain) as a, Image.open(marked) as b, Image.open(none) as c:
        assert a.size == b.size == c.size
        plain_px, marked_px = np.asarray(a.convert('RGB')), np.asarray(b.convert('RGB'))
        assert np.array_equal(plain_px, np.asarray(c.convert('RGB')))  # None draws nothing
    changed = np.any(plain_px != marked_px, axis=2)
    assert changed.sum() > 500  # a line across the grid and a label, not a stray pixel
    # The marker is dark: the changed pixels include near-black ones that the red-green scale never has.
    assert (marked_px[changed].max(axis=1) < 80).sum() > 100


def test_effective_length_off_the_grid_is_an_error(tmp_path: Path, cells: list[CellSummary]) -> None:
    before = plt.get_fignums()
    with pytest.raises(ValueError, match='effective_length 8000'):
        plot_heatmap_png(cells, subset='en', path=tmp_path / 'x.png', effective_length=8000)
    with pytest.raises(ValueError, match='effective_length 8000'):
        plot_heatmap_html(cells, subset='en', path=tmp_path / 'x.html', effective_length=8000)
    assert list(tmp_path.iterdir()) == []
    assert plt.get_fignums() == before


def test_html_marks_effective_column_and_caption(cells: list[CellSummary]) -> None:
    html = _heatmap_html(cells, subset='en', effective_length=4000)
    assert 'subset: en · mean accuracy 0.60 (n=21) · effective context length: 4k</p>' in html
    assert '<th class="eff">4k<span class="effl">effective</span></th>' in html
    table = parse_table(html)
    assert table.footer == ['1k', '4keffective', '32k', 'Context length (tokens)']
    # Every cell of the 4k column (empty ones too) carries the dashed border; no other cell does.
    assert [['ec' in td.get('class', '').split() for td in row] for row in table.rows] == [[False, True, False]] * 3
    assert table.rows[2][1]['class'].split() == ['e', 'ec']  # the never-run cell keeps its grey class
    plain = _heatmap_html(cells, subset='en')
    assert 'effective' not in plain.split('</style>')[1]
    assert plain == _heatmap_html(cells, subset='en', effective_length=None)


def test_a_bound_is_stated_as_one_with_the_unknown_length_named(cells: list[CellSummary]) -> None:
    # 4k is known to pass, 32k could not be decided (its samples errored): the line marks 4k, the words say 'at least'.
    bound = EffectiveBound(4000, 32000, '3 server errors')
    fig = _build_heatmap_figure(cells, subset='en', effective_length=bound)
    try:
        assert dashed_vertical_lines(fig) == [2.0]
        title = ' '.join(fig.axes[0].get_title().splitlines())
        assert 'effective: at least 4k; 32k unknown: 3 server errors' in title
    finally:
        fig.clear()
    html = _heatmap_html(cells, subset='en', effective_length=bound)
    assert '· effective context length: at least 4k; 32k unknown: 3 server errors</p>' in html
    assert '<th class="eff">4k<span class="effl">effective</span></th>' in html
    # Nothing known to pass: no line, and the words say so.
    nothing = _heatmap_html(cells, subset='en', effective_length=EffectiveBound(None, 1000, '2 server errors'))
    assert '· effective context length: unknown; 1k unknown: 2 server errors</p>' in nothing
    assert 'class="eff"' not in nothing
    with pytest.raises(ValueError, match='effective_length 8000'):
        _heatmap_html(cells, subset='en', effective_length=EffectiveBound(4000, 8000, '1 server error'))


def test_plot_all_marks_only_the_subsets_given(tmp_path: Path, cells: list[CellSummary]) -> None:
    before = plt.get_fignums()
    written = plot_all(
        cells, output_dir=tmp_path, effective_lengths={'en': 32000, 'fr': 1000}, title='My model', prefix=HEATMAP_PREFIX
    )
    assert plt.get_fignums() == before
    pages = {p.name: p.read_text(encoding='utf-8') for p in written if p.suffix == '.html'}
    assert 'effective context length: 32k' in pages['needle_haystack_heatmap_en.html']
    assert 'effective context length' not in pages['needle_haystack_heatmap_zh.html']
    assert all('<h1>My model</h1>' in page for page in pages.values())
    unmarked = plot_all(cells, output_dir=tmp_path / 'plain', title='My model', prefix=HEATMAP_PREFIX)
    assert (tmp_path / 'needle_haystack_heatmap_en.png').read_bytes() != unmarked[0].read_bytes()
    assert (tmp_path / 'needle_haystack_heatmap_zh.png').read_bytes() == unmarked[2].read_bytes()


def test_plot_all_reports_an_effective_length_off_the_grid(tmp_path: Path, cells: list[CellSummary]) -> None:
    with pytest.raises(HeatmapError) as info:
        plot_all(cells, output_dir=tmp_path, effective_lengths={'zh': 4000}, prefix=HEATMAP_PREFIX)
    assert set(info.value.failures) == {'zh'}
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        'needle_haystack_heatmap_en.html',
        'needle_haystack_heatmap_en.png',
    ]


def test_draw_heatmap_panels_share_one_colorbar(cells: list[CellSummary]) -> None:
    fig = Figure(layout='constrained')
    FigureCanvasAgg(fig)
    try:
        left, right = fig.subplots(1, 2)
        assert draw_heatmap(left, cells, subset='en', colorbar=False, effective_length=1000) is True  # has grey
        assert draw_heatmap(right, cells, subset='zh', colorbar=False) is True
        assert len(fig.axes) == 2  # no per-panel colorbars
        colorbar = add_accuracy_colorbar(fig, [left, right])
        assert len(fig.axes) == 3
        assert colorbar.mappable.get_clim() == (0.0, 1.0)
        assert colorbar.ax.get_ylabel() == 'accuracy'
        assert left.collections[0].get_clim() == right.collections[0].get_clim() == (0.0, 1.0)
        assert draw_heatmap(fig.add_subplot(), [cell(1000, 0.0, 1.0)], subset='en', colorbar=False) is False
    finally:
        fig.clear()


# --------------------------------------------------------------------------------------------------------------------
# Literal titles, scoring note, answers in the HTML
# --------------------------------------------------------------------------------------------------------------------


def test_png_draws_dollar_signs_literally(tmp_path: Path) -> None:
    # Both would be mathtext if parsed; the second is not even valid mathtext and would raise on drawing.
    subset, title = 'price $x^2$ set', r'model $\frac{$'
    fig = _build_heatmap_figure([cell(1000, 0.0, 1.0, subset=subset)], subset=subset, title=title)
    try:
        heading, subheading = fig.axes[0].get_title().splitlines()
        assert heading == title
        assert subheading.startswith(f'subset: {subset} · ')
    finally:
        fig.clear()
    path = plot_heatmap_png([cell(1000, 0.0, 1.0, subset=subset)], subset=subset, title=title, path=tmp_path / 'd.png')
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_scoring_note_is_a_subtitle_of_png_and_html(tmp_path: Path, cells: list[CellSummary]) -> None:
    note = 'scored by rule (judge failed qualification)'
    fig = _build_heatmap_figure(cells, subset='en', scoring_note=note)
    try:
        assert fig.axes[0].get_title().splitlines()[-1] == note
    finally:
        fig.clear()
    page = _heatmap_html(cells, subset='en', scoring_note='<b>rule</b>')
    assert '<p class="sub">&lt;b&gt;rule&lt;/b&gt;</p>' in page
    assert 'class="sub">' in _heatmap_html(cells, subset='en') and '&lt;b&gt;' not in _heatmap_html(cells, subset='en')
    written = plot_all(cells, output_dir=tmp_path, scoring_notes={'zh': note}, prefix=HEATMAP_PREFIX)
    pages = {p.name: p.read_text(encoding='utf-8') for p in written if p.suffix == '.html'}
    assert note in pages['needle_haystack_heatmap_zh.html']
    assert note not in pages['needle_haystack_heatmap_en.html']


def answer_sample(answer: str | None, accuracy: float | None = 1.0, **kwargs: object) -> SampleResult:
    return SampleResult(
        subset=str(kwargs.pop('subset', 'en')),
        context_length=int(kwargs.pop('context_length', 1000)),  # type: ignore[arg-type]
        depth_percent=float(kwargs.pop('depth_percent', 0.0)),  # type: ignore[arg-type]
        accuracy=accuracy,
        rule_recall=accuracy,
        levenshtein=None,
        answer=answer,
        judge_accuracy=kwargs.pop('judge_accuracy', None),  # type: ignore[arg-type]
        judge_status=str(kwargs.pop('judge_status', 'not_called')),
        **kwargs,  # type: ignore[arg-type]
    )


class _Visible(HTMLParser):
    """Text of the page outside <script>/<style>, and every <script> element's body."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.scripts: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ('script', 'style'):
            self._in = tag
            if tag == 'script':
                self.scripts.append('')

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == 'script':
            self.scripts[-1] += data
        elif self._in is None:
            self.text.append(data)


def test_html_shows_each_cells_answers_escaped(cells: list[CellSummary]) -> None:
    hostile = '<script>alert("x")</script> it\'s "quoted" & </pre></section>'
    answers = {
        ('en', 1000, 0.0): [
            answer_sample(hostile, judge_accuracy=1.0, judge_status='ok', judge_rating=10.0, scoring='judge'),
            answer_sample('Dolores Park', 0.0, judge_status='failed', scoring='rule_fallback', reasoning='<think>'),
        ],
        ('en', 32000, 50.0): [answer_sample(None, None, error='HTTP 500 <b>')],
        ('zh', 1000, 0.0): [answer_sample('不同的子集', subset='zh')],  # another subset: not on this page
    }
    page = _heatmap_html(cells, subset='en', answers=answers)
    parsed = _Visible()
    parsed.feed(page)
    text = ''.join(parsed.text)
    # The hostile answer is text, not markup: no script of it ran into the page, and it reads back verbatim.
    assert hostile in text
    assert len(parsed.scripts) == 1 and 'alert' not in parsed.scripts[0]
    assert '<script>alert' not in page
    assert 'score 1.00 · judge rating 10 · judge ok · rule recall 1.00 · scoring: judge · scored' in text
    assert 'score 0.00 · judge rating n/a · judge failed · rule recall 0.00 · scoring: rule_fallback' in text
    assert 'error: HTTP 500 <b>' in text and '(no answer recorded)' in text
    assert '不同的子集' not in text
    # Two cells have panels, linked by number; every panel starts hidden.
    assert re.findall(r'data-a="(\d+)"', page) == ['0', '1']
    assert page.count('<section class="ans" id="ans-') == 2 == page.count('" hidden><h2>')
    assert '1k tokens · depth 0% · 2 sample(s)' in text


def test_html_without_answers_is_unchanged(cells: list[CellSummary]) -> None:
    plain = _heatmap_html(cells, subset='en')
    assert _heatmap_html(cells, subset='en', answers={}) == plain
    assert 'data-a="' not in plain and 'id="ans-' not in plain and 'Click a cell' not in plain


def test_html_answers_are_bounded_per_cell() -> None:
    many = [answer_sample(f'answer {i}') for i in range(25)]
    page = _heatmap_html([cell(1000, 0.0, 1.0)], subset='en', answers={('en', 1000, 0.0): many})
    assert 'answer 19<' in page and 'answer 20<' not in page
    assert '5 more in the results file' in page
    long = answer_sample('x' * 5000)
    assert len(long.answer or '') <= 1000  # bounded when recorded


def test_plot_all_passes_answers_to_the_html(tmp_path: Path) -> None:
    results = [answer_sample('Dolores Park'), answer_sample('sandwich', subset='zh', context_length=2000)]
    written = plot_all(
        summarize_cells(results), output_dir=tmp_path, answers=samples_by_cell(results), prefix=HEATMAP_PREFIX
    )
    pages = {p.name: p.read_text(encoding='utf-8') for p in written if p.suffix == '.html'}
    assert 'Dolores Park' in pages['needle_haystack_heatmap_en.html']
    assert 'sandwich' in pages['needle_haystack_heatmap_zh.html']
    assert 'sandwich' not in pages['needle_haystack_heatmap_en.html']


def test_html_shows_replies_with_no_final_answer() -> None:
    flagged = answer_sample('', None, no_answer='reasoning_only', reasoning='It is Dolores Park.')
    results = [answer_sample('Dolores Park'), flagged, answer_sample('', None, no_answer='tool_call_only')]
    page = _heatmap_html(summarize_cells(results), subset='en', answers=samples_by_cell(results))
    [[td]] = parse_table(page).rows
    assert td['data-h'].split('|')[-1] == '2'  # the hover's 'no final answer (not scored)' count
    assert 'no final answer: only reasoning (see reasoning below) (not scored)' in page
    assert 'no final answer: only a tool call (not scored)' in page
    assert 'It is Dolores Park.' in page


@pytest.mark.parametrize(
    ('subset', 'tokenizer'),
    [
        ('english', 'server:smollm2-135m'),  # the demo's own subtitle, clipped at both edges before
        ('a-very-long-subset-name-' * 8, 'Qwen/Qwen3-0.6B'),  # one unbreakable word wider than the figure
    ],
)
def test_a_long_subtitle_wraps_inside_the_figure(subset: str, tokenizer: str) -> None:
    grid = [
        dataclasses.replace(cell(length, depth, 1.0, subset=subset), tokenizer=tokenizer)
        for length in (500, 1000, 2000)
        for depth in (0.0, 50.0, 100.0)
    ]
    note = 'scored by rule: the judge failed qualification'
    fig = _build_heatmap_figure(grid, subset=subset, effective_length=2000, scoring_note=note)
    try:
        fig.canvas.draw()
        title = fig.axes[0].title
        box = title.get_window_extent(fig.canvas.get_renderer())
        assert box.x0 >= 0 and box.x1 <= fig.bbox.width, (box, fig.bbox)
        text = title.get_text()
        assert text.count('\n') > 2  # wrapped beyond heading, subtitle and note
        flat = re.sub(r'\s+', '', text)
        for piece in (subset, 'meanaccuracy1.00(n=27)', 'effective:2k', re.sub(r'\s+', '', note)):
            assert piece in flat  # nothing dropped, only broken across lines
    finally:
        fig.clear()


# --------------------------------------------------------------------------------------------------------------------
# The Chinese subset's pages and PNG speak Chinese
# --------------------------------------------------------------------------------------------------------------------

CJK = re.compile('[\u3400-\u9fff]')


def two_languages() -> list[CellSummary]:
    return [
        *(cell(length, depth, 0.5, subset='english') for length in (1000, 2000) for depth in (0.0, 100.0)),
        *(cell(length, depth, 1.0, subset='chinese') for length in (1000, 2000) for depth in (0.0, 100.0)),
    ]


@pytest.mark.filterwarnings('error:Glyph .* missing from font')  # its PNG is drawn in Chinese: no empty box
def test_the_chinese_subsets_page_is_chinese_and_the_english_ones_unchanged(tmp_path: Path) -> None:
    plot_all(two_languages(), output_dir=tmp_path, prefix='h', effective_lengths={'chinese': 2000})
    zh = (tmp_path / 'h_chinese.html').read_text('utf-8')
    # lang="zh-CN": the browser draws the CJK characters in their Simplified-Chinese forms, not the Japanese ones.
    assert '<html lang="zh-CN">' in zh
    for words in ('<h1>大海捞针</h1>', '子集：chinese', '平均准确率 1.00（n=12）', '有效上下文长度：2k'):
        assert words in zh
    assert '<div class="yl axis">针的深度（%）</div>' in zh and '>上下文长度（token）</th>' in zh
    assert '<span class="ll axis">准确率</span>' in zh and '<span class="effl">有效长度</span>' in zh
    assert '"上下文长度：{} token"' in zh  # the tooltip's lines
    assert not re.search(r'Needle|accuracy|depth|Context length|effective', zh)
    en = (tmp_path / 'h_english.html').read_text('utf-8')
    assert '<html lang="en">' in en and '<h1>Needle in a haystack</h1>' in en and 'Needle depth (%)' in en
    assert not CJK.search(en)


def test_a_subsets_language_comes_from_the_run_and_defaults_to_the_built_in_ones(tmp_path: Path) -> None:
    cells = [cell(1000, 0.0, 1.0, subset='mine'), cell(1000, 0.0, 1.0, subset='chinese')]
    plot_all(cells, output_dir=tmp_path, prefix='h', languages={'mine': 'zh', 'chinese': 'en'})
    assert '<html lang="zh-CN">' in (tmp_path / 'h_mine.html').read_text('utf-8')
    assert '<html lang="en">' in (tmp_path / 'h_chinese.html').read_text('utf-8')  # the run's word wins
    plot_all(cells, output_dir=tmp_path / 'plain', prefix='h')  # a results file alone: `evalscope-niah plot`
    assert '<html lang="en">' in (tmp_path / 'plain' / 'h_mine.html').read_text('utf-8')
    assert '<html lang="zh-CN">' in (tmp_path / 'plain' / 'h_chinese.html').read_text('utf-8')


def figure_words(cells: list[CellSummary], subset: str, language: str) -> list[str]:
    fig = _build_heatmap_figure(cells, subset=subset, effective_length=2000, language=language)
    try:
        ax = fig.axes[0]
        colorbar = fig.axes[1]
        return [ax.get_title(), ax.get_xlabel(), ax.get_ylabel(), colorbar.get_ylabel()]
    finally:
        fig.clear()


def test_the_chinese_subsets_png_is_labelled_in_chinese() -> None:
    # In the fonts this machine has: an installed CJK font, else the one shipped in the package (png_fonts).
    title, x_label, y_label, colorbar = figure_words(two_languages(), 'chinese', 'zh')
    assert title.startswith('大海捞针\n子集：chinese · 平均准确率 1.00（n=12）') and '有效长度：2k' in title
    assert (x_label, y_label, colorbar) == ('上下文长度（token）', '针的深度（%）', '准确率')
    title, x_label, y_label, colorbar = figure_words(two_languages(), 'english', 'en')
    assert title.startswith('Needle in a haystack\nsubset: english · mean accuracy 0.50')
    assert (x_label, y_label, colorbar) == ('Context length (tokens)', 'Needle depth (%)', 'accuracy')


def test_without_a_usable_cjk_font_the_chinese_png_stays_english_and_says_why(
    caplog: pytest.LogCaptureFixture, no_usable_cjk_font: None
) -> None:
    """Empty boxes in place of every label would be worse than English; the log says what to install."""
    with caplog.at_level(logging.WARNING):
        title, x_label, *_ = figure_words(two_languages(), 'chinese', 'zh')
    assert title.startswith('Needle in a haystack\nsubset: chinese') and x_label == 'Context length (tokens)'
    assert 'no font with Chinese glyphs' in caplog.text and 'fonts-noto-cjk' in caplog.text


def test_without_a_usable_cjk_font_the_notes_of_the_png_are_english_and_the_pages_chinese(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_usable_cjk_font: None
) -> None:
    from evalscope_niah.reporting.outputs import draw_heatmaps
    from tests.support.results import sample

    results = [dataclasses.replace(sample(1.0, subset='chinese'), scoring='rule_fallback')]
    drawn = {}
    real_png = plotting.plot_heatmap_png

    def png(*args: object, **kwargs: object) -> Path:
        drawn['note'] = kwargs['scoring_note']
        return real_png(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(plotting, 'plot_heatmap_png', png)
    draw_heatmaps(tmp_path, results, effective_lengths={})
    assert drawn['note'] == 'scored by rule: the judge failed qualification'  # no empty boxes in the PNG
    page = (tmp_path / 'needle_haystack_heatmap_chinese.html').read_text('utf-8')
    assert '按规则评分：裁判模型未通过裁判模型检查' in page


def test_a_bound_on_the_chinese_page_is_worded_in_chinese(tmp_path: Path) -> None:
    from evalscope_niah.reporting.length_status import EffectiveBound

    bound = EffectiveBound(1000, 2000, '3 server errors, 1 cut reply')
    plot_all(two_languages(), output_dir=tmp_path, prefix='h', effective_lengths={'chinese': bound, 'english': bound})
    zh = (tmp_path / 'h_chinese.html').read_text('utf-8')
    assert '有效上下文长度：至少 1k；2k 未知：3 个服务错误、1 个被截断的回复' in zh
    en = (tmp_path / 'h_english.html').read_text('utf-8')
    assert 'effective context length: at least 1k; 2k unknown: 3 server errors, 1 cut reply' in en
