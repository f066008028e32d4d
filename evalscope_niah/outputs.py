"""The package's own files of a run, written by one writer that the adapter and ``evalscope-niah plot`` share, and
the one table of their names (every reader takes them from here)."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .atomic import atomic_write_text
from .disk_space import disk_full_error
from .labels import file_name_part
from .opencompass import write_opencompass_summary
from .records import SampleResult
from .results import write_cells_csv, write_results, write_summary_json
from .scoring import RULE_PASS_THRESHOLD
from .stats import CellSummary, effective_context_length, samples_by_cell, summarize_cells
from .tasks import reported_values

__all__ = [
    'CELLS_FILE',
    'HEATMAP_PREFIX',
    'JUDGE_CHECK_FILE',
    'OPENCOMPASS_SUMMARY_PREFIX',
    'OUTPUT_FILE_NAMES',
    'RESULTS_FILE',
    'SUMMARY_FILE',
    'draw_heatmaps',
    'in_served_tokens',
    'opencompass_summary_file',
    'scoring_notes',
    'write_opencompass_summaries',
    'write_run_outputs',
]

logger = logging.getLogger(__name__)

# The files of a run, inside EvalScope's report directory (reports/<model_id>/), read back by `evalscope-niah plot`
# and `demo`. Renaming one breaks reading the runs already on disk: these names are the format.
RESULTS_FILE = 'needle_haystack_results.jsonl'  # one SampleResult per line
CELLS_FILE = 'needle_haystack_cells.csv'  # one CellSummary per row
SUMMARY_FILE = 'needle_haystack_summary.json'  # effective lengths, control and subset summaries
# The judge check before the run, per subset: each calibration answer, the judge's rating, right or wrong.
JUDGE_CHECK_FILE = 'needle_haystack_judge_check.json'
# f'{prefix}_{subset}.csv' per subset (subset made file-name safe). Runs before per-subset files wrote all subsets
# into f'{prefix}.csv'; `opencompass.read_summary_csv` reads both.
OPENCOMPASS_SUMMARY_PREFIX = 'needle_haystack_summary_opencompass'
# f'{prefix}_{subset}.png' and '.html'; `plot` adds '_served' or the model's name before the subset.
HEATMAP_PREFIX = 'needle_haystack_heatmap'
OUTPUT_FILE_NAMES: tuple[str, ...] = (
    RESULTS_FILE,
    CELLS_FILE,
    SUMMARY_FILE,
    JUDGE_CHECK_FILE,
    OPENCOMPASS_SUMMARY_PREFIX,
    HEATMAP_PREFIX,
)

RULE_FALLBACK_NOTE = 'scored by rule: the judge failed qualification'


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
    judge_check: Mapping[str, Any] | None = None,
) -> None:
    """Results JSONL, cells CSV, summary JSON, OpenCompass CSVs and (``plot``) heatmaps, in grid order so that the
    files of two runs of one grid line up. Drawing may fail without losing the scores: it is logged, not raised."""
    if not results:
        return
    results = sorted(results, key=_grid_order)
    write_results(os.path.join(output_dir, RESULTS_FILE), results)
    cells = summarize_cells(results)
    # A column per value the tasks report, so the header is the same whichever cells hold one.
    write_cells_csv(os.path.join(output_dir, CELLS_FILE), cells, value_columns=reported_values())
    summary_path = os.path.join(output_dir, SUMMARY_FILE)
    write_summary_json(summary_path, results, threshold=threshold, pass_mark=RULE_PASS_THRESHOLD, mode=mode)
    write_opencompass_summaries(output_dir, cells, model=os.path.basename(os.path.normpath(output_dir)))
    if judge_check:
        atomic_write_text(
            os.path.join(output_dir, JUDGE_CHECK_FILE), json.dumps(judge_check, ensure_ascii=False, indent=2) + '\n'
        )
    if not plot:
        return
    effective = {
        subset: effective_context_length(results, subset=subset, threshold=threshold, mode=mode).length
        for subset in sorted({result.subset for result in results})
    }
    try:
        paths = draw_heatmaps(output_dir, results, effective_lengths=effective, show_score=show_score)
        logger.info('needle_haystack heatmaps: %s', ', '.join(str(path) for path in paths))
    except Exception as exc:  # plotting must not lose the scores, but it must not be silent either
        if disk_full_error(exc) is not None:  # not a drawing problem: the run ends with one line (disk_space.py)
            raise
        logger.exception('needle_haystack: drawing heatmaps failed; redraw with `evalscope-niah plot`')


def in_served_tokens(
    results: Sequence[SampleResult], effective_lengths: Mapping[str, int | None]
) -> tuple[list[SampleResult], dict[str, int | None]]:
    """The results with each length replaced by the median prompt tokens the server reported for it (per subset),
    so a heatmap's length axis reads in the model's own tokens. A length without served counts keeps its label."""
    served: dict[tuple[str, int], list[int]] = {}
    for result in results:
        if result.served_prompt_tokens:
            served.setdefault((result.subset, result.context_length), []).append(result.served_prompt_tokens)
    label = {key: round(statistics.median(values)) for key, values in served.items()}
    relabelled = [
        dataclasses.replace(r, context_length=label.get((r.subset, r.context_length), r.context_length))
        for r in results
    ]
    effective = {
        subset: None if length is None else label.get((subset, length), length)
        for subset, length in effective_lengths.items()
    }
    return relabelled, effective


def scoring_notes(results: Sequence[SampleResult]) -> dict[str, str | None]:
    """A subtitle per subset when its accuracy is not what the run asked for (the judge fell back to rules)."""
    fallback = {result.subset for result in results if result.scoring == 'rule_fallback'}
    return {subset: RULE_FALLBACK_NOTE if subset in fallback else None for subset in {r.subset for r in results}}


def draw_heatmaps(
    output_dir: str | os.PathLike[str],
    results: Sequence[SampleResult],
    *,
    effective_lengths: Mapping[str, int | None],
    show_score: bool = False,
    prefix: str = HEATMAP_PREFIX,
    title: str | None = None,
) -> list[Path]:
    """PNG and HTML heatmaps per subset; the HTML shows each cell's answers on click."""
    from .plotting import plot_all  # matplotlib only when drawing

    return plot_all(
        summarize_cells(results),
        output_dir=output_dir,
        show_score=show_score,
        effective_lengths=effective_lengths,
        prefix=prefix,
        title=title,
        scoring_notes=scoring_notes(results),
        answers=samples_by_cell(results),
    )


def opencompass_summary_file(subset: str) -> str:
    """File name of one subset's summary; characters outside [A-Za-z0-9._-] become '_' (as heatmap file names)."""
    return f'{OPENCOMPASS_SUMMARY_PREFIX}_{file_name_part(subset)}.csv'


def write_opencompass_summaries(
    output_dir: str | os.PathLike[str], cells: Iterable[CellSummary], *, model: str
) -> list[Path]:
    """One `opencompass.write_opencompass_summary` file per subset in `output_dir` (`opencompass_summary_file`), in
    subset order.

    ValueError when two subset names give the same file name.
    """
    by_subset: dict[str, list[CellSummary]] = {}
    for cell in cells:
        by_subset.setdefault(cell.subset, []).append(cell)
    names = {subset: opencompass_summary_file(subset) for subset in sorted(by_subset)}
    if len(set(names.values())) != len(names):
        raise ValueError(f'subset names collide after making them file-name safe: {names}')
    return [
        write_opencompass_summary(Path(output_dir) / names[subset], by_subset[subset], model=model) for subset in names
    ]
