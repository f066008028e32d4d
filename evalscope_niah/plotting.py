"""NIAH heatmaps (depth x context length) from `CellSummary` rows: a static PNG and an interactive HTML file.

Figures are built with `matplotlib.figure.Figure` + an Agg canvas directly, never through pyplot, so plotting does
not touch the global pyplot figure registry or backend of whoever imports this module.
"""

from __future__ import annotations

import io
import logging
import math
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure

from evalscope_niah.report import (
    EMPTY_CELL,
    CellSummary,
    atomic_write_bytes,
    atomic_write_text,
    cell_grid,
    format_depth,
    length_labels,
)

__all__ = [
    'HeatmapError',
    'plot_all',
    'plot_heatmap_html',
    'plot_heatmap_png',
]

logger = logging.getLogger(__name__)

# Kamradt's red -> yellow -> green scale, shared by PNG and HTML so both read the same.
_COLORS = ('#F0496E', '#EBB839', '#0CD79F')
_CMAP = LinearSegmentedColormap.from_list('niah_accuracy', list(_COLORS))
_PLOTLY_COLORSCALE = [[0.0, _COLORS[0]], [0.5, _COLORS[1]], [1.0, _COLORS[2]]]
# Empty cells (no scored sample) must not look like any score on the red-green scale.
_EMPTY_COLOR = '#D9D9D9'
_DEFAULT_TITLE = 'Needle in a haystack'
_PNG_DPI = 150
# Above this many columns the length labels are rotated so they cannot overlap.
_ROTATE_AFTER_COLUMNS = 8
_UNSAFE_FILENAME_CHARS = re.compile(r'[^A-Za-z0-9._-]+')


class HeatmapError(RuntimeError):
    """Raised by `plot_all` after all subsets were tried; `failures` maps subset -> the exception it raised."""

    def __init__(self, failures: dict[str, Exception]) -> None:
        self.failures = failures
        details = '; '.join(f'{subset}: {type(exc).__name__}: {exc}' for subset, exc in failures.items())
        super().__init__(f'heatmap failed for {len(failures)} subset(s): {sorted(failures)} ({details})')


# --------------------------------------------------------------------------------------------------------------------
# Shared data preparation
# --------------------------------------------------------------------------------------------------------------------


def _accuracy_matrix(
    lengths: Sequence[int], depths: Sequence[float], grid: dict[tuple[float, int], CellSummary]
) -> np.ndarray:
    """depth x length matrix of mean accuracy; NaN where a cell is missing or has no scored sample."""
    matrix = np.full((len(depths), len(lengths)), np.nan)
    for row, depth in enumerate(depths):
        for col, length in enumerate(lengths):
            cell = grid.get((depth, length))
            if cell is not None and cell.accuracy is not None:
                matrix[row, col] = cell.accuracy
    return matrix


def _weighted_mean(cells: Iterable[CellSummary]) -> tuple[float | None, int]:
    # n-weighted mean of cell means == mean over scored samples, matching SubsetSummary.accuracy.
    pairs = [(c.accuracy, c.n) for c in cells if c.accuracy is not None and c.n > 0]
    total = sum(n for _, n in pairs)
    if total == 0:
        return None, 0
    return math.fsum(acc * n for acc, n in pairs) / total, total


def _title(subset: str, grid: dict[tuple[float, int], CellSummary], title: str | None) -> str:
    mean, total = _weighted_mean(grid.values())
    mean_text = 'n/a' if mean is None else f'{mean:.2f}'
    return f'{title or _DEFAULT_TITLE}\nsubset: {subset} · mean accuracy {mean_text} (n={total})'


def _fmt(value: float | None) -> str:
    return 'n/a' if value is None else f'{value:.2f}'


# --------------------------------------------------------------------------------------------------------------------
# PNG (seaborn)
# --------------------------------------------------------------------------------------------------------------------


def _figure_size(n_cols: int, n_rows: int) -> tuple[float, float]:
    # Grow with the grid so annotated values stay legible, within sane bounds.
    width = min(max(3.5 + 0.65 * n_cols, 7.0), 22.0)
    height = min(max(2.0 + 0.42 * n_rows, 4.5), 14.0)
    return width, height


def _mark_empty_cells(ax: Axes, matrix: np.ndarray) -> None:
    # seaborn skips masked cells when annotating; a dash says 'no score' rather than leaving the grid looking patchy.
    for row, col in zip(*np.nonzero(np.isnan(matrix)), strict=True):
        ax.text(col + 0.5, row + 0.5, EMPTY_CELL, ha='center', va='center', fontsize=8, color='#666666')


def _build_heatmap_figure(
    cells: Sequence[CellSummary], *, subset: str, show_score: bool = False, title: str | None = None
) -> Figure:
    """Draw the heatmap on a fresh Agg-backed Figure (not registered with pyplot); the caller owns and closes it."""
    lengths, depths, grid = cell_grid(cells, subset=subset)
    matrix = _accuracy_matrix(lengths, depths, grid)
    fig = Figure(figsize=_figure_size(len(lengths), len(depths)), layout='constrained')
    FigureCanvasAgg(fig)  # attaches itself to fig; seaborn measures tick labels through it
    ax = fig.add_subplot()
    ax.set_facecolor(_EMPTY_COLOR)  # masked (empty) cells show the axes background
    sns.heatmap(
        matrix,
        ax=ax,
        mask=np.isnan(matrix),
        vmin=0.0,
        vmax=1.0,
        cmap=_CMAP,
        annot=show_score,
        fmt='.2f',
        annot_kws={'fontsize': 8},
        linewidths=0.5,
        linecolor='white',
        xticklabels=length_labels(lengths),
        yticklabels=[format_depth(d) for d in depths],
        cbar_kws={'label': 'accuracy'},
    )
    if show_score:
        _mark_empty_cells(ax, matrix)
    rotate = len(lengths) > _ROTATE_AFTER_COLUMNS
    ax.tick_params(axis='x', labelrotation=45 if rotate else 0)
    if rotate:
        for label in ax.get_xticklabels():
            label.set_horizontalalignment('right')
            label.set_rotation_mode('anchor')
    ax.tick_params(axis='y', labelrotation=0)
    ax.set_xlabel('Context length (tokens)')
    ax.set_ylabel('Needle depth (%)')
    ax.set_title(_title(subset, grid, title), fontsize=11)
    if np.isnan(matrix).any():
        fig.text(0.01, 0.005, 'grey = no scored sample', fontsize=7, color='#555555', ha='left', va='bottom')
    return fig


def plot_heatmap_png(
    cells: Sequence[CellSummary],
    *,
    subset: str,
    path: str | os.PathLike[str],
    show_score: bool = False,
    title: str | None = None,
) -> Path:
    """Save the accuracy heatmap of one subset as PNG (atomically); ValueError when the subset has no cells."""
    fig = _build_heatmap_figure(cells, subset=subset, show_score=show_score, title=title)
    try:
        buffer = io.BytesIO()
        fig.savefig(buffer, format='png', dpi=_PNG_DPI)
        return atomic_write_bytes(path, buffer.getvalue())
    finally:
        # Not a pyplot figure, so plt.close has nothing to unregister; clearing frees the artists right away.
        fig.clear()


# --------------------------------------------------------------------------------------------------------------------
# HTML (plotly)
# --------------------------------------------------------------------------------------------------------------------


def _hover_fields(length: int, depth: float, cell: CellSummary | None) -> list[str]:
    if cell is None:
        return [f'{length:,}', format_depth(depth), 'no data', '0', 'n/a', '0', '0', 'n/a']
    ci = 'n/a' if cell.ci_low is None or cell.ci_high is None else f'[{cell.ci_low:.2f}, {cell.ci_high:.2f}]'
    return [
        f'{length:,}',
        format_depth(depth),
        _fmt(cell.accuracy),
        str(cell.n),
        _fmt(cell.rule_recall),
        str(cell.judge_failures),
        str(cell.errors),
        ci,
    ]


_HOVER_TEMPLATE = (
    'context length: %{customdata[0]} tokens<br>'
    'depth: %{customdata[1]}%<br>'
    'mean accuracy: %{customdata[2]}<br>'
    'n: %{customdata[3]}<br>'
    'rule recall mean: %{customdata[4]}<br>'
    'judge failures: %{customdata[5]}<br>'
    'errors: %{customdata[6]}<br>'
    '95% CI: %{customdata[7]}'
    '<extra></extra>'
)


def _build_plotly_figure(cells: Sequence[CellSummary], *, subset: str, title: str | None = None) -> go.Figure:
    lengths, depths, grid = cell_grid(cells, subset=subset)
    matrix = _accuracy_matrix(lengths, depths, grid)
    # None (not NaN) marks gaps; plotly leaves them undrawn so the grey background shows.
    z = [[None if math.isnan(v) else float(v) for v in row] for row in matrix]
    customdata = [[_hover_fields(length, depth, grid.get((depth, length))) for length in lengths] for depth in depths]
    heatmap = go.Heatmap(
        z=z,
        x=length_labels(lengths),
        y=[format_depth(d) for d in depths],
        zmin=0.0,
        zmax=1.0,
        colorscale=_PLOTLY_COLORSCALE,
        colorbar={'title': {'text': 'accuracy'}},
        customdata=customdata,
        hovertemplate=_HOVER_TEMPLATE,
        hoverongaps=True,  # all-errored cells have no colour but their error count is worth hovering
        xgap=1,
        ygap=1,
    )
    fig = go.Figure(data=[heatmap])
    fig.update_layout(
        title={'text': _title(subset, grid, title).replace('\n', '<br>')},
        plot_bgcolor=_EMPTY_COLOR,
        height=max(420, 160 + 28 * len(depths)),
    )
    # Category axes: labels like '1000' must not be parsed as numbers and re-spaced; depth 0 on top (Kamradt).
    fig.update_xaxes(type='category', title={'text': 'Context length (tokens)'})
    fig.update_yaxes(type='category', autorange='reversed', title={'text': 'Needle depth (%)'})
    return fig


def plot_heatmap_html(
    cells: Sequence[CellSummary],
    *,
    subset: str,
    path: str | os.PathLike[str],
    title: str | None = None,
) -> Path:
    """Save an interactive, self-contained (plotly.js inlined, works offline) HTML heatmap of one subset."""
    fig = _build_plotly_figure(cells, subset=subset, title=title)
    html = fig.to_html(
        include_plotlyjs=True,
        full_html=True,
        config={'displaylogo': False},
        div_id='niah-heatmap',  # fixed id: identical inputs give identical files
    )
    return atomic_write_text(path, html)


# --------------------------------------------------------------------------------------------------------------------
# All subsets
# --------------------------------------------------------------------------------------------------------------------


def _safe_name(subset: str) -> str:
    # Subset names come from data; keep them from escaping output_dir or breaking file names.
    return _UNSAFE_FILENAME_CHARS.sub('_', subset) or '_'


def plot_all(
    cells: Iterable[CellSummary],
    *,
    output_dir: str | os.PathLike[str],
    show_score: bool = False,
    prefix: str = 'needle_haystack_heatmap',
) -> list[Path]:
    """Write `{prefix}_{subset}.png` and `.html` for every subset, in subset order.

    Characters outside [A-Za-z0-9._-] in subset names become '_' in file names.  A subset that fails is logged
    and skipped so the others are still drawn; afterwards one `HeatmapError` names every failed subset.
    """
    cell_list = list(cells)
    if not cell_list:
        raise ValueError('no cells to plot')
    subsets = sorted({c.subset for c in cell_list})
    names = {subset: _safe_name(subset) for subset in subsets}
    if len(set(names.values())) != len(names):
        raise ValueError(f'subset names collide after making them file-name safe: {names}')
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    failures: dict[str, Exception] = {}
    for subset in subsets:
        # Not Path.with_suffix: a dotted subset name ('en.v2') would lose its tail.
        stem = f'{prefix}_{names[subset]}'
        try:
            png = plot_heatmap_png(cell_list, subset=subset, path=out / f'{stem}.png', show_score=show_score)
            written.append(png)
            written.append(plot_heatmap_html(cell_list, subset=subset, path=out / f'{stem}.html'))
        except Exception as exc:  # keep drawing the other subsets; reported together below
            logger.error('heatmap for subset %r failed: %s: %s', subset, type(exc).__name__, exc, exc_info=exc)
            failures[subset] = exc
    if failures:
        raise HeatmapError(failures) from next(iter(failures.values()))
    return written
