"""Our own result files: per-sample `SampleResult` records (JSONL), per-cell summaries (CSV) and the run summary
(JSON), with their readers, plus the one CSV encoder every CSV writer of the package uses.

Every dimension (subset, context length, depth) is its own field, never packed into a string key, so that the
plotting and CLI code can group and sort without parsing.  No evalscope import.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from .atomic import atomic_write_text
from .stats import (
    Agreement,
    CellSummary,
    ControlSummary,
    EffectiveLength,
    EffectiveMode,
    LengthScore,
    RunSummary,
    SubsetSummary,
    check_effective_args,
    effective_context_length,
    summarize_controls,
    summarize_subsets,
)
from .vocabulary import JUDGE_STATUSES, SCORING_SOURCES, JudgeStatus, ScoringSource

__all__ = [
    'CELL_CSV_COLUMNS',
    'SampleResult',
    'csv_text',
    'read_cells_csv',
    'read_results',
    'read_summary_json',
    'spreadsheet_unescape',
    'write_cells_csv',
    'write_results',
    'write_summary_json',
]

# Model output kept per sample (answer, reasoning), in characters including the cut marker: enough to see what
# the model said, bounded so a rambling reply cannot blow up the results file or the HTML heatmap.
MAX_TEXT_CHARS = 1000
_CUT_MARKER = ' […cut {} chars]'
# Optional fields written only when set, so files of runs without them stay byte-identical to older versions.
_OMIT_WHEN_NONE = (
    'answer',
    'reasoning',
    'judge_rating',
    'served_prompt_tokens',
    'served_completion_tokens',
    'scoring',
)

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
    'precision',
)
# Cells CSVs written before `precision` existed are still read (precision None).
LEGACY_CELL_CSV_COLUMNS = CELL_CSV_COLUMNS[:-1]

# A spreadsheet runs a cell starting with one of these as a formula (CSV injection); a leading quote makes it
# text.  A leading quote itself is doubled so that reading back is unambiguous.
_FORMULA_STARTS = ('=', '+', '-', '@', '\t', '\r', "'")


def _check_unit_interval(name: str, value: float | None) -> None:
    # `not 0 <= x <= 1` is also True for NaN, so NaN is rejected here too.
    if value is not None and not 0.0 <= value <= 1.0:
        raise ValueError(f'{name} must be in [0, 1] or None, got {value!r}')


def _check_finite(name: str, value: float | None) -> None:
    if value is not None and not math.isfinite(value):
        raise ValueError(f'{name} must be finite or None, got {value!r}')


def _as_int(name: str, value: Any) -> int:
    # bool is an int subclass; a True context length is a bug, not a 1-token context.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f'{name} must be an int, got {value!r}')
    return value


def _as_float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f'{name} must be a number, got {value!r}')
    return float(value)


def _as_opt_float(name: str, value: Any) -> float | None:
    return None if value is None else _as_float(name, value)


def _as_opt_str(name: str, value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f'{name} must be a string or None, got {value!r}')
    return value


def _as_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f'{name} must be a bool, got {value!r}')
    return value


def _as_opt_bool(name: str, value: Any) -> bool | None:
    return None if value is None else _as_bool(name, value)


def _as_opt_int(name: str, value: Any) -> int | None:
    return None if value is None else _as_int(name, value)


def bounded_text(text: str | None, *, limit: int = MAX_TEXT_CHARS) -> str | None:
    """`text` cut to at most `limit` characters, ending in a marker that says how much was cut; idempotent."""
    if text is None or len(text) <= limit:
        return text
    # The marker for cutting everything is the longest one this text can need, so the result always fits.
    keep = limit - len(_CUT_MARKER.format(len(text)))
    if keep < 0:
        raise ValueError(f'limit must leave room for the cut marker, got {limit!r}')
    return text[:keep] + _CUT_MARKER.format(len(text) - keep)


# --------------------------------------------------------------------------------------------------------------------
# Per-sample records
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SampleResult:
    """One scored (or errored) NIAH sample.

    `accuracy` is the final score (judge, or rule fallback).  None means the model server errored: the sample is
    left out of every mean and counted in `errors` instead.  None with no `error` and `budget_exhausted` means the
    reply was cut by the token limit: left out of every mean too, counted in `budget_exhausted`, not in `errors`.
    `judge_accuracy` is set exactly when the judge answered (`judge_status == 'ok'`).

    A `control` sample has no needle (the right answer is that the document does not say): its `depth_percent` is
    None, its `accuracy` is the abstention score (1.0 = abstained) and `guessed` says whether the reply stated the
    needle fact anyway.  `precision` is the per-needle precision of a multi-needle retrieval reply.

    What the model said, for reading next to the score: `answer` (its final answer, reasoning stripped) and
    `reasoning` (its reasoning block), each cut to `MAX_TEXT_CHARS` with a marker; `judge_rating` is the judge's
    raw rating (Kamradt's 1-10 rubric).  `served_prompt_tokens` / `served_completion_tokens` are the token counts
    the server reported; `scoring` says what decided `accuracy` ('judge', 'rule', or 'rule_fallback' when the
    judge could not be used).  These are optional and left out of `to_dict` when None.
    """

    subset: str
    context_length: int
    depth_percent: float | None
    accuracy: float | None
    rule_recall: float | None
    levenshtein: float | None
    judge_accuracy: float | None
    judge_status: JudgeStatus
    error: str | None = None
    budget_exhausted: bool = False
    control: bool = False
    guessed: bool | None = None
    precision: float | None = None
    answer: str | None = None
    reasoning: str | None = None
    judge_rating: float | None = None
    served_prompt_tokens: int | None = None
    served_completion_tokens: int | None = None
    scoring: ScoringSource | None = None

    def __post_init__(self) -> None:
        self._check_dimensions()
        _check_unit_interval('precision', self.precision)
        _check_unit_interval('accuracy', self.accuracy)
        _check_unit_interval('rule_recall', self.rule_recall)
        _check_unit_interval('judge_accuracy', self.judge_accuracy)
        _check_finite('levenshtein', self.levenshtein)
        _check_finite('judge_rating', self.judge_rating)
        self._check_judge()
        # A server fault leaves nothing to score; a score next to an error would be silently averaged in.
        if self.error is not None and self.accuracy is not None:
            raise ValueError('a sample with an error must have accuracy=None')
        for name in ('served_prompt_tokens', 'served_completion_tokens'):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f'{name} must be a non-negative int or None, got {value!r}')
        # Frozen, so the bound is applied through object.__setattr__; bounded_text is idempotent, so a record
        # read back from a file is unchanged.
        object.__setattr__(self, 'answer', bounded_text(self.answer))
        object.__setattr__(self, 'reasoning', bounded_text(self.reasoning))

    def _check_dimensions(self) -> None:
        if self.context_length <= 0:
            raise ValueError(f'context_length must be positive, got {self.context_length!r}')
        # depth None is how a control is recognised downstream; the flag and the depth must never disagree.
        if self.control != (self.depth_percent is None):
            raise ValueError(
                f'depth_percent must be None exactly for control samples '
                f'(control={self.control!r}, depth_percent={self.depth_percent!r})'
            )
        if self.depth_percent is not None and not 0.0 <= self.depth_percent <= 100.0:
            raise ValueError(f'depth_percent must be in [0, 100], got {self.depth_percent!r}')
        if self.guessed is not None and not self.control:
            raise ValueError('guessed is only meaningful for control samples')
        if self.precision is not None and self.control:
            raise ValueError('a control sample has no needles, so no precision')

    def _check_judge(self) -> None:
        if self.judge_status not in JUDGE_STATUSES:
            raise ValueError(f'judge_status must be one of {sorted(JUDGE_STATUSES)}, got {self.judge_status!r}')
        # Agreement statistics trust that 'ok' <=> a judge score exists; enforce it at the source.
        if (self.judge_status == 'ok') != (self.judge_accuracy is not None):
            raise ValueError(
                f'judge_accuracy must be set exactly when judge_status is "ok" '
                f'(status={self.judge_status!r}, judge_accuracy={self.judge_accuracy!r})'
            )
        if self.scoring is not None and self.scoring not in SCORING_SOURCES:
            raise ValueError(f'scoring must be one of {sorted(SCORING_SOURCES)} or None, got {self.scoring!r}')
        if self.scoring == 'judge' and self.judge_status != 'ok':
            raise ValueError(f'scoring "judge" needs a judge verdict (judge_status "ok"), got {self.judge_status!r}')

    @property
    def errored(self) -> bool:
        """True when the sample has no final score because of a fault (not because its reply ran out of room)."""
        return self.accuracy is None and not self.budget_excluded

    @property
    def budget_excluded(self) -> bool:
        """True when the reply was cut by the token limit or context window: no score, and no error either."""
        return self.accuracy is None and self.error is None and self.budget_exhausted

    def to_dict(self) -> dict[str, Any]:
        """All fields; the optional ones (`answer` ... `scoring`) only when set."""
        data = asdict(self)
        for name in _OMIT_WHEN_NONE:
            if data[name] is None:
                del data[name]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SampleResult:
        """Inverse of `to_dict`; missing optional keys take their defaults, unknown keys are an error.

        Rows written before control samples existed (no `control`, `guessed`, `precision`) read as needle samples;
        rows written before answers were kept read with `answer` ... `scoring` None.
        """
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f'unknown SampleResult fields: {sorted(unknown)}')
        try:
            subset = data['subset']
            if not isinstance(subset, str):
                raise ValueError(f'subset must be a string, got {subset!r}')
            status = data['judge_status']
            if not isinstance(status, str):
                raise ValueError(f'judge_status must be a string, got {status!r}')
            return cls(
                subset=subset,
                context_length=_as_int('context_length', data['context_length']),
                depth_percent=_as_opt_float('depth_percent', data['depth_percent']),
                accuracy=_as_opt_float('accuracy', data['accuracy']),
                rule_recall=_as_opt_float('rule_recall', data['rule_recall']),
                levenshtein=_as_opt_float('levenshtein', data['levenshtein']),
                judge_accuracy=_as_opt_float('judge_accuracy', data['judge_accuracy']),
                judge_status=status,
                error=_as_opt_str('error', data.get('error')),
                budget_exhausted=_as_bool('budget_exhausted', data.get('budget_exhausted', False)),
                control=_as_bool('control', data.get('control', False)),
                guessed=_as_opt_bool('guessed', data.get('guessed')),
                precision=_as_opt_float('precision', data.get('precision')),
                answer=_as_opt_str('answer', data.get('answer')),
                reasoning=_as_opt_str('reasoning', data.get('reasoning')),
                judge_rating=_as_opt_float('judge_rating', data.get('judge_rating')),
                served_prompt_tokens=_as_opt_int('served_prompt_tokens', data.get('served_prompt_tokens')),
                served_completion_tokens=_as_opt_int('served_completion_tokens', data.get('served_completion_tokens')),
                scoring=_as_opt_str('scoring', data.get('scoring')),
            )
        except KeyError as exc:
            raise ValueError(f'missing SampleResult field: {exc.args[0]}') from None


# --------------------------------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------------------------------


def _spreadsheet_safe(value: int | float | str | None) -> str:
    # Numbers are written by repr (shortest exact round trip); only text can be a formula.
    if value is None:
        return ''
    if isinstance(value, str):
        return f"'{value}" if value.startswith(_FORMULA_STARTS) else value
    return str(value)


def spreadsheet_unescape(text: str) -> str:
    """Undo the quote `csv_text` puts before a formula-like value ("'=x" -> '=x'); other text is unchanged."""
    if text.startswith("'") and text[1:].startswith(_FORMULA_STARTS):
        return text[1:]
    return text


def csv_text(rows: Iterable[Sequence[int | float | str | None]]) -> str:
    """CSV text ('\\n' line ends) safe to open in a spreadsheet: None is an empty field, and a text value starting
    with = + - @ tab, CR or ' gets a leading quote, so it is shown as text, never run as a formula.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator='\n')
    # The csv module quotes only the line terminator's characters, so a lone CR would end the row for any reader;
    # the rare row holding one is written fully quoted instead.
    quote_all = csv.writer(buffer, lineterminator='\n', quoting=csv.QUOTE_ALL)
    for row in rows:
        fields = [_spreadsheet_safe(value) for value in row]
        (quote_all if any('\r' in field for field in fields) else writer).writerow(fields)
    return buffer.getvalue()


def write_results(path: str | os.PathLike[str], results: Iterable[SampleResult]) -> Path:
    """Write results as JSONL, one `SampleResult.to_dict()` per line (atomically)."""
    # allow_nan=False: NaN is not JSON; validation should already exclude it, this is the last guard.
    lines = [json.dumps(r.to_dict(), ensure_ascii=False, allow_nan=False) for r in results]
    return atomic_write_text(path, ''.join(line + '\n' for line in lines))


def read_results(path: str | os.PathLike[str]) -> list[SampleResult]:
    """Read a JSONL file written by `write_results`; blank lines are skipped, bad lines raise with their number."""
    results: list[SampleResult] = []
    with open(path, encoding='utf-8') as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if not isinstance(data, dict):
                    raise ValueError('expected a JSON object')
                results.append(SampleResult.from_dict(data))
            except ValueError as exc:  # json.JSONDecodeError is a ValueError
                raise ValueError(f'{path}:{line_no}: invalid result line: {exc}') from exc
    return results


def write_cells_csv(path: str | os.PathLike[str], cells: Iterable[CellSummary]) -> Path:
    """Write one CSV row per subset x length x depth with header `CELL_CSV_COLUMNS` (atomically)."""
    rows = [[getattr(cell, column) for column in CELL_CSV_COLUMNS] for cell in cells]
    return atomic_write_text(path, csv_text([CELL_CSV_COLUMNS, *rows]))


def _parse_opt_float(text: str) -> float | None:
    return None if text == '' else float(text)


def _cell_from_row(row: Mapping[str, str]) -> CellSummary:
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
        precision=_parse_opt_float(row['precision']) if 'precision' in row else None,
    )


def read_cells_csv(path: str | os.PathLike[str]) -> list[CellSummary]:
    """Read a CSV written by `write_cells_csv`; the header must match exactly (or lack only `precision`)."""
    with open(path, encoding='utf-8', newline='') as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) not in (CELL_CSV_COLUMNS, LEGACY_CELL_CSV_COLUMNS):
            raise ValueError(f'{path}: unexpected CSV header {reader.fieldnames!r}, expected {list(CELL_CSV_COLUMNS)}')
        cells: list[CellSummary] = []
        for row in reader:
            try:
                cells.append(_cell_from_row(row))
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
) -> Path:
    """Write {'effective_context_length': {subset: ...}, 'controls': [...], 'subsets': [...]} as JSON (atomically).

    Effective lengths are computed for every subset that has needle samples; see `effective_context_length`.
    `pass_mark` is where a judge or rule score passes, for their agreement (see `summarize_subsets`).
    """
    check_effective_args(threshold, mode)
    result_list = list(results)
    subsets = sorted({r.subset for r in result_list if not r.control})
    payload = {
        'effective_context_length': {
            subset: asdict(effective_context_length(result_list, subset=subset, threshold=threshold, mode=mode))
            for subset in subsets
        },
        'controls': [asdict(c) for c in summarize_controls(result_list)],
        'subsets': [asdict(s) for s in summarize_subsets(result_list, pass_mark=pass_mark)],
    }
    return atomic_write_text(path, json.dumps(payload, ensure_ascii=False, allow_nan=False, indent=2) + '\n')


def _effective_from_dict(data: Mapping[str, Any]) -> EffectiveLength:
    return EffectiveLength(**{**data, 'per_length': tuple(LengthScore(**item) for item in data['per_length'])})


def _subset_summary_from_dict(data: Mapping[str, Any]) -> SubsetSummary:
    return SubsetSummary(**{**data, 'agreement': Agreement(**data['agreement'])})


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
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # JSONDecodeError is a ValueError
        raise ValueError(f'{path}: not a needle_haystack summary: {type(exc).__name__}: {exc}') from exc
