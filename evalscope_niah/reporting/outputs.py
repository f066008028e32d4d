"""The package's own files of a run, written by one writer that the adapter and ``evalscope-niah plot`` share, and
the one table of their names (every reader takes them from here)."""

from __future__ import annotations

import dataclasses
import os
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..atomic import atomic_write_text
from ..disk_space import disk_full_error
from ..escaping import inert_logger, json_text
from ..scoring import RULE_PASS_THRESHOLD
from ..tasks import reported_values
from ..vocabulary import SERVED_TOKENIZER_PREFIX
from .labels import SERVED_COUNT, file_name_part
from .length_status import EffectiveBound
from .opencompass import write_opencompass_summary
from .page_text import EN, page_text, subset_language
from .result_files import (
    SubsetEffective,
    effective_lengths,
    grid_order,
    write_cells_csv,
    write_results,
    write_summary_json,
)
from .run_metrics import effective_length_message
from .sample_record import SampleResult
from .stats import CellSummary, EffectiveLength, samples_by_cell, summarize_cells
from .sweep_plan import untested_cells, untested_lengths

__all__ = [
    'CELLS_FILE',
    'DEFAULT_PREFIX',
    'HEATMAP_PREFIX',
    'JUDGE_CHECK_FILE',
    'OPENCOMPASS_SUMMARY_PREFIX',
    'OUTPUT_FILE_NAMES',
    'OUTPUT_PREFIXES',
    'PROGRESS_FILE',
    'RESULTS_FILE',
    'SUMMARY_FILE',
    'SWEEP_PLAN_FILE',
    'OutputFiles',
    'draw_heatmaps',
    'find_results_files',
    'in_served_tokens',
    'opencompass_summary_file',
    'results_file_names',
    'scoring_notes',
    'write_judge_check',
    'write_opencompass_summaries',
    'write_run_outputs',
]

logger = inert_logger(__name__)

# The files of a run, inside EvalScope's report directory (reports/<model_id>/), read back by `evalscope-niah plot`
# and `demo`. Renaming one breaks reading the runs already on disk: these names are the format.
# Each name the benchmark runs under (registration.py: 'needle_haystack' and 'niah') writes its files with that name
# as the prefix, so a run of both keeps both; the constants below are the needle_haystack ones (`OutputFiles`).
DEFAULT_PREFIX = 'needle_haystack'
OUTPUT_PREFIXES: tuple[str, ...] = (DEFAULT_PREFIX, 'niah')
RESULTS_FILE = 'needle_haystack_results.jsonl'  # one SampleResult per line
CELLS_FILE = 'needle_haystack_cells.csv'  # one CellSummary per row
SUMMARY_FILE = 'needle_haystack_summary.json'  # effective lengths, control and subset summaries
# The judge check before the run, per subset: each calibration answer, the judge's rating, right or wrong.
JUDGE_CHECK_FILE = 'needle_haystack_judge_check.json'
# sweep: 'adaptive': the full grid, each round's cells and why the sweep stopped (sweep_plan.py describes it).
SWEEP_PLAN_FILE = 'needle_haystack_sweep_plan.json'
# f'{prefix}_{subset}.csv' per subset (subset made file-name safe). Runs before per-subset files wrote all subsets
# into f'{prefix}.csv'; `opencompass.read_summary_csv` reads both.
OPENCOMPASS_SUMMARY_PREFIX = 'needle_haystack_summary_opencompass'
# f'{prefix}_{subset}.png' and '.html'; `plot` adds '_served' or the model's name before the subset. While a run
# goes, the '.html' is its live page, and f'{prefix}_{subset}.live.js' the data that page re-reads (live.py).
HEATMAP_PREFIX = 'needle_haystack_heatmap'
# A run's plan and its finished samples so far, rewritten as they finish (live.py); `plot` draws a running run from it.
PROGRESS_FILE = 'needle_haystack_progress.json'
OUTPUT_FILE_NAMES: tuple[str, ...] = (
    RESULTS_FILE,
    CELLS_FILE,
    SUMMARY_FILE,
    JUDGE_CHECK_FILE,
    OPENCOMPASS_SUMMARY_PREFIX,
    HEATMAP_PREFIX,
    PROGRESS_FILE,
)


@dataclasses.dataclass(frozen=True)
class OutputFiles:
    """The file names one benchmark name writes: the constants above with its prefix in place of needle_haystack's
    (``OutputFiles('niah').results == 'niah_results.jsonl'``)."""

    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        if self.prefix not in OUTPUT_PREFIXES:
            raise ValueError(f'output prefix must be one of {OUTPUT_PREFIXES}, got {self.prefix!r}')

    @classmethod
    def of_results_file(cls, path: str | os.PathLike[str]) -> OutputFiles:
        """The files beside a results file found by `find_results_files`, by its name."""
        name = Path(path).name
        prefix = next((p for p in OUTPUT_PREFIXES if name == cls(p).results), None)
        if prefix is None:
            raise ValueError(f'{name!r} is not a results file ({", ".join(results_file_names())})')
        return cls(prefix)

    def _renamed(self, name: str) -> str:
        return self.prefix + name.removeprefix(DEFAULT_PREFIX)

    @property
    def results(self) -> str:
        return self._renamed(RESULTS_FILE)

    @property
    def cells(self) -> str:
        return self._renamed(CELLS_FILE)

    @property
    def summary(self) -> str:
        return self._renamed(SUMMARY_FILE)

    @property
    def judge_check(self) -> str:
        return self._renamed(JUDGE_CHECK_FILE)

    @property
    def sweep_plan(self) -> str:
        return self._renamed(SWEEP_PLAN_FILE)

    @property
    def opencompass_summary_prefix(self) -> str:
        return self._renamed(OPENCOMPASS_SUMMARY_PREFIX)

    @property
    def progress(self) -> str:
        return self._renamed(PROGRESS_FILE)

    @property
    def heatmap_prefix(self) -> str:
        return self._renamed(HEATMAP_PREFIX)


def results_file_names() -> tuple[str, ...]:
    """Every name a results file may have, one per prefix."""
    return tuple(OutputFiles(prefix).results for prefix in OUTPUT_PREFIXES)


def find_results_files(root: str | os.PathLike[str]) -> list[Path]:
    """Every results file (any prefix) under ``root``, sorted by path; none when ``root`` is not a directory."""
    root = Path(root)
    if not root.is_dir():
        return []
    names = set(results_file_names())  # one walk of the tree, whatever the number of prefixes
    return sorted(path for path in root.rglob('*.jsonl') if path.name in names)


RULE_FALLBACK_NOTE = EN.rule_fallback_note


def write_judge_check(
    output_dir: str | os.PathLike[str], judge_check: Mapping[str, Any], *, files: OutputFiles = OutputFiles()
) -> str:
    """The judge check's results per subset (``QualificationResult.to_dict``), written when the run finishes and
    when the check stops it; returns the path."""
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, files.judge_check)
    atomic_write_text(path, json_text(judge_check, allow_nan=True, indent=2) + '\n')
    return path


def write_run_outputs(
    output_dir: str | os.PathLike[str],
    results: Sequence[SampleResult],
    *,
    threshold: float,
    mode: str,
    show_score: bool = False,
    plot: bool = True,
    judge_check: Mapping[str, Any] | None = None,
    model: str | None = None,
    files: OutputFiles = OutputFiles(),
    sweep_plan: Mapping[str, Mapping[str, Any]] | None = None,
    languages: Mapping[str, str] | None = None,
    known_effective: Mapping[str, SubsetEffective] | None = None,
) -> None:
    """Results JSONL, cells CSV, summary JSON, OpenCompass CSVs and (``plot``) heatmaps, in grid order so that the
    files of two runs of one grid line up; named by ``files`` (the benchmark name run). ``model`` is the model's
    name in the OpenCompass CSVs (default: the folder's, which may be its safe form: safe_names.py). Drawing may fail
    without losing the scores: it is logged, not raised. ``sweep_plan`` (an adaptive sweep's subset entries,
    sweep_plan.py): the summary lists the cells not tested and the heatmaps draw them grey, labelled so; no row is
    made up for them. ``languages`` (subset -> 'en' / 'zh', from the run's subsets): the heatmaps' words.
    ``known_effective``: the effective lengths the run's report was given, stated again where their rows are these."""
    if not results:
        return
    results = sorted(results, key=grid_order)
    write_results(os.path.join(output_dir, files.results), results)
    cells = summarize_cells(results)
    # A column per value the tasks report, so the header is the same whichever cells hold one.
    write_cells_csv(os.path.join(output_dir, files.cells), cells, value_columns=reported_values())
    # Computed once (a bootstrap per subset) for the report, the summary file and the heatmaps alike.
    untested = {subset: untested_lengths(entry) for subset, entry in (sweep_plan or {}).items()}
    effective = effective_lengths(results, threshold=threshold, mode=mode, known=known_effective, untested=untested)
    write_summary_json(
        os.path.join(output_dir, files.summary), results, threshold=threshold, pass_mark=RULE_PASS_THRESHOLD,
        mode=mode, sweep=sweep_summary(sweep_plan) if sweep_plan else None, effective=effective,
    )  # fmt: skip
    model = model or os.path.basename(os.path.normpath(output_dir))
    write_opencompass_summaries(output_dir, cells, model=model, files=files)
    if judge_check:
        write_judge_check(output_dir, judge_check, files=files)
    bounds = _effective_bounds(results, effective)
    if not plot:
        return
    try:
        paths = draw_heatmaps(
            output_dir,
            results,
            effective_lengths=bounds,
            cells=cells,
            show_score=show_score,
            prefix=files.heatmap_prefix,
            sweep_plan=sweep_plan,
            languages=languages,
        )
        logger.info('needle_haystack heatmaps: %s', ', '.join(str(path) for path in paths))
    except Exception as exc:  # plotting must not lose the scores, but it must not be silent either
        if disk_full_error(exc) is not None:  # not a drawing problem: the run ends with one line (disk_space.py)
            raise
        logger.exception('needle_haystack: drawing heatmaps failed; redraw with `evalscope-niah plot`')


def _effective_bounds(
    results: Sequence[SampleResult], effective: Mapping[str, EffectiveLength]
) -> dict[str, EffectiveBound]:
    """Every needle subset's effective length (a subset of controls only has none), from the run's ``effective``
    (computed once, as the summary file holds it); one that is a bound is said on the console too, as the summary
    and the heatmaps say it."""
    bounds = {}
    for subset, length in effective.items():
        bounds[subset] = length.bound
        tokenizer = next((r.tokenizer for r in results if r.subset == subset and r.tokenizer), None)
        message = effective_length_message(bounds[subset], subset=subset, tokenizer=tokenizer)
        if message:
            logger.warning('needle_haystack: %s', message)
    return bounds


def _served_unit(tokenizer: str | None) -> str:
    # The unit of lengths relabelled with the server's counts: its model's tokens ('served tokens' on the axis, as the
    # results file does not name the served model unless the run counted with tokenizer_path 'server' already).
    return tokenizer if tokenizer and tokenizer.startswith(SERVED_TOKENIZER_PREFIX) else SERVED_COUNT


def in_served_tokens(
    results: Sequence[SampleResult], effective_lengths: Mapping[str, EffectiveBound | int | None]
) -> tuple[list[SampleResult], dict[str, EffectiveBound]]:
    """The results with each length replaced by the median prompt tokens the server reported for it (per subset),
    so a heatmap's length axis reads in the model's own tokens. A length without served counts keeps its label."""
    served: dict[tuple[str, int], list[int]] = {}
    for result in results:
        if result.served_prompt_tokens:
            served.setdefault((result.subset, result.context_length), []).append(result.served_prompt_tokens)
    label = {key: round(statistics.median(values)) for key, values in served.items()}
    relabelled = [
        dataclasses.replace(r, context_length=label[(r.subset, r.context_length)], tokenizer=_served_unit(r.tokenizer))
        if (r.subset, r.context_length) in label
        else r
        for r in results
    ]
    effective = {
        subset: EffectiveBound.of(value).relabelled(
            {length: served for (name, length), served in label.items() if name == subset}
        )
        for subset, value in effective_lengths.items()
    }
    return relabelled, effective


def scoring_notes(results: Sequence[SampleResult], languages: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """A subtitle per subset when its accuracy is not what the run asked for (the judge fell back to rules), in the
    subset's language (``languages``, as `plotting.plot_all` takes it)."""
    fallback = {result.subset for result in results if result.scoring == 'rule_fallback'}
    return {
        subset: page_text(subset_language(subset, languages)).rule_fallback_note if subset in fallback else None
        for subset in {r.subset for r in results}
    }


def draw_heatmaps(
    output_dir: str | os.PathLike[str],
    results: Sequence[SampleResult],
    *,
    effective_lengths: Mapping[str, EffectiveBound | int | None],
    show_score: bool = False,
    prefix: str = HEATMAP_PREFIX,
    title: str | None = None,
    sweep_plan: Mapping[str, Mapping[str, Any]] | None = None,
    cells: Sequence[CellSummary] | None = None,
    languages: Mapping[str, str] | None = None,
    served_tokens: bool = False,
) -> list[Path]:
    """PNG and HTML heatmaps per subset; the HTML shows each cell's answers on click. With an adaptive sweep's
    ``sweep_plan`` every cell of the full grid is drawn: those not tested as empty (grey, n 0), named in a note.
    ``cells``: ``summarize_cells(results)`` when the caller has it already (the run's outputs); None computes it.
    ``languages`` (subset -> 'en' / 'zh'): the language of each subset's words; ``served_tokens``: the lengths are
    the server's counts (`in_served_tokens`), said in the title (both as `plotting.plot_all` takes them)."""
    from .plotting import plot_all  # matplotlib only when drawing
    from .png_fonts import png_language

    cells = list(summarize_cells(results) if cells is None else cells)
    for subset, entry in (sweep_plan or {}).items():
        cells += [_not_tested(subset, length, depth) for length, depth in untested_cells(entry)]
    subsets = {cell.subset for cell in cells}
    page_languages = {subset: subset_language(subset, languages) for subset in subsets}
    png_languages = {subset: png_language(language) for subset, language in page_languages.items()}
    return plot_all(
        cells,
        output_dir=output_dir,
        show_score=show_score,
        effective_lengths=effective_lengths,
        prefix=prefix,
        title=title,
        scoring_notes=_notes(results, sweep_plan, page_languages),
        png_scoring_notes=_notes(results, sweep_plan, png_languages),
        answers=samples_by_cell(results),
        languages=page_languages,
        served_tokens=served_tokens,
    )


def _notes(
    results: Sequence[SampleResult], sweep_plan: Mapping[str, Mapping[str, Any]] | None, languages: Mapping[str, str]
) -> dict[str, str | None]:
    """The notes under each subset's title, in its language: the judge's fallback, and what an adaptive sweep left
    untested."""
    notes = scoring_notes(results, languages)
    for subset, entry in (sweep_plan or {}).items():
        tested = len(entry['cells']) - len(untested_cells(entry))
        text = page_text(subset_language(subset, languages))
        sweep_note = text.sweep_note.format(tested=tested, total=len(entry['cells']))
        notes[subset] = '; '.join(note for note in (notes.get(subset), sweep_note) if note)
    return notes


def _not_tested(subset: str, length: int, depth: float) -> CellSummary:
    # Drawn only (never written to the cells CSV or summary): no sample, no score, as an empty cell of a grid run.
    return CellSummary.accuracy_only(subset, length, depth)


def sweep_summary(sweep_plan: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per subset, what the summary JSON says of an adaptive sweep: why it stopped, what it sent of the grid, and
    every cell it did not test."""
    return {
        subset: {
            'stop': entry['stop'],  # why the sweep stopped: 'pinned', 'budget' or 'exhausted'
            'sent_prompts': entry['sent_prompts'],  # prompts the sweep sent (cached ones included)
            'grid_prompts': entry['grid_prompts'],  # prompts the full grid would have sent
            'sent_tokens': entry['sent_tokens'],  # prompt tokens the sweep sent
            'grid_tokens': entry['grid_tokens'],  # prompt tokens of the full grid
            'tested_cells': len(entry['cells']) - len(untested_cells(entry)),  # cells of the grid it sent
            # every cell it did not send, as [context_length, depth_percent]: no row anywhere, grey on the heatmaps
            'untested_cells': [list(cell) for cell in untested_cells(entry)],
        }
        for subset, entry in sorted(sweep_plan.items())
    }


def opencompass_summary_file(subset: str, files: OutputFiles = OutputFiles()) -> str:
    """File name of one subset's summary; characters outside [A-Za-z0-9._-] become '_' (as heatmap file names)."""
    return f'{files.opencompass_summary_prefix}_{file_name_part(subset)}.csv'


def write_opencompass_summaries(
    output_dir: str | os.PathLike[str], cells: Iterable[CellSummary], *, model: str, files: OutputFiles = OutputFiles()
) -> list[Path]:
    """One `opencompass.write_opencompass_summary` file per subset in `output_dir` (`opencompass_summary_file`), in
    subset order.

    ValueError when two subset names give the same file name.
    """
    by_subset: dict[str, list[CellSummary]] = {}
    for cell in cells:
        by_subset.setdefault(cell.subset, []).append(cell)
    names = {subset: opencompass_summary_file(subset, files) for subset in sorted(by_subset)}
    if len(set(names.values())) != len(names):
        raise ValueError(f'subset names collide after making them file-name safe: {names}')
    return [
        write_opencompass_summary(Path(output_dir) / names[subset], by_subset[subset], model=model) for subset in names
    ]
