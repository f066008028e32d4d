"""Compare finished runs side by side: one PNG of heatmaps (rows = subsets, columns = models) on one colour scale,
the effective context length marked in every panel, plus a table of effective lengths (text and CSV).

Runs are found as `reports/<model_id>/` + a results file (`outputs.find_results_files`) under EvalScope work
directories, so nothing is recomputed from model outputs; the figure is built on an Agg-backed `Figure`, never
through pyplot.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..atomic import atomic_write_bytes, atomic_write_text
from ..escaping import terminal_text
from .labels import length_axis_label, length_labels, subset_tokenizer
from .outputs import OutputFiles, find_results_files, results_file_names
from .plotting import add_accuracy_colorbar, draw_heatmap, png_bytes
from .result_files import csv_text, read_results_to_draw
from .sample_record import SampleResult
from .stats import (
    CellSummary,
    EffectiveLength,
    EffectiveMode,
    check_effective_args,
    effective_context_length,
    summarize_cells,
)

__all__ = [
    'COMPARE_CSV_COLUMNS',
    'DEFAULT_COMPARE_OUTPUT',
    'CompareOutput',
    'Comparison',
    'ComparisonEntry',
    'ModelRun',
    'NoResultsError',
    'build_comparison',
    'find_runs',
    'format_comparison_table',
    'plot_comparison_png',
    'run_compare',
    'write_comparison_csv',
]

DEFAULT_COMPARE_OUTPUT = Path('compare.png')
COMPARE_CSV_COLUMNS: tuple[str, ...] = (
    'model',
    'model_id',
    'work_dir',
    'subset',
    'mode',
    'threshold',
    'base_score',
    'effective_length',
    'ci_low',
    'ci_high',
    'shortest_length',
    'longest_length',
    # When effective_length is a bound (length_status.py): the first length the data could not decide, and why.
    'unknown_length',
    'unknown_reason',
)
_NONE_LABEL = 'none'  # effective length below the shortest tested length
_MISSING_LABEL = 'n/a'  # the model has no results for this subset
# Per-panel size bounds (inches): big grids stay legible, the whole figure stays within Agg's pixel limits.
_PANEL_MIN = (4.5, 3.2)
_PANEL_MAX = (12.0, 9.0)


class NoResultsError(FileNotFoundError):
    """Some work directories hold no results file; `dirs` lists them as given."""

    def __init__(self, dirs: Sequence[str]) -> None:
        self.dirs = list(dirs)
        super().__init__(f'no {" or ".join(results_file_names())} under {", ".join(self.dirs)}')


@dataclass(frozen=True)
class ModelRun:
    """One model's results found in a work directory; `label` is unique among the runs being compared."""

    label: str
    model_id: str
    work_dir: Path
    results_file: Path
    results: tuple[SampleResult, ...]


@dataclass(frozen=True)
class ComparisonEntry:
    """The effective context length of one (model, subset) that has needle samples."""

    model: str
    subset: str
    effective: EffectiveLength


@dataclass(frozen=True)
class Comparison:
    runs: tuple[ModelRun, ...]
    subsets: tuple[str, ...]
    entries: tuple[ComparisonEntry, ...]
    threshold: float
    mode: EffectiveMode

    def entry(self, model: str, subset: str) -> ComparisonEntry | None:
        return next((e for e in self.entries if e.model == model and e.subset == subset), None)


@dataclass(frozen=True)
class CompareOutput:
    png: Path
    csv: Path
    table: str
    comparison: Comparison


# --------------------------------------------------------------------------------------------------------------------
# Finding runs
# --------------------------------------------------------------------------------------------------------------------


def _unique_labels(candidates: Sequence[Sequence[str]]) -> list[str]:
    """Each run's first candidate label; only runs whose label is shared move on to their next, longer candidate."""
    labels = [c[0] for c in candidates]
    if not labels:
        return labels
    for level in range(1, max(len(c) for c in candidates)):
        shared = {label for label in labels if labels.count(label) > 1}
        if not shared:
            return labels
        labels = [
            c[min(level, len(c) - 1)] if label in shared else label for c, label in zip(candidates, labels, strict=True)
        ]
    # Still equal (the same dir given twice): number the repeats so columns stay distinct.
    seen: dict[str, int] = {}
    numbered = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        numbered.append(label if seen[label] == 1 else f'{label} #{seen[label]}')
    return numbered


def find_runs(work_dirs: Sequence[str | os.PathLike[str]]) -> list[ModelRun]:
    """Every `reports/<model_id>/` + results file (either benchmark name's) under each work dir, read, in the order
    given.

    Labels are the model ids; where two are equal the work dir name is added ('qwen (run-a)'), then the path
    inside the work dir.  Raises `NoResultsError` naming every dir without results (or that is not a dir), and
    ValueError for an unreadable results file.
    """
    found: list[tuple[Path, Path]] = []
    missing: list[str] = []
    for work_dir in work_dirs:
        root = Path(work_dir)
        files = find_results_files(root)
        if not files:
            missing.append(str(work_dir))
        found.extend((root, path) for path in files)
    if missing:
        raise NoResultsError(missing)
    # A run of both benchmark names holds two results files per model: the name tells them apart.
    prefixes = {path: OutputFiles.of_results_file(path).prefix for _, path in found}
    tagged = {path: f' [{prefix}]' if len(set(prefixes.values())) > 1 else '' for path, prefix in prefixes.items()}
    candidates = [
        (
            path.parent.name,
            f'{path.parent.name}{tagged[path]}',
            f'{path.parent.name}{tagged[path]} ({root.resolve().name})',
            f'{path.parent.name}{tagged[path]} ({root.resolve().name}/{path.parent.relative_to(root).as_posix()})',
        )
        for root, path in found
    ]
    labels = _unique_labels(candidates)
    return [
        ModelRun(
            label=label,
            model_id=path.parent.name,
            work_dir=root,
            results_file=path,
            results=tuple(read_results_to_draw(path)),
        )
        for label, (root, path) in zip(labels, found, strict=True)
    ]


def build_comparison(
    runs: Sequence[ModelRun],
    *,
    threshold: float,
    mode: EffectiveMode = 'absolute',
) -> Comparison:
    """Effective context length of every (run, subset) that has needle samples; subsets are the union, sorted.

    ValueError for a bad threshold or mode, or when no run has a needle sample.
    """
    check_effective_args(threshold, mode)
    subsets = sorted({r.subset for run in runs for r in run.results if not r.control})
    entries = []
    for run in runs:
        present = {r.subset for r in run.results if not r.control}
        for subset in subsets:
            if subset in present:  # else the panel is drawn empty, with a note
                effective = effective_context_length(run.results, subset=subset, threshold=threshold, mode=mode)
                entries.append(ComparisonEntry(model=run.label, subset=subset, effective=effective))
    if not subsets:
        raise ValueError('no needle samples in any of the runs to compare')
    return Comparison(
        runs=tuple(runs), subsets=tuple(subsets), entries=tuple(entries), threshold=float(threshold), mode=mode
    )


# --------------------------------------------------------------------------------------------------------------------
# Table and CSV
# --------------------------------------------------------------------------------------------------------------------


def _labels(comparison: Comparison) -> dict[int, str]:
    # One labelling for every length in the comparison, so '16k' means the same column in every row.
    lengths = sorted({s.context_length for e in comparison.entries for s in e.effective.per_length})
    return dict(zip(lengths, length_labels(lengths), strict=True))


def _length_text(length: int | None, labels: dict[int, str]) -> str:
    return _NONE_LABEL if length is None else labels[length]


def format_comparison_table(comparison: Comparison) -> str:
    """Plain-text table: rows = models, columns = subsets, values 'effective [CI low, CI high]'."""
    labels = _labels(comparison)
    rule = 'accuracy' if comparison.mode == 'absolute' else 'accuracy / shortest length accuracy'
    heading = (
        f'effective context length ({comparison.mode}: {rule} >= {comparison.threshold:g}; '
        f'95% bootstrap CI; {_NONE_LABEL} = shortest length fails, {_MISSING_LABEL} = no results; a length the data '
        'cannot decide is unknown, and the effective length before it a bound)'
    )
    rows = [['model', *comparison.subsets]]
    for run in comparison.runs:
        row = [run.label]
        for subset in comparison.subsets:
            entry = comparison.entry(run.label, subset)
            row.append(_MISSING_LABEL if entry is None else _effective_text(entry.effective, labels))
        rows.append(row)
    # Aligned as the terminal shows the names (a control character is several characters wide once shown).
    rows = [[terminal_text(value) for value in row] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ['  '.join(value.ljust(width) for value, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    return '\n'.join([heading, *lines])


def write_comparison_csv(path: str | os.PathLike[str], comparison: Comparison) -> Path:
    """One row per (model, subset) with results, columns `COMPARE_CSV_COLUMNS`; lengths in tokens (atomically)."""
    runs = {run.label: run for run in comparison.runs}
    rows: list[list[str | float | int | None]] = [list(COMPARE_CSV_COLUMNS)]
    for entry in comparison.entries:
        run, e = runs[entry.model], entry.effective
        values = {
            'model': entry.model,
            'model_id': run.model_id,
            'work_dir': str(run.work_dir),
            'subset': entry.subset,
            'mode': e.mode,
            'threshold': e.threshold,
            'base_score': e.base_score,
            'effective_length': e.length,
            'ci_low': e.ci_low,
            'ci_high': e.ci_high,
            'shortest_length': e.per_length[0].context_length,
            'longest_length': e.per_length[-1].context_length,
            'unknown_length': e.unknown_length,
            'unknown_reason': e.unknown_reason,
        }
        rows.append([values[column] for column in COMPARE_CSV_COLUMNS])
    return atomic_write_text(path, csv_text(rows))


# --------------------------------------------------------------------------------------------------------------------
# Figure
# --------------------------------------------------------------------------------------------------------------------


def _panel_size(cells_by_run: dict[str, list[CellSummary]]) -> tuple[float, float]:
    n_cols = max((len({c.context_length for c in cells}) for cells in cells_by_run.values()), default=1)
    n_rows = max((len({c.depth_percent for c in cells}) for cells in cells_by_run.values()), default=1)
    width = min(max(2.2 + 0.5 * n_cols, _PANEL_MIN[0]), _PANEL_MAX[0])
    height = min(max(1.6 + 0.32 * n_rows, _PANEL_MIN[1]), _PANEL_MAX[1])
    return width, height


def _draw_missing(ax: Axes, subset: str) -> None:
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_color('#BBBBBB')
    ax.text(
        0.5,
        0.5,
        f'no {subset} results',
        ha='center',
        va='center',
        transform=ax.transAxes,
        color='#666666',
        fontsize=9,
        parse_math=False,  # subset names are data: a '$' is not mathtext
    )


def _effective_text(effective: EffectiveLength, labels: dict[int, str]) -> str:
    ci = f'[{_length_text(effective.ci_low, labels)}, {_length_text(effective.ci_high, labels)}]'
    if effective.unknown_length is None:
        return f'{_length_text(effective.length, labels)} {ci}'
    # A bound, worded as every report words one (length_status.EffectiveBound.describe), with its interval.
    known = 'unknown' if effective.length is None else f'at least {labels[effective.length]} {ci}'
    return f'{known}; {labels[effective.unknown_length]} unknown: {effective.unknown_reason}'


def _build_comparison_figure(comparison: Comparison, *, show_score: bool) -> Figure:
    cells_by_run = {run.label: summarize_cells(run.results) for run in comparison.runs}
    labels = _labels(comparison)
    n_rows, n_cols = len(comparison.subsets), len(comparison.runs)
    width, height = _panel_size(cells_by_run)
    fig = Figure(figsize=(width * n_cols + 1.2, height * n_rows + 0.8), layout='constrained')
    FigureCanvasAgg(fig)  # the constrained layout measures tick labels through the canvas
    grid = fig.subplots(n_rows, n_cols, squeeze=False)
    any_empty = False
    for row, subset in enumerate(comparison.subsets):
        for col, run in enumerate(comparison.runs):
            ax = grid[row][col]
            entry = comparison.entry(run.label, subset)
            if entry is None:
                _draw_missing(ax, subset)
                ax.set_title(f'{run.label} · {subset}', fontsize=10, parse_math=False)
            else:
                any_empty |= draw_heatmap(
                    ax,
                    cells_by_run[run.label],
                    subset=subset,
                    show_score=show_score,
                    effective_length=entry.effective.length,
                    colorbar=False,
                )
                effective = _effective_text(entry.effective, labels)
                ax.set_title(f'{run.label} · {subset}\neffective: {effective}', fontsize=10, parse_math=False)
            # Each run's own unit: two runs counted by different tokenizers have different lengths under one label.
            unit = length_axis_label(subset_tokenizer(cells_by_run[run.label], subset=subset))
            ax.set_xlabel(unit if row == n_rows - 1 else '')
            ax.set_ylabel(f'{subset}\nNeedle depth (%)' if col == 0 else '', parse_math=False)
    add_accuracy_colorbar(fig, [ax for axes in grid for ax in axes])
    fig.suptitle(
        f'Needle in a haystack · effective context length ({comparison.mode}, threshold {comparison.threshold:g})',
        fontsize=12,
    )
    if any_empty:
        fig.text(0.01, 0.005, 'grey = no scored sample', fontsize=7, color='#555555', ha='left', va='bottom')
    return fig


def plot_comparison_png(comparison: Comparison, *, path: str | os.PathLike[str], show_score: bool = False) -> Path:
    """Save the subsets x models grid of heatmaps as one PNG with a single shared 0-1 colorbar (atomically)."""
    fig = _build_comparison_figure(comparison, show_score=show_score)
    try:
        return atomic_write_bytes(path, png_bytes(fig))
    finally:
        fig.clear()  # not a pyplot figure: clearing frees the artists right away


def run_compare(
    work_dirs: Sequence[str | os.PathLike[str]],
    *,
    output: str | os.PathLike[str] = DEFAULT_COMPARE_OUTPUT,
    threshold: float,
    mode: EffectiveMode = 'absolute',
    show_score: bool = False,
) -> CompareOutput:
    """Find the runs, write the comparison PNG at `output` and `<stem>.csv` beside it, return both and the table.

    An existing directory as `output` gets `compare.png` inside it; missing parent directories are created.
    Raises `NoResultsError` when a work dir holds no results, ValueError for a bad threshold/mode or results file.
    """
    png = Path(output)
    if png.is_dir():
        png = png / DEFAULT_COMPARE_OUTPUT.name
    runs = find_runs(work_dirs)
    comparison = build_comparison(runs, threshold=threshold, mode=mode)
    png_path = plot_comparison_png(comparison, path=png, show_score=show_score)
    csv_path = write_comparison_csv(png.with_name(f'{png.stem}.csv'), comparison)
    return CompareOutput(png=png_path, csv=csv_path, table=format_comparison_table(comparison), comparison=comparison)
