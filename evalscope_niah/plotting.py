"""NIAH heatmaps (depth x context length) from `CellSummary` rows: a static PNG and an interactive HTML file.

The PNG is built with `matplotlib.figure.Figure` + an Agg canvas directly, never through pyplot, so plotting does
not touch the global pyplot figure registry or backend of whoever imports this module.  The HTML is a plain table
with inline CSS and a few lines of inline JS for the hover tooltip: self-contained, offline, a few tens of KB at
most, coloured with the same colormap as the PNG.
"""

from __future__ import annotations

import html
import io
import json
import logging
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.colorbar import Colorbar
from matplotlib.colors import LinearSegmentedColormap, Normalize, to_hex
from matplotlib.figure import Figure
from matplotlib.transforms import blended_transform_factory

from .atomic import atomic_write_bytes, atomic_write_text
from .labels import EMPTY_CELL, cell_grid, format_depth, length_labels
from .stats import CellSummary

__all__ = [
    'HeatmapError',
    'add_accuracy_colorbar',
    'draw_heatmap',
    'plot_all',
    'plot_heatmap_html',
    'plot_heatmap_png',
]

logger = logging.getLogger(__name__)

# Kamradt's red -> yellow -> green scale, shared by PNG and HTML so both read the same.
_COLORS = ('#F0496E', '#EBB839', '#0CD79F')
_CMAP = LinearSegmentedColormap.from_list('niah_accuracy', list(_COLORS))
# Empty cells (no scored sample) must not look like any score on the red-green scale.
_EMPTY_COLOR = '#D9D9D9'
_DEFAULT_TITLE = 'Needle in a haystack'
_PNG_DPI = 150
# Above this many columns the length labels are rotated so they cannot overlap.
_ROTATE_AFTER_COLUMNS = 8
_UNSAFE_FILENAME_CHARS = re.compile(r'[^A-Za-z0-9._-]+')
# The effective-length marker: dark and dashed so it reads on every colour of the red-green scale.
_EFFECTIVE_COLOR = '#1A1A1A'


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


def _title_parts(subset: str, grid: dict[tuple[float, int], CellSummary], title: str | None) -> tuple[str, str]:
    """(heading, 'subset: ... · mean accuracy ... (n=...)'), shared by the PNG and the HTML heatmap."""
    mean, total = _weighted_mean(grid.values())
    mean_text = 'n/a' if mean is None else f'{mean:.2f}'
    return title or _DEFAULT_TITLE, f'subset: {subset} · mean accuracy {mean_text} (n={total})'


def _title(subset: str, grid: dict[tuple[float, int], CellSummary], title: str | None) -> str:
    return '\n'.join(_title_parts(subset, grid, title))


def _fmt(value: float | None) -> str:
    return 'n/a' if value is None else f'{value:.2f}'


def _effective_column(lengths: Sequence[int], effective_length: int | None, *, subset: str) -> int | None:
    """Column index of the effective length, None when there is none to mark."""
    if effective_length is None:
        return None
    if effective_length not in lengths:
        # A length off the grid means the caller mixed up runs or subsets; a line in a guessed place would mislead.
        raise ValueError(
            f'effective_length {effective_length} is not a context length of subset {subset!r} ({list(lengths)})'
        )
    return list(lengths).index(effective_length)


# --------------------------------------------------------------------------------------------------------------------
# PNG (matplotlib)
# --------------------------------------------------------------------------------------------------------------------


def _figure_size(n_cols: int, n_rows: int) -> tuple[float, float]:
    # Grow with the grid so annotated values stay legible, within sane bounds.
    width = min(max(3.5 + 0.65 * n_cols, 7.0), 22.0)
    height = min(max(2.0 + 0.42 * n_rows, 4.5), 14.0)
    return width, height


def _annotate_scores(ax: Axes, matrix: np.ndarray) -> None:
    for row, col in np.ndindex(matrix.shape):
        value = matrix[row, col]
        if np.isnan(value):
            # A dash says 'no score' rather than leaving the grid looking patchy.
            ax.text(col + 0.5, row + 0.5, EMPTY_CELL, ha='center', va='center', fontsize=8, color='#666666')
            continue
        red, green, blue, _ = _CMAP(float(value))
        # Dark text on light cells, light on dark (relative luminance), so every score stays readable.
        dark = 0.2126 * red + 0.7152 * green + 0.0722 * blue > 0.45
        ax.text(
            col + 0.5,
            row + 0.5,
            f'{value:.2f}',
            ha='center',
            va='center',
            fontsize=8,
            color='#262626' if dark else 'white',
        )


def _mark_effective_length(ax: Axes, column: int, n_columns: int, label: str) -> None:
    # The line sits on the right edge of the effective column: everything left of it passed.
    x = column + 1
    ax.axvline(x, color=_EFFECTIVE_COLOR, linestyle='--', linewidth=1.8)
    # Text on the side with more room, inside the axes so it never collides with the title.
    left_half = x <= n_columns / 2
    ax.text(
        x + (0.08 if left_half else -0.08),
        0.985,
        f'effective: {label}',
        transform=blended_transform_factory(ax.transData, ax.transAxes),
        ha='left' if left_half else 'right',
        va='top',
        fontsize=8,
        color=_EFFECTIVE_COLOR,
        bbox={'boxstyle': 'round,pad=0.2', 'facecolor': 'white', 'edgecolor': 'none', 'alpha': 0.85},
    )


def draw_heatmap(
    ax: Axes,
    cells: Sequence[CellSummary],
    *,
    subset: str,
    show_score: bool = False,
    effective_length: int | None = None,
    colorbar: bool = True,
) -> bool:
    """Draw one subset's depth x length accuracy heatmap on `ax` (fixed 0-1 colour scale).

    `effective_length` (a context length of the grid) adds a dashed line at the right edge of its column and an
    'effective: 16k' label.  Without `colorbar` the caller adds a shared one (`add_accuracy_colorbar`).  Returns
    True when some cell is empty (drawn grey), so the caller can explain grey once.  ValueError when the subset
    has no cells or `effective_length` is not one of its lengths.
    """
    lengths, depths, grid = cell_grid(cells, subset=subset)
    column = _effective_column(lengths, effective_length, subset=subset)
    matrix = _accuracy_matrix(lengths, depths, grid)
    labels = length_labels(lengths)
    ax.set_facecolor(_EMPTY_COLOR)  # masked (empty) cells show the axes background
    # Plain matplotlib: seaborn's heatmap would import scipy.stats, seconds of a smoke run, for the same picture.
    mesh = ax.pcolormesh(
        np.ma.masked_invalid(matrix), cmap=_CMAP, vmin=0.0, vmax=1.0, edgecolors='white', linewidth=0.5
    )
    ax.set_xlim(0, len(lengths))
    ax.set_ylim(len(depths), 0)  # the shallowest depth on top
    ax.set_xticks(np.arange(len(lengths)) + 0.5, labels)
    ax.set_yticks(np.arange(len(depths)) + 0.5, [format_depth(d) for d in depths])
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if show_score:
        _annotate_scores(ax, matrix)
    if colorbar:
        ax.figure.colorbar(mesh, ax=ax, label='accuracy')
    rotate = len(lengths) > _ROTATE_AFTER_COLUMNS
    ax.tick_params(axis='x', labelrotation=45 if rotate else 0)
    if rotate:
        for label in ax.get_xticklabels():
            label.set_horizontalalignment('right')
            label.set_rotation_mode('anchor')
    ax.tick_params(axis='y', labelrotation=0)
    if column is not None:
        _mark_effective_length(ax, column, len(lengths), labels[column])
    return bool(np.isnan(matrix).any())


def add_accuracy_colorbar(fig: Figure, axes: Sequence[Axes]) -> Colorbar:
    """One colorbar for several heatmaps drawn with `colorbar=False`: the same fixed 0-1 scale they all use."""
    mappable = ScalarMappable(norm=Normalize(vmin=0.0, vmax=1.0), cmap=_CMAP)
    return fig.colorbar(mappable, ax=list(axes), label='accuracy', shrink=0.9)


def _add_empty_note(fig: Figure) -> None:
    fig.text(0.01, 0.005, 'grey = no scored sample', fontsize=7, color='#555555', ha='left', va='bottom')


def _build_heatmap_figure(
    cells: Sequence[CellSummary],
    *,
    subset: str,
    show_score: bool = False,
    title: str | None = None,
    effective_length: int | None = None,
) -> Figure:
    """Draw the heatmap on a fresh Agg-backed Figure (not registered with pyplot); the caller owns and closes it."""
    lengths, depths, grid = cell_grid(cells, subset=subset)
    fig = Figure(figsize=_figure_size(len(lengths), len(depths)), layout='constrained')
    FigureCanvasAgg(fig)  # attaches itself to fig; the constrained layout measures tick labels through it
    ax = fig.add_subplot()
    try:
        has_empty = draw_heatmap(
            ax, cells, subset=subset, show_score=show_score, effective_length=effective_length, colorbar=True
        )
    except BaseException:
        fig.clear()
        raise
    ax.set_xlabel('Context length (tokens)')
    ax.set_ylabel('Needle depth (%)')
    ax.set_title(_title(subset, grid, title), fontsize=11)
    if has_empty:
        _add_empty_note(fig)
    return fig


def plot_heatmap_png(
    cells: Sequence[CellSummary],
    *,
    subset: str,
    path: str | os.PathLike[str],
    show_score: bool = False,
    title: str | None = None,
    effective_length: int | None = None,
) -> Path:
    """Save the accuracy heatmap of one subset as PNG (atomically); ValueError when the subset has no cells.

    `effective_length`, a context length of the subset, is marked by a dashed line and an 'effective: ...' label.
    """
    fig = _build_heatmap_figure(
        cells, subset=subset, show_score=show_score, title=title, effective_length=effective_length
    )
    try:
        buffer = io.BytesIO()
        fig.savefig(buffer, format='png', dpi=_PNG_DPI)
        return atomic_write_bytes(path, buffer.getvalue())
    finally:
        # Not a pyplot figure, so plt.close has nothing to unregister; clearing frees the artists right away.
        fig.clear()


# --------------------------------------------------------------------------------------------------------------------
# HTML (self-contained table, no dependencies)
# --------------------------------------------------------------------------------------------------------------------

# One line per `_hover_fields` entry; '{}' is replaced by the field.  The tooltip script fills them in on hover.
_HOVER_LINES = (
    'context length: {} tokens',
    'depth: {}%',
    'mean accuracy: {}',
    'n: {}',
    'rule recall mean: {}',
    'judge failures: {}',
    'errors: {}',
    '95% CI: {}',
)
# Separates the hover fields inside a cell's data-h attribute; no formatted field contains it.
_FIELD_SEP = '|'
# Colour stops of the legend bar: the gradient between them is linear, like the colormap itself.
_LEGEND_STOPS = 11
_LEGEND_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)

_HTML_CSS = """\
body{margin:16px 24px;font:13px/1.35 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;\
color:#222;background:#fff}
h1{font-size:17px;margin:0 0 2px}
.sub{margin:0 0 12px;color:#444}
table{border-collapse:separate;border-spacing:1px}
th{font-weight:normal;color:#333;white-space:nowrap}
tbody th{text-align:right;padding:0 6px 0 0}
tfoot th{padding:4px 2px 0}
td[data-h]{min-width:46px;height:26px;padding:0 4px;text-align:center;white-space:nowrap;color:#1a1a1a;\
font-variant-numeric:tabular-nums;cursor:default}
td[data-h]:hover{outline:2px solid #222;outline-offset:-1px}
td.e{color:#666}
td.ec,th.eff{border-right:2px dashed #1a1a1a}
th.eff{font-weight:700}
.effl{display:block;font-size:11px;font-weight:normal}
.axis{font-weight:600}
.yl{writing-mode:vertical-rl;transform:rotate(180deg);margin:0 4px}
.xl{padding-top:6px}
.leg{position:relative;min-width:84px;padding:0}
.bar{position:absolute;top:0;bottom:0;left:14px;width:14px;border:1px solid #999}
.tk{position:absolute;left:32px;transform:translateY(-50%);font-size:11px;line-height:1}
.tk:before{content:'';position:absolute;left:-5px;top:50%;width:4px;border-top:1px solid #666}
.ll{position:absolute;left:72px;top:50%;transform:translate(-50%,-50%) rotate(90deg)}
.note{margin-top:8px;font-size:12px;color:#555}
.sw{display:inline-block;width:12px;height:12px;vertical-align:-2px;border:1px solid #aaa}
#tip{position:fixed;z-index:1;pointer-events:none;white-space:pre;background:#1e1e1e;color:#fff;\
padding:6px 9px;border-radius:4px;font-size:12px;line-height:1.45}
"""

# Fills the tooltip from the hovered cell's data-h; the only script, inline, and no network access.
_HTML_JS = """\
(function(){
var L=%s,t=document.getElementById('tip'),g=document.getElementById('grid');
function hide(){t.hidden=true;}
g.addEventListener('mousemove',function(e){
var c=e.target.closest('td[data-h]');
if(!c){hide();return;}
var v=c.getAttribute('data-h').split('%s');
t.textContent=L.map(function(s,i){return s.replace('{}',v[i]);}).join('\\n');
t.hidden=false;
var r=t.getBoundingClientRect(),x=e.clientX+14,y=e.clientY+14;
if(x+r.width>innerWidth)x=Math.max(0,e.clientX-14-r.width);
if(y+r.height>innerHeight)y=Math.max(0,e.clientY-14-r.height);
t.style.left=x+'px';t.style.top=y+'px';
});
g.addEventListener('mouseleave',hide);
})();
"""


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


def _color(value: float) -> str:
    """'#rrggbb' of an accuracy on the fixed 0-1 scale, exactly as the PNG colours it."""
    return to_hex(_CMAP(value))


def _esc(text: str) -> str:
    return html.escape(text, quote=True).replace('\n', '<br>')


def _score(cell: CellSummary | None) -> float | None:
    """The cell's accuracy, or None when it has no colour (missing, nothing scored, or NaN)."""
    if cell is None or cell.accuracy is None or math.isnan(cell.accuracy):
        return None
    return cell.accuracy


def _cell_td(length: int, depth: float, cell: CellSummary | None, *, effective: bool = False) -> str:
    fields = _esc(_FIELD_SEP.join(_hover_fields(length, depth, cell)))
    score = _score(cell)
    # 'ec': the effective length's column, drawn with a dashed right border like the PNG's line.
    classes = ' '.join(name for name, on in (('e', score is None), ('ec', effective)) if on)
    class_attr = f' class="{classes}"' if classes else ''
    if score is None:
        return f'<td{class_attr} style="background:{_EMPTY_COLOR}" data-h="{fields}">{EMPTY_CELL}</td>'
    return f'<td{class_attr} style="background:{_color(score)}" data-h="{fields}">{score:.2f}</td>'


def _legend_td(n_rows: int) -> str:
    stops = ','.join(_color(i / (_LEGEND_STOPS - 1)) for i in reversed(range(_LEGEND_STOPS)))
    ticks = ''.join(f'<span class="tk" style="top:{100 * (1 - v):g}%">{v:g}</span>' for v in _LEGEND_TICKS)
    return (
        f'<td class="leg" rowspan="{n_rows}"><div class="bar" style="background:linear-gradient({stops})"></div>'
        f'{ticks}<span class="ll axis">accuracy</span></td>'
    )


def _heatmap_html(
    cells: Sequence[CellSummary], *, subset: str, title: str | None = None, effective_length: int | None = None
) -> str:
    """The whole HTML document for one subset: a coloured table with a hover tooltip, no external resources."""
    lengths, depths, grid = cell_grid(cells, subset=subset)
    column = _effective_column(lengths, effective_length, subset=subset)
    labels = length_labels(lengths)
    heading, subheading = _title_parts(subset, grid, title)
    if column is not None:
        subheading = f'{subheading} · effective context length: {labels[column]}'
    n_cols = len(lengths)
    rows = []
    for row, depth in enumerate(depths):
        parts = ['<tr>']
        if row == 0:
            parts.append(f'<th rowspan="{len(depths)}"><div class="yl axis">Needle depth (%)</div></th>')
        parts.append(f'<th>{_esc(format_depth(depth))}</th>')
        parts.extend(
            _cell_td(length, depth, grid.get((depth, length)), effective=col == column)
            for col, length in enumerate(lengths)
        )
        if row == 0:
            parts.append(_legend_td(len(depths)))
        parts.append('</tr>')
        rows.append(''.join(parts))
    col_labels = ''.join(
        f'<th class="eff">{_esc(label)}<span class="effl">effective</span></th>'
        if col == column
        else f'<th>{_esc(label)}</th>'
        for col, label in enumerate(labels)
    )
    has_empty = any(_score(grid.get((d, t))) is None for d in depths for t in lengths)
    note = (
        f'<p class="note"><span class="sw" style="background:{_EMPTY_COLOR}"></span> '
        f'{EMPTY_CELL} = no scored sample</p>\n'
        if has_empty
        else ''
    )
    doc_title = _esc(f'{heading} · {subheading}'.replace('\n', ' '))
    script = _HTML_JS % (json.dumps(list(_HOVER_LINES)), _FIELD_SEP)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width,initial-scale=1">\n'
        f'<title>{doc_title}</title>\n<style>\n{_HTML_CSS}</style>\n</head>\n<body>\n'
        f'<h1>{_esc(heading)}</h1>\n<p class="sub">{_esc(subheading)}</p>\n'
        '<table id="grid">\n<tbody>\n' + '\n'.join(rows) + '\n</tbody>\n<tfoot>\n'
        f'<tr><th colspan="2"></th>{col_labels}<th></th></tr>\n'
        f'<tr><th colspan="2"></th><th class="xl axis" colspan="{n_cols}">Context length (tokens)</th><th></th></tr>\n'
        '</tfoot>\n</table>\n'
        f'{note}<div id="tip" role="tooltip" hidden></div>\n<script>\n{script}</script>\n</body>\n</html>\n'
    )


def plot_heatmap_html(
    cells: Sequence[CellSummary],
    *,
    subset: str,
    path: str | os.PathLike[str],
    title: str | None = None,
    effective_length: int | None = None,
) -> Path:
    """Save an interactive HTML heatmap of one subset (atomically); ValueError when the subset has no cells.

    The file is self-contained and small (plain HTML table, inline CSS and a few lines of inline JS for the hover
    tooltip; no external resources, works offline); identical inputs give identical bytes.  `effective_length`
    marks that length's column (header and a dashed border) and is stated under the title.
    """
    return atomic_write_text(path, _heatmap_html(cells, subset=subset, title=title, effective_length=effective_length))


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
    effective_lengths: Mapping[str, int | None] | None = None,
    title: str | None = None,
) -> list[Path]:
    """Write `{prefix}_{subset}.png` and `.html` for every subset, in subset order.

    `effective_lengths` maps subset -> effective context length to mark (a missing subset or None: no mark).
    Characters outside [A-Za-z0-9._-] in subset names become '_' in file names.  A subset that fails is logged
    and skipped so the others are still drawn; afterwards one `HeatmapError` names every failed subset.
    """
    effective = dict(effective_lengths or {})
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
        marked = effective.get(subset)
        try:
            png = plot_heatmap_png(
                cell_list,
                subset=subset,
                path=out / f'{stem}.png',
                show_score=show_score,
                title=title,
                effective_length=marked,
            )
            written.append(png)
            written.append(
                plot_heatmap_html(
                    cell_list, subset=subset, path=out / f'{stem}.html', title=title, effective_length=marked
                )
            )
        except Exception as exc:  # keep drawing the other subsets; reported together below
            logger.error('heatmap for subset %r failed: %s: %s', subset, type(exc).__name__, exc, exc_info=exc)
            failures[subset] = exc
    if failures:
        raise HeatmapError(failures) from next(iter(failures.values()))
    return written
