"""The package's own files of a run, written by one writer that the adapter and ``evalscope-niah plot`` share."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from .report import (
    CELLS_FILE,
    RESULTS_FILE,
    SUMMARY_FILE,
    CellSummary,
    SampleResult,
    effective_context_length,
    summarize_cells,
    write_cdme_summary_csv,
    write_cells_csv,
    write_results,
    write_summary_json,
)

__all__ = ['CDME_SUMMARY_FILE', 'draw_heatmaps', 'write_run_outputs']

logger = logging.getLogger(__name__)

# OpenCompass-style summary (dataset/version/metric/mode/<model> columns) that `evalscope-niah plot --csv` reads.
CDME_SUMMARY_FILE = 'needle_haystack_summary_opencompass.csv'


def _grid_order(result: SampleResult) -> tuple:
    return result.subset, result.context_length, result.depth_percent is None, result.depth_percent or 0.0


def write_run_outputs(
    output_dir: str | os.PathLike[str],
    results: Sequence[SampleResult],
    *,
    threshold: float,
    mode: str,
    show_score: bool = False,
    plot: bool = True,
) -> None:
    """Results JSONL, cells CSV, summary JSON, OpenCompass CSV and (``plot``) heatmaps, in grid order so that the
    files of two runs of one grid line up. Drawing may fail without losing the scores: it is logged, not raised."""
    if not results:
        return
    results = sorted(results, key=_grid_order)
    write_results(os.path.join(output_dir, RESULTS_FILE), results)
    cells = summarize_cells(results)
    write_cells_csv(os.path.join(output_dir, CELLS_FILE), cells)
    write_summary_json(os.path.join(output_dir, SUMMARY_FILE), results, threshold=threshold, mode=mode)
    write_cdme_summary_csv(
        os.path.join(output_dir, CDME_SUMMARY_FILE), cells, model=os.path.basename(os.path.normpath(output_dir))
    )
    if not plot:
        return
    try:
        paths = draw_heatmaps(output_dir, results, cells, threshold=threshold, mode=mode, show_score=show_score)
        logger.info('needle_haystack heatmaps: %s', ', '.join(str(path) for path in paths))
    except Exception:  # plotting must not lose the scores, but it must not be silent either
        logger.exception('needle_haystack: drawing heatmaps failed; redraw with `evalscope-niah plot`')


def draw_heatmaps(
    output_dir: str | os.PathLike[str],
    results: Sequence[SampleResult],
    cells: Sequence[CellSummary],
    *,
    threshold: float,
    mode: str,
    show_score: bool = False,
) -> list[Path]:
    from .plotting import plot_all  # matplotlib only when drawing

    effective = {
        subset: effective_context_length(results, subset=subset, threshold=threshold, mode=mode).length
        for subset in sorted({result.subset for result in results})
    }
    return plot_all(cells, output_dir=output_dir, show_score=show_score, effective_lengths=effective)
