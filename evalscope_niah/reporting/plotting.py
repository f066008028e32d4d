"""NIAH heatmaps (depth x context length) from `CellSummary` rows: a static PNG and an interactive HTML file.

The PNG is built with `matplotlib.figure.Figure` + an Agg canvas directly, never through pyplot, so plotting does
not touch the global pyplot figure registry or backend of whoever imports this module.  The HTML is a plain table
with inline CSS and a few lines of inline JS for the hover tooltip: self-contained, offline, a few tens of KB at
most, coloured with the same colormap as the PNG.
"""

from __future__ import annotations

import io
import os
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.colorbar import Colorbar
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.text import Text

from ..atomic import atomic_write_bytes
from ..escaping import inert_logger, terminal_text
from . import png_fonts
from .heatmap_html import plot_heatmap_html
from .heatmap_style import CMAP, EMPTY_COLOR, effective_column, effective_mark, title_parts
from .labels import (
    EMPTY_CELL,
    cell_grid,
    file_name_part,
    format_depth,
    length_axis_label,
    length_labels,
    subset_tokenizer,
)
from .length_status import EffectiveBound
from .page_text import EN, PageText, page_text, subset_language
from .stats import CellKey, CellSummary

if TYPE_CHECKING:
    from .sample_record import SampleResult

__all__ = [
    'HeatmapError',
    'add_accuracy_colorbar',
    'draw_heatmap',
    'plot_all',
    'plot_heatmap_html',
    'plot_heatmap_png',
    'png_bytes',
]

logger = inert_logger(__name__)

_PNG_DPI = 150
# Above this many columns the length labels are rotated so they cannot overlap.
_ROTATE_AFTER_COLUMNS = 8
_TITLE_FONTSIZE = 11
# The share of the figure's width a title line may take: the rest is margin, so no glyph touches the edge.
_TITLE_WIDTH_SHARE = 0.96
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


def _png_title(
    subset: str,
    grid: dict[tuple[float, int], CellSummary],
    title: str | None,
    *,
    effective_label: str | None,
    scoring_note: str | None,
    tokenizer: str | None,
    text: PageText = EN,
) -> str:
    # The effective length is stated here, above the grid, so no label can cover a cell's number.
    heading, subheading = title_parts(subset, grid, title, tokenizer=tokenizer, text=text)
    if effective_label is not None:
        subheading = f'{subheading} · {text.effective_png.format(label=effective_label)}'
    return '\n'.join([heading, subheading, *([scoring_note] if scoring_note else [])])


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
        red, green, blue, _ = CMAP(float(value))
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


def _mark_effective_length(ax: Axes, column: int) -> None:
    # The line sits on the right edge of the effective column: everything left of it passed.  Its label goes into
    # the title (callers' job), never inside the grid where it would cover a score.
    ax.axvline(column + 1, color=_EFFECTIVE_COLOR, linestyle='--', linewidth=1.8)


def draw_heatmap(
    ax: Axes,
    cells: Sequence[CellSummary],
    *,
    subset: str,
    show_score: bool = False,
    effective_length: int | None = None,
    colorbar: bool = True,
    text: PageText = EN,
) -> bool:
    """Draw one subset's depth x length accuracy heatmap on `ax` (fixed 0-1 colour scale).

    `effective_length` (a context length of the grid) adds a dashed line at the right edge of its column; the
    caller states it in the title ('effective: 16k'), so nothing is drawn over the cells.  Without `colorbar` the
    caller adds a shared one (`add_accuracy_colorbar`).  Returns True when some cell is empty (drawn grey), so the
    caller can explain grey once.  ValueError when the subset has no cells or `effective_length` is not one of its
    lengths.
    """
    lengths, depths, grid = cell_grid(cells, subset=subset)
    column = effective_column(lengths, effective_length, subset=subset)
    matrix = _accuracy_matrix(lengths, depths, grid)
    labels = length_labels(lengths)
    ax.set_facecolor(EMPTY_COLOR)  # masked (empty) cells show the axes background
    # Plain matplotlib: seaborn's heatmap would import scipy.stats, seconds of a smoke run, for the same picture.
    mesh = ax.pcolormesh(np.ma.masked_invalid(matrix), cmap=CMAP, vmin=0.0, vmax=1.0, edgecolors='white', linewidth=0.5)
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
        ax.figure.colorbar(mesh, ax=ax, label=text.accuracy)
    rotate = len(lengths) > _ROTATE_AFTER_COLUMNS
    ax.tick_params(axis='x', labelrotation=45 if rotate else 0)
    if rotate:
        for label in ax.get_xticklabels():
            label.set_horizontalalignment('right')
            label.set_rotation_mode('anchor')
    ax.tick_params(axis='y', labelrotation=0)
    if column is not None:
        _mark_effective_length(ax, column)
    return bool(np.isnan(matrix).any())


def add_accuracy_colorbar(fig: Figure, axes: Sequence[Axes], *, text: PageText = EN) -> Colorbar:
    """One colorbar for several heatmaps drawn with `colorbar=False`: the same fixed 0-1 scale they all use."""
    mappable = ScalarMappable(norm=Normalize(vmin=0.0, vmax=1.0), cmap=CMAP)
    return fig.colorbar(mappable, ax=list(axes), label=text.accuracy, shrink=0.9)


def _add_empty_note(fig: Figure, text: PageText) -> None:
    fig.text(0.01, 0.005, text.empty_png, fontsize=7, color='#555555', ha='left', va='bottom')


def _build_heatmap_figure(
    cells: Sequence[CellSummary],
    *,
    subset: str,
    show_score: bool = False,
    title: str | None = None,
    effective_length: EffectiveBound | int | None = None,
    scoring_note: str | None = None,
    language: str = 'en',
) -> Figure:
    """Draw the heatmap on a fresh Agg-backed Figure (not registered with pyplot); the caller owns and closes it."""
    words, fonts = _png_words(language)
    with fonts:
        return _draw_heatmap_figure(
            cells,
            subset=subset,
            show_score=show_score,
            title=title,
            effective_length=effective_length,
            scoring_note=scoring_note,
            text=words,
        )


def _draw_heatmap_figure(
    cells: Sequence[CellSummary],
    *,
    subset: str,
    show_score: bool,
    title: str | None,
    effective_length: EffectiveBound | int | None,
    scoring_note: str | None,
    text: PageText,
) -> Figure:
    lengths, depths, grid = cell_grid(cells, subset=subset)
    column, effective_label = effective_mark(lengths, effective_length, subset=subset, text=text)
    marked = None if column is None else lengths[column]
    fig = Figure(figsize=_figure_size(len(lengths), len(depths)), layout='constrained')
    FigureCanvasAgg(fig)  # attaches itself to fig; the constrained layout measures tick labels through it
    ax = fig.add_subplot()
    try:
        has_empty = draw_heatmap(
            ax, cells, subset=subset, show_score=show_score, effective_length=marked, colorbar=True, text=text
        )
    except BaseException:
        fig.clear()
        raise
    tokenizer = subset_tokenizer(cells, subset=subset)
    ax.set_xlabel(length_axis_label(tokenizer, text=text))
    ax.set_ylabel(text.depth_axis)
    heading = _png_title(
        subset,
        grid,
        title,
        effective_label=effective_label,
        scoring_note=scoring_note,
        tokenizer=tokenizer,
        text=text,
    )
    # parse_math=False: subset names and titles are data; a '$' in them must print as itself, not as mathtext.
    ax.set_title(_fit_title(fig, ax, heading), fontsize=_TITLE_FONTSIZE, parse_math=False)
    if has_empty:
        _add_empty_note(fig, text)
    return fig


def _fit_title(fig: Figure, ax: Axes, text: str) -> str:
    """The title with each line that is wider than the room above the axes broken at its ' · ' separators (a long
    subset, model or tokenizer name makes the subtitle outgrow a small grid's figure, and a title centred on the axes
    that does is clipped at the edges), a piece still too wide broken at spaces or, failing those, anywhere. Widths
    are measured, not guessed; the room is twice the distance from the axes' centre to the nearer figure edge (the
    colorbar on the right moves the centre left), once the layout has placed the axes."""
    layout = fig.get_layout_engine()
    if layout is not None:
        _literal_texts(fig)  # the layout measures every text: a '$' in a name must not be parsed as mathtext there
        layout.execute(fig)
    box = ax.get_position()
    centre = (box.x0 + box.x1) / 2
    renderer = fig.canvas.get_renderer()
    limit = fig.bbox.width * 2 * min(centre, 1 - centre) * _TITLE_WIDTH_SHARE
    probe = fig.text(0, 0, '', fontsize=_TITLE_FONTSIZE, parse_math=False)

    def width(line: str) -> float:
        probe.set_text(terminal_text(line))  # as png_bytes will draw it
        return probe.get_window_extent(renderer).width

    def pieces(line: str) -> list[str]:
        if width(line) <= limit:
            return [line]
        for separator in (' · ', ' '):
            parts = line.split(separator)
            if len(parts) > 1:
                lines = [parts[0]]
                for part in parts[1:]:
                    joined = lines[-1] + separator + part
                    lines[-1:] = [joined] if width(joined) <= limit else [lines[-1], part]
                return [piece for line in lines for piece in pieces(line)] if len(lines) > 1 else cut(line)
        return cut(line)

    def cut(line: str) -> list[str]:
        chars = max(8, int(len(line) * limit / width(line)))
        return textwrap.wrap(line, width=chars, break_long_words=True, break_on_hyphens=False) or [line]

    try:
        return '\n'.join(piece for line in text.split('\n') for piece in pieces(line))
    finally:
        probe.remove()


def _literal_texts(fig: Figure) -> None:
    """Every text of the figure drawn as written: no mathtext, controls and bidi characters shown as escapes."""
    for text in fig.findobj(Text):
        text.set_parse_math(False)
        text.set_text(terminal_text(text.get_text()))


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG: the one place a figure's text leaves us, so every text is drawn literally (a '$' is not
    mathtext, which could fail the draw) and its control and bidi characters are shown as escapes (a font has no
    glyph for them, and matplotlib's warning would print them raw)."""
    _literal_texts(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format='png', dpi=_PNG_DPI)
    return buffer.getvalue()


def plot_heatmap_png(
    cells: Sequence[CellSummary],
    *,
    subset: str,
    path: str | os.PathLike[str],
    show_score: bool = False,
    title: str | None = None,
    effective_length: EffectiveBound | int | None = None,
    scoring_note: str | None = None,
    language: str = 'en',
) -> Path:
    """Save the accuracy heatmap of one subset as PNG (atomically); ValueError when the subset has no cells.

    `effective_length`, a context length of the subset, is marked by a dashed line and stated in the title
    ('effective: 16k'); a bound (length_status.EffectiveBound) marks the lengths known to pass and is stated as one
    ('effective: at least 2.5k; 3k unknown: 3 server errors').  `scoring_note` (e.g. 'scored by rule (judge failed
    qualification)') is a last title line.
    `language` ('en', 'zh': the subset's) is the language of its words (with a font that has its glyphs).
    Titles are drawn literally: a '$' in a subset name or title is not mathtext.
    """
    fig = _build_heatmap_figure(
        cells,
        subset=subset,
        show_score=show_score,
        title=title,
        effective_length=effective_length,
        scoring_note=scoring_note,
        language=language,
    )
    try:
        return atomic_write_bytes(path, png_bytes(fig))
    finally:
        # Not a pyplot figure, so plt.close has nothing to unregister; clearing frees the artists right away.
        fig.clear()


# --------------------------------------------------------------------------------------------------------------------
# All subsets
# --------------------------------------------------------------------------------------------------------------------


def _png_words(language: str) -> tuple[PageText, AbstractContextManager[object]]:
    """The words of a PNG in ``language`` (`png_language`) and the font settings that draw them, in force while the
    figure is built (each text keeps the font family it was made with)."""
    text = page_text(png_fonts.png_language(language))
    if text is EN:
        return EN, nullcontext()
    return text, rc_context({'font.family': png_fonts.png_font_families()})


def _file_stems(cells: Sequence[CellSummary], out: Path, prefix: str) -> dict[str, Path]:
    """Each subset's files without their suffix, in subset order, in `out` (made): `{prefix}_{subset}`."""
    subsets = sorted({c.subset for c in cells})
    names = {subset: file_name_part(subset) for subset in subsets}
    if len(set(names.values())) != len(names):
        raise ValueError(f'subset names collide after making them file-name safe: {names}')
    out.mkdir(parents=True, exist_ok=True)
    # Not Path.with_suffix later: a dotted subset name ('en.v2') would lose its tail.
    return {subset: out / f'{prefix}_{names[subset]}' for subset in subsets}


def _title(title: str | None, language: str, served_tokens: bool) -> str | None:
    """The title asked for; else, for lengths in the tokens the model read, a title that says so."""
    return title or (page_text(language).served_title if served_tokens else None)


def plot_all(
    cells: Iterable[CellSummary],
    *,
    output_dir: str | os.PathLike[str],
    prefix: str,
    show_score: bool = False,
    effective_lengths: Mapping[str, EffectiveBound | int | None] | None = None,
    title: str | None = None,
    scoring_notes: Mapping[str, str | None] | None = None,
    answers: Mapping[CellKey, Sequence[SampleResult]] | None = None,
    languages: Mapping[str, str] | None = None,
    png_scoring_notes: Mapping[str, str | None] | None = None,
    served_tokens: bool = False,
) -> list[Path]:
    """Write `{prefix}_{subset}.png` and `.html` for every subset, in subset order.

    `effective_lengths` maps subset -> effective context length to mark, or the bound to state (a missing subset or
    None: no mark).
    `scoring_notes` maps subset -> a subtitle line such as 'scored by rule (judge failed qualification)'.
    `answers` ((subset, length, depth) -> samples, as `stats.samples_by_cell` gives it) lets a click on a cell of
    the HTML heatmap show its answers.  `languages` maps subset -> 'en' / 'zh', the language of its files' words
    (a subset not in it: the built-in subset's of that name, else English); `png_scoring_notes`, when given, are
    the PNGs' notes in the language `png_language` leaves them (English where no font draws Chinese).
    `served_tokens` (lengths in the tokens the model read): the default title says so, in each subset's language.
    Characters outside [A-Za-z0-9._-] in subset names become '_' in file names.  A subset that fails is logged
    and skipped so the others are still drawn; afterwards one `HeatmapError` names every failed subset.
    """
    effective = dict(effective_lengths or {})
    cell_list = list(cells)
    if not cell_list:
        raise ValueError('no cells to plot')
    stems = _file_stems(cell_list, Path(output_dir), prefix)
    written: list[Path] = []
    failures: dict[str, Exception] = {}
    notes = scoring_notes or {}
    png_notes = notes if png_scoring_notes is None else png_scoring_notes
    for subset, stem in stems.items():
        language = subset_language(subset, languages)
        options = {'title': _title(title, language, served_tokens), 'effective_length': effective.get(subset)}
        options['language'] = language
        options['scoring_note'] = notes.get(subset)
        try:
            png = stem.parent / f'{stem.name}.png'
            # The PNG's words in the language it can draw (png_language): its title and notes too.
            png_title = _title(title, png_fonts.png_language(language), served_tokens)
            png_options = options | {'scoring_note': png_notes.get(subset), 'title': png_title}
            written.append(plot_heatmap_png(cell_list, subset=subset, path=png, show_score=show_score, **png_options))
            html = stem.parent / f'{stem.name}.html'
            written.append(plot_heatmap_html(cell_list, subset=subset, path=html, answers=answers, **options))
        except Exception as exc:  # keep drawing the other subsets; reported together below
            logger.error('heatmap for subset %r failed: %s: %s', subset, type(exc).__name__, exc, exc_info=exc)
            failures[subset] = exc
    if failures:
        raise HeatmapError(failures) from next(iter(failures.values()))
    return written
