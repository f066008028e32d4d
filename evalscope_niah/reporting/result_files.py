"""Our own result files: per-sample records (JSONL of `records.SampleResult`), per-cell summaries (CSV) and the run
summary (JSON), with their readers, plus the one CSV encoder every CSV writer of the package uses.

Every dimension (subset, context length, depth) is its own field, never packed into a string key, so that the
plotting and CLI code can group and sort without parsing.  No evalscope import.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from ..atomic import atomic_write_text
from ..escaping import csv_cell, csv_cell_read, json_text
from ..vocabulary import LENGTH_STATUSES
from .sample_record import SampleResult
from .stats import (
    CellSummary,
    ControlSummary,
    EffectiveLength,
    EffectiveMode,
    JudgeRuleAgreement,
    LengthScore,
    RunSummary,
    SubsetSummary,
    check_effective_args,
    effective_context_length,
    summarize_controls,
    summarize_subsets,
)

__all__ = [
    'CELL_CSV_COLUMNS',
    'NO_ANSWER_COLUMN',
    'UNKNOWN_COLUMN',
    'SubsetEffective',
    'csv_text',
    'effective_lengths',
    'grid_order',
    'read_cells_csv',
    'read_results',
    'read_summary_json',
    'spreadsheet_unescape',
    'subset_effective',
    'write_cells_csv',
    'write_results',
    'write_summary_json',
]

# A row holds a few numbers and three bounded texts (answer, reasoning, error): a few thousand characters. A longer
# line is not a results row, and is refused before it is read whole.
MAX_RESULT_LINE_BYTES = 1_000_000
_MAX_PROBLEM_CHARS = 300  # of a malformed row's problem in its error: a hostile value may be megabytes long
# Of a bound's reason read from a summary ('3 server errors, 1 cut reply'): more is not one we wrote.
_MAX_REASON_CHARS = 200
# What plot and compare draw from a results file, per subset: beyond this a heatmap is unreadable, and drawing it
# (one HTML cell each, a bootstrap over every length) would take minutes and gigabytes.
MAX_DRAWN_LENGTHS = 1000
MAX_DRAWN_DEPTHS = 1000
MAX_DRAWN_CELLS = 100_000

CELL_CSV_COLUMNS: tuple[str, ...] = (
    'subset',
    'context_length',
    'depth_percent',
    'n',
    'accuracy',
    'rule_recall',
    'levenshtein',
    'judge_failures',
    'errors',
    'ci_low',
    'ci_high',
)
# Then the count of replies with no final answer (``CellSummary.no_answer``); a cells CSV written before it was
# counted lacks the column and reads as 0. No task value can take the name: it is a SampleResult field.
NO_ANSWER_COLUMN = 'no_answer'
# Then the tokenizer that counted context_length (``CellSummary.tokenizer``, e.g. 'Qwen/Qwen3-0.6B'), empty when
# unknown; a cells CSV written before it was recorded lacks the column and its lengths read as plain 'tokens'.
TOKENIZER_COLUMN = 'tokenizer'
# Then why a cell with samples has no score (``CellSummary.unknown``: '3 server errors'), empty when it has one: such a
# cell is unknown, not failed. A cells CSV written before it was recorded lacks the column.
UNKNOWN_COLUMN = 'unknown'
# After these columns, one per task value the cells report (``CellSummary.task_values``), in name order; a cells CSV
# of an older version ends with `precision` or with nothing, and reads the same way.

# --------------------------------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------------------------------


# Reads back what `csv_text` wrote: the quote before a formula-like value goes ("'=x" -> '=x').
spreadsheet_unescape = csv_cell_read


def csv_text(rows: Iterable[Sequence[int | float | str | None]]) -> str:
    """CSV text ('\\n' line ends) safe to open in a spreadsheet and to print: each field is `escaping.csv_cell` (None
    empty; text starting with = + - @ tab, CR or ' gets a leading quote, so it is shown as text, never run as a
    formula; controls shown as escapes).  The one CSV encoder of the package.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator='\n')
    # The csv module quotes only the line terminator's characters, so a lone CR would end the row for any reader;
    # the rare row holding one is written fully quoted instead.
    quote_all = csv.writer(buffer, lineterminator='\n', quoting=csv.QUOTE_ALL)
    for row in rows:
        fields = [csv_cell(value) for value in row]
        (quote_all if any('\r' in field for field in fields) else writer).writerow(fields)
    return buffer.getvalue()


def write_results(path: str | os.PathLike[str], results: Iterable[SampleResult]) -> Path:
    """Write results as JSONL, one `SampleResult.to_dict()` per line (atomically)."""
    # json_text refuses NaN (not JSON): validation should already exclude it, this is the last guard.
    lines = [json_text(r.to_dict()) for r in results]
    return atomic_write_text(path, ''.join(line + '\n' for line in lines))


def read_results(path: str | os.PathLike[str]) -> list[SampleResult]:
    """Read a JSONL file written by `write_results`; blank lines are skipped, bad lines raise with their number."""
    results: list[SampleResult] = []
    with open(path, 'rb') as handle:
        for line_no, line in enumerate(_bounded_lines(handle, path), start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if not isinstance(data, dict):
                    raise ValueError('expected a JSON object')
                results.append(SampleResult.from_dict(data))
            except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError; a row nested too deep
                # A hostile row can make the message huge (a value of a megabyte): it is cut.
                raise ValueError(f'{path}:{line_no}: invalid result line: {str(exc)[:_MAX_PROBLEM_CHARS]}') from exc
    return results


def _bounded_lines(handle: IO[bytes], path: str | os.PathLike[str]) -> Iterator[str]:
    """The lines of ``handle`` decoded, each read up to MAX_RESULT_LINE_BYTES: a longer line, or one that is not
    UTF-8, is a ValueError naming the file and line, raised before the rest is read."""
    for line_no in itertools.count(1):
        raw = handle.readline(MAX_RESULT_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) > MAX_RESULT_LINE_BYTES:
            raise ValueError(f'{path}:{line_no}: invalid result line: longer than {MAX_RESULT_LINE_BYTES} bytes')
        try:
            yield raw.decode('utf-8')
        except UnicodeDecodeError as exc:
            raise ValueError(f'{path}:{line_no}: invalid result line: not UTF-8 ({exc.reason})') from None


def read_results_to_draw(path: str | os.PathLike[str]) -> list[SampleResult]:
    """``read_results``, refusing a file whose grid is too large to draw (see MAX_DRAWN_CELLS)."""
    results = read_results(path)
    check_drawable(path, ((result.subset, result.context_length, result.depth_percent) for result in results))
    return results


def check_drawable(path: str | os.PathLike[str], cells: Iterable[tuple[str, int, float | None]]) -> None:
    """ValueError naming ``path`` when a subset of ``cells`` (subset, length, depth) has more lengths, depths or
    cells than a heatmap draws: the one bound of every file plot draws (results and progress files)."""
    by_subset: dict[str, set[tuple[int, float | None]]] = {}
    for subset, length, depth in cells:
        by_subset.setdefault(subset, set()).add((length, depth))
    for subset, found in by_subset.items():
        lengths, depths = len({cell[0] for cell in found}), len({cell[1] for cell in found})
        if lengths > MAX_DRAWN_LENGTHS or depths > MAX_DRAWN_DEPTHS or len(found) > MAX_DRAWN_CELLS:
            raise ValueError(
                f'{path}: subset {subset[:80]!r} holds {lengths} context lengths, {depths} depths and {len(found)} '
                f'cells; a heatmap draws at most {MAX_DRAWN_LENGTHS} lengths, {MAX_DRAWN_DEPTHS} depths and '
                f'{MAX_DRAWN_CELLS} cells'
            )


def write_cells_csv(
    path: str | os.PathLike[str], cells: Iterable[CellSummary], *, value_columns: Sequence[str] = ()
) -> Path:
    """Write one CSV row per subset x length x depth (atomically): `CELL_CSV_COLUMNS`, `no_answer`, `tokenizer`,
    `unknown`, then a column per task value of the cells and per name in ``value_columns`` (the values the run's
    tasks declare, so the header does not depend on which cells happen to hold one), in name order."""
    cells = list(cells)
    values = sorted({*value_columns, *(name for cell in cells for name in cell.task_values)})
    rows = [
        [
            *(getattr(cell, column) for column in CELL_CSV_COLUMNS),
            cell.no_answer,
            cell.tokenizer,
            cell.unknown,
            *(cell.task_values.get(name) for name in values),
        ]
        for cell in cells
    ]
    header = (*CELL_CSV_COLUMNS, NO_ANSWER_COLUMN, TOKENIZER_COLUMN, UNKNOWN_COLUMN, *values)
    return atomic_write_text(path, csv_text([header, *rows]))


def _parse_opt_float(text: str) -> float | None:
    return None if text == '' else float(text)


def _cell_from_row(row: Mapping[str, str], value_names: Sequence[str]) -> CellSummary:
    return CellSummary(
        subset=spreadsheet_unescape(row['subset']),
        context_length=int(row['context_length']),
        depth_percent=float(row['depth_percent']),
        n=int(row['n']),
        accuracy=_parse_opt_float(row['accuracy']),
        rule_recall=_parse_opt_float(row['rule_recall']),
        levenshtein=_parse_opt_float(row['levenshtein']),
        judge_failures=int(row['judge_failures']),
        errors=int(row['errors']),
        ci_low=_parse_opt_float(row['ci_low']),
        ci_high=_parse_opt_float(row['ci_high']),
        no_answer=int(row[NO_ANSWER_COLUMN]) if NO_ANSWER_COLUMN in row else 0,
        tokenizer=spreadsheet_unescape(row.get(TOKENIZER_COLUMN) or '') or None,
        unknown=spreadsheet_unescape(row.get(UNKNOWN_COLUMN) or '') or None,
        task_values={
            spreadsheet_unescape(name): value
            for name in value_names
            if (value := _parse_opt_float(row[name])) is not None
        },
    )


def read_cells_csv(path: str | os.PathLike[str]) -> list[CellSummary]:
    """Read a CSV written by `write_cells_csv`: `CELL_CSV_COLUMNS`, `no_answer`, `tokenizer` and `unknown` (when
    written), then task-value columns."""
    with open(path, encoding='utf-8', newline='') as handle:
        reader = csv.DictReader(handle)
        header = tuple(reader.fieldnames or ())
        if header[: len(CELL_CSV_COLUMNS)] != CELL_CSV_COLUMNS or len(set(header)) != len(header):
            raise ValueError(
                f'{path}: unexpected CSV header {reader.fieldnames!r}, expected {list(CELL_CSV_COLUMNS)} and then '
                'task-value columns'
            )
        extra = (NO_ANSWER_COLUMN, TOKENIZER_COLUMN, UNKNOWN_COLUMN)
        value_names = [name for name in header[len(CELL_CSV_COLUMNS) :] if name not in extra]
        cells: list[CellSummary] = []
        for row in reader:
            try:
                cells.append(_cell_from_row(row, value_names))
            except (TypeError, ValueError) as exc:  # TypeError: a short row yields None fields
                raise ValueError(f'{path}:{reader.line_num}: invalid cell row: {exc}') from exc
    return cells


def write_summary_json(
    path: str | os.PathLike[str],
    results: Iterable[SampleResult],
    *,
    threshold: float,
    pass_mark: float,
    mode: EffectiveMode = 'absolute',
    sweep: Mapping[str, Any] | None = None,
    effective: Mapping[str, EffectiveLength] | None = None,
) -> Path:
    """Write {'effective_context_length': {subset: ...}, 'controls': [...], 'subsets': [...]} as JSON (atomically).

    ``effective``: the run's ``effective_lengths``, when the caller computed them already (the run's outputs pass
    them on to the heatmaps too, so the bootstrap runs once); None computes them here.

    Effective lengths are computed for every subset that has needle samples; see `effective_context_length`: when
    one is a bound, its `length` is the lengths known to pass and `unknown_length` / `unknown_reason` name the length
    the data could not decide and why; each of its `per_length` entries has a `status` (pass, fail, unknown). An
    adaptive sweep adds 'sweep' (outputs.sweep_summary: per subset, why it stopped and the cells not tested), so the
    effective length is never read as if the whole grid had been measured.
    """
    check_effective_args(threshold, mode)
    result_list = list(results)
    if effective is None:
        effective = effective_lengths(result_list, threshold=threshold, mode=mode)
    payload = {
        'effective_context_length': {subset: asdict(length) for subset, length in effective.items()},
        'controls': [asdict(c) for c in summarize_controls(result_list)],
        'subsets': [asdict(s) for s in summarize_subsets(result_list, pass_mark=pass_mark)],
    }
    if sweep:
        payload['sweep'] = dict(sweep)
    return atomic_write_text(path, json_text(payload, indent=2) + '\n')


def grid_order(result: SampleResult) -> tuple:
    """The order rows are written and summarised in: subsets, then lengths, then depths, controls last (a stable
    sort: rows of one cell keep the order they came in)."""
    return result.subset, result.context_length, result.depth_percent is None, result.depth_percent or 0.0


def _score_order(result: SampleResult) -> tuple:
    # Grid order, then the score within a cell: rows that came in another order are the same rows in this one.
    return (*grid_order(result), result.accuracy is None, result.accuracy or 0.0)


@dataclass(frozen=True)
class SubsetEffective:
    """A subset's effective length with what it was computed from (its needle rows, in ``_score_order``, and the
    grid lengths the run did not send): a later caller holding the same passes it on instead of running the bootstrap
    again (``subset_effective``)."""

    rows: tuple[SampleResult, ...]
    length: EffectiveLength
    untested: tuple[tuple[int, str], ...] = ()  # (length, why) of each grid length not sent


def subset_effective(
    results: Iterable[SampleResult],
    *,
    subset: str,
    threshold: float,
    mode: EffectiveMode = 'absolute',
    known: SubsetEffective | None = None,
    untested: Mapping[int, str] | None = None,
) -> SubsetEffective:
    """``subset``'s effective length from ``results``; ``known`` itself when it was computed from equal rows with the
    same threshold, mode and untested lengths (the run's report and its files then state one computation, not two
    that could differ). ``untested``: the grid lengths the run did not send (an adaptive sweep that stopped on its
    budget), each with why: the walk up the lengths cannot pass one, so reaching it makes the effective length a
    bound."""
    rows = tuple(sorted((r for r in results if r.subset == subset and not r.control), key=_score_order))
    untested_pairs = tuple(sorted((untested or {}).items()))
    same_rule = known is not None and (known.length.threshold, known.length.mode) == (float(threshold), mode)
    if known is not None and same_rule and known.rows == rows and known.untested == untested_pairs:
        return known
    found = effective_context_length(rows, subset=subset, threshold=threshold, mode=mode)
    return SubsetEffective(rows, _bounded_by_untested(found, dict(untested_pairs)), untested_pairs)


def _bounded_by_untested(found: EffectiveLength, untested: Mapping[int, str]) -> EffectiveLength:
    """``found`` (over the lengths sent) as a bound at the first untested length the walk reaches: a length not sent
    is neither passed nor failed, so the effective length is at least the passing lengths below it, and no more."""
    stop = next((score.context_length for score in found.per_length if score.status != 'pass'), None)
    gap = next((length for length in sorted(untested) if stop is None or length < stop), None)
    if gap is None:
        return found
    passing = [score.context_length for score in found.per_length if score.context_length < gap]
    point = passing[-1] if passing else None  # every tested length below the gap passes: the walk reached it
    return dataclasses.replace(
        found,
        length=point,
        ci_low=min(found.ci_low or 0, point or 0) or None,
        ci_high=min(found.ci_high or 0, point or 0) or None,
        unknown_length=gap,
        unknown_reason=untested[gap],
    )


def effective_lengths(
    results: Sequence[SampleResult],
    *,
    threshold: float,
    mode: EffectiveMode = 'absolute',
    known: Mapping[str, SubsetEffective] | None = None,
    untested: Mapping[str, Mapping[int, str]] | None = None,
) -> dict[str, EffectiveLength]:
    """The effective context length (and its bootstrap interval) of every subset that has needle samples, in subset
    order: computed once per run and passed on to the summary file and the heatmaps; ``known``: what the run's
    report was given, reused where it was computed from the same (``subset_effective``); ``untested``: per subset,
    the grid lengths the run did not send and why."""
    known, untested = known or {}, untested or {}
    found = {}
    for subset in sorted({r.subset for r in results if not r.control}):
        options = {'known': known.get(subset), 'untested': untested.get(subset)}
        found[subset] = subset_effective(results, subset=subset, threshold=threshold, mode=mode, **options).length
    return found


def _effective_from_dict(data: Mapping[str, Any]) -> EffectiveLength:
    per_length = tuple(_length_score_from_dict(item) for item in data['per_length'])
    unknown_length, reason = data.get('unknown_length'), data.get('unknown_reason')
    # What reports print of a bound, from a file anyone may have edited: a length, and a short reason.
    if unknown_length is not None and (isinstance(unknown_length, bool) or not isinstance(unknown_length, int)):
        raise ValueError(f'unknown_length must be an int or null, got {str(unknown_length)[:40]!r}')
    if reason is not None and (not isinstance(reason, str) or len(reason) > _MAX_REASON_CHARS):
        raise ValueError(f'unknown_reason must be a text of at most {_MAX_REASON_CHARS} characters or null')
    return EffectiveLength(**{**data, 'per_length': per_length})


def _length_score_from_dict(data: Mapping[str, Any]) -> LengthScore:
    # Summaries from before the three outcomes knew two: a length passed, or it did not.
    status = data.get('status', 'pass' if data['passes'] else 'fail')
    if status not in LENGTH_STATUSES:
        raise ValueError(f'status must be one of {list(LENGTH_STATUSES)}, got {str(status)[:40]!r}')
    return LengthScore(**{**data, 'status': status})


def _subset_summary_from_dict(data: Mapping[str, Any]) -> SubsetSummary:
    return SubsetSummary(**{**data, 'agreement': JudgeRuleAgreement(**data['agreement'])})


def read_summary_json(path: str | os.PathLike[str]) -> RunSummary:
    """Read a file written by `write_summary_json`; ValueError when it is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding='utf-8'))
        return RunSummary(
            effective_context_length={
                subset: _effective_from_dict(item) for subset, item in data['effective_context_length'].items()
            },
            controls=tuple(ControlSummary(**item) for item in data['controls']),
            subsets=tuple(_subset_summary_from_dict(item) for item in data['subsets']),
        )
    # JSONDecodeError is a ValueError; RecursionError: a file nested deeper than the parser's recursion.
    except (KeyError, TypeError, AttributeError, ValueError, RecursionError) as exc:
        raise ValueError(f'{path}: not a needle_haystack summary: {type(exc).__name__}: {exc}') from exc
