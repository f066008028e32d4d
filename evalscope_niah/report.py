"""Tidy NIAH results: per-sample records, per-cell and per-subset summaries, judge/rule agreement, persistence.

Every dimension (subset, context length, depth) is its own field, never packed into a string key, so that the
plotting and CLI code can group and sort without parsing.  Pure Python + numpy; no evalscope import.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    'CELLS_FILE',
    'CELL_CSV_COLUMNS',
    'EMPTY_CELL',
    'JUDGE_STATUSES',
    'RESULTS_FILE',
    'Agreement',
    'CellSummary',
    'SampleResult',
    'SubsetSummary',
    'agreement',
    'atomic_write_bytes',
    'atomic_write_text',
    'cell_grid',
    'format_cell_table',
    'format_depth',
    'format_tokens',
    'length_labels',
    'overall_accuracy',
    'read_cells_csv',
    'read_results',
    'summarize_cells',
    'summarize_subsets',
    'write_cells_csv',
    'write_results',
]

# File names inside an EvalScope report directory (reports/<model_id>/), read back by `evalscope-niah plot`.
RESULTS_FILE = 'needle_haystack_results.jsonl'
CELLS_FILE = 'needle_haystack_cells.csv'

JUDGE_STATUSES: frozenset[str] = frozenset({'ok', 'failed', 'not_called'})

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

# Fixed seed and resample count: the same results must always give the same CI (reports are diffed across runs).
_BOOTSTRAP_SEED = 0
_BOOTSTRAP_RESAMPLES = 2000
_CI_LEVEL = 0.95
# Bound the (resamples x n) index matrix so a huge cell cannot exhaust memory.
_BOOTSTRAP_MAX_ELEMENTS = 4_000_000

EMPTY_CELL = '—'


# --------------------------------------------------------------------------------------------------------------------
# Value checks and coercion (shared by constructors and readers)
# --------------------------------------------------------------------------------------------------------------------


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


def _mean(values: Sequence[float]) -> float | None:
    # fsum: means of many 0/1 scores should not drift with summation order.
    return math.fsum(values) / len(values) if values else None


# --------------------------------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SampleResult:
    """One scored (or errored) NIAH sample.

    `accuracy` is the final score (judge, or rule fallback).  None means the model server errored: the sample is
    left out of every mean and counted in `errors` instead.  None with no `error` and `budget_exhausted` means the
    reply was cut by the token limit: left out of every mean too, counted in `budget_exhausted`, not in `errors`.
    `judge_accuracy` is set exactly when the judge answered (`judge_status == 'ok'`).
    """

    subset: str
    context_length: int
    depth_percent: float
    accuracy: float | None
    rule_recall: float | None
    levenshtein: float | None
    judge_accuracy: float | None
    judge_status: str
    error: str | None = None
    budget_exhausted: bool = False

    def __post_init__(self) -> None:
        if self.context_length <= 0:
            raise ValueError(f'context_length must be positive, got {self.context_length!r}')
        if not 0.0 <= self.depth_percent <= 100.0:
            raise ValueError(f'depth_percent must be in [0, 100], got {self.depth_percent!r}')
        _check_unit_interval('accuracy', self.accuracy)
        _check_unit_interval('rule_recall', self.rule_recall)
        _check_unit_interval('judge_accuracy', self.judge_accuracy)
        _check_finite('levenshtein', self.levenshtein)
        if self.judge_status not in JUDGE_STATUSES:
            raise ValueError(f'judge_status must be one of {sorted(JUDGE_STATUSES)}, got {self.judge_status!r}')
        # Agreement statistics trust that 'ok' <=> a judge score exists; enforce it at the source.
        if (self.judge_status == 'ok') != (self.judge_accuracy is not None):
            raise ValueError(
                f'judge_accuracy must be set exactly when judge_status is "ok" '
                f'(status={self.judge_status!r}, judge_accuracy={self.judge_accuracy!r})'
            )
        # A server fault leaves nothing to score; a score next to an error would be silently averaged in.
        if self.error is not None and self.accuracy is not None:
            raise ValueError('a sample with an error must have accuracy=None')

    @property
    def errored(self) -> bool:
        """True when the sample has no final score because of a fault (not because its reply ran out of room)."""
        return self.accuracy is None and not self.budget_excluded

    @property
    def budget_excluded(self) -> bool:
        """True when the reply was cut by the token limit or context window: no score, and no error either."""
        return self.accuracy is None and self.error is None and self.budget_exhausted

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SampleResult:
        """Inverse of `to_dict`; missing optional keys take their defaults, unknown keys are an error."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f'unknown SampleResult fields: {sorted(unknown)}')
        try:
            budget = data.get('budget_exhausted', False)
            if not isinstance(budget, bool):
                raise ValueError(f'budget_exhausted must be a bool, got {budget!r}')
            subset = data['subset']
            if not isinstance(subset, str):
                raise ValueError(f'subset must be a string, got {subset!r}')
            status = data['judge_status']
            if not isinstance(status, str):
                raise ValueError(f'judge_status must be a string, got {status!r}')
            return cls(
                subset=subset,
                context_length=_as_int('context_length', data['context_length']),
                depth_percent=_as_float('depth_percent', data['depth_percent']),
                accuracy=_as_opt_float('accuracy', data['accuracy']),
                rule_recall=_as_opt_float('rule_recall', data['rule_recall']),
                levenshtein=_as_opt_float('levenshtein', data['levenshtein']),
                judge_accuracy=_as_opt_float('judge_accuracy', data['judge_accuracy']),
                judge_status=status,
                error=_as_opt_str('error', data.get('error')),
                budget_exhausted=budget,
            )
        except KeyError as exc:
            raise ValueError(f'missing SampleResult field: {exc.args[0]}') from None


@dataclass(frozen=True)
class CellSummary:
    """Aggregate of all samples sharing (subset, context_length, depth_percent)."""

    subset: str
    context_length: int
    depth_percent: float
    n: int
    accuracy: float | None
    rule_recall: float | None
    levenshtein: float | None
    judge_failures: int
    errors: int
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class Agreement:
    """Judge vs rule pass/fail agreement. `share_agree` and `kappa` are None when n == 0."""

    n: int
    share_agree: float | None
    kappa: float | None


@dataclass(frozen=True)
class SubsetSummary:
    subset: str
    n: int
    accuracy: float | None
    rule_recall: float | None
    levenshtein: float | None
    agreement: Agreement
    judge_failures: int
    errors: int
    budget_exhausted: int


# --------------------------------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------------------------------


def _bootstrap_ci(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of the mean; (None, None) below two values."""
    n = len(values)
    if n < 2:
        return None, None
    # Sorting makes the CI depend on the multiset of scores only, not on the order samples finished in.
    data = np.sort(np.asarray(values, dtype=float))
    rng = np.random.default_rng(_BOOTSTRAP_SEED)
    chunk = max(1, _BOOTSTRAP_MAX_ELEMENTS // n)
    means: list[np.ndarray] = []
    remaining = _BOOTSTRAP_RESAMPLES
    while remaining > 0:
        size = min(chunk, remaining)
        means.append(data[rng.integers(0, n, size=(size, n))].mean(axis=1))
        remaining -= size
    alpha = (1.0 - _CI_LEVEL) / 2.0
    low, high = np.quantile(np.concatenate(means), [alpha, 1.0 - alpha])
    mean = math.fsum(values) / n
    # Percentile intervals of a mean contain the mean in practice; clamp so that holds by construction.
    return min(float(low), mean), max(float(high), mean)


def _summarize_cell(key: tuple[str, int, float], samples: Sequence[SampleResult]) -> CellSummary:
    scored = [s for s in samples if not s.errored]
    scores = [s.accuracy for s in scored if s.accuracy is not None]
    ci_low, ci_high = _bootstrap_ci(scores)
    return CellSummary(
        subset=key[0],
        context_length=key[1],
        depth_percent=key[2],
        n=len(scores),
        accuracy=_mean(scores),
        rule_recall=_mean([s.rule_recall for s in scored if s.rule_recall is not None]),
        levenshtein=_mean([s.levenshtein for s in scored if s.levenshtein is not None]),
        judge_failures=sum(s.judge_status == 'failed' for s in samples),
        errors=sum(s.errored for s in samples),
        ci_low=ci_low,
        ci_high=ci_high,
    )


def summarize_cells(results: Iterable[SampleResult]) -> list[CellSummary]:
    """One summary per (subset, context_length, depth_percent), sorted by that key.

    Errored samples (accuracy None) count in `errors` only, budget-excluded ones in neither; a cell whose samples
    all errored has n=0 and accuracy None.  `judge_failures` counts every sample whose judge call failed (its
    score fell back to the rule).
    """
    groups: dict[tuple[str, int, float], list[SampleResult]] = defaultdict(list)
    for result in results:
        groups[(result.subset, result.context_length, result.depth_percent)].append(result)
    return [_summarize_cell(key, groups[key]) for key in sorted(groups)]


def agreement(pairs: Iterable[tuple[float, float]], *, threshold: float = 0.5) -> Agreement:
    """Pass/fail agreement between two scorers (e.g. judge, rule): share agreeing and Cohen's kappa.

    A score >= threshold is a pass.  Callers pass only samples the judge actually scored.  Kappa is computed in
    exact integer arithmetic: kappa = (N*a - E) / (N^2 - E), with a = agreeing count and E = N^2 * expected
    agreement.  Degenerate case E == N^2 (both scorers put every sample in the same single class, so chance
    agreement is 1 and kappa is 0/0): kappa = 1.0 if observed agreement is 1, else 0.0.
    """
    if not math.isfinite(threshold):
        raise ValueError(f'threshold must be finite, got {threshold!r}')
    n = agree = pass_a = pass_b = 0
    for score_a, score_b in pairs:
        if not (math.isfinite(score_a) and math.isfinite(score_b)):
            raise ValueError(f'agreement scores must be finite, got {(score_a, score_b)!r}')
        a_pass = score_a >= threshold
        b_pass = score_b >= threshold
        n += 1
        agree += a_pass == b_pass
        pass_a += a_pass
        pass_b += b_pass
    if n == 0:
        return Agreement(n=0, share_agree=None, kappa=None)
    return Agreement(n=n, share_agree=agree / n, kappa=_cohen_kappa(n, agree, pass_a, pass_b))


def _cohen_kappa(n: int, agree: int, pass_a: int, pass_b: int) -> float:
    # n^2 * expected agreement, kept integer so the degenerate check below is exact.
    expected = pass_a * pass_b + (n - pass_a) * (n - pass_b)
    if expected == n * n:
        return 1.0 if agree == n else 0.0
    return (n * agree - expected) / (n * n - expected)


def _judge_rule_pairs(results: Iterable[SampleResult]) -> list[tuple[float, float]]:
    # Only samples the judge really scored, and that also have a rule score, can be compared.
    return [
        (r.judge_accuracy, r.rule_recall)
        for r in results
        if r.judge_status == 'ok' and r.judge_accuracy is not None and r.rule_recall is not None
    ]


def _summarize_subset(subset: str, samples: Sequence[SampleResult]) -> SubsetSummary:
    scored = [s for s in samples if not s.errored]
    # Sample-weighted (micro) means: equal to the n-weighted mean of the cell means.
    scores = [s.accuracy for s in scored if s.accuracy is not None]
    return SubsetSummary(
        subset=subset,
        n=len(scores),
        accuracy=_mean(scores),
        rule_recall=_mean([s.rule_recall for s in scored if s.rule_recall is not None]),
        levenshtein=_mean([s.levenshtein for s in scored if s.levenshtein is not None]),
        agreement=agreement(_judge_rule_pairs(samples)),
        judge_failures=sum(s.judge_status == 'failed' for s in samples),
        errors=sum(s.errored for s in samples),
        budget_exhausted=sum(s.budget_exhausted for s in samples),
    )


def summarize_subsets(results: Iterable[SampleResult]) -> list[SubsetSummary]:
    """One summary per subset, sorted by subset name."""
    groups: dict[str, list[SampleResult]] = defaultdict(list)
    for result in results:
        groups[result.subset].append(result)
    return [_summarize_subset(subset, groups[subset]) for subset in sorted(groups)]


def overall_accuracy(results: Iterable[SampleResult]) -> float | None:
    """Mean final accuracy over all scored samples of all subsets; None when nothing was scored."""
    return _mean([r.accuracy for r in results if r.accuracy is not None])


# --------------------------------------------------------------------------------------------------------------------
# Persistence
# --------------------------------------------------------------------------------------------------------------------


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write via a temp file in the same directory + os.replace, so readers never see a half-written file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Keep an existing file's permissions; mkstemp's 0600 would otherwise leak onto shared result files.
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f'.{target.name}.', suffix='.tmp')
    try:
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except BaseException:
        # Also on KeyboardInterrupt: never leave the temp file behind.
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return target


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """UTF-8 text variant of `atomic_write_bytes` (no newline translation)."""
    return atomic_write_bytes(path, text.encode('utf-8'))


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


def _csv_value(value: int | float | str | None) -> str:
    # str(float) is the shortest repr that round-trips exactly; None becomes an empty field.
    return '' if value is None else str(value)


def write_cells_csv(path: str | os.PathLike[str], cells: Iterable[CellSummary]) -> Path:
    """Write one CSV row per subset x length x depth with header `CELL_CSV_COLUMNS` (atomically)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator='\n')
    writer.writerow(CELL_CSV_COLUMNS)
    for cell in cells:
        writer.writerow([_csv_value(getattr(cell, column)) for column in CELL_CSV_COLUMNS])
    return atomic_write_text(path, buffer.getvalue())


def _parse_opt_float(text: str) -> float | None:
    return None if text == '' else float(text)


def _cell_from_row(row: Mapping[str, str]) -> CellSummary:
    return CellSummary(
        subset=row['subset'],
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
    )


def read_cells_csv(path: str | os.PathLike[str]) -> list[CellSummary]:
    """Read a CSV written by `write_cells_csv`; the header must match exactly."""
    with open(path, encoding='utf-8', newline='') as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != CELL_CSV_COLUMNS:
            raise ValueError(f'{path}: unexpected CSV header {reader.fieldnames!r}, expected {list(CELL_CSV_COLUMNS)}')
        cells: list[CellSummary] = []
        for row in reader:
            try:
                cells.append(_cell_from_row(row))
            except (TypeError, ValueError) as exc:  # TypeError: a short row yields None fields
                raise ValueError(f'{path}:{reader.line_num}: invalid cell row: {exc}') from exc
    return cells


# --------------------------------------------------------------------------------------------------------------------
# Labels and terminal table
# --------------------------------------------------------------------------------------------------------------------


def format_tokens(tokens: int, *, unit: int = 1000) -> str:
    """Compact token count: 1000 -> '1k', 4600 -> '4.6k', 131072 with unit=1024 -> '128k', 500 -> '500'."""
    if unit not in (1000, 1024):
        raise ValueError(f'unit must be 1000 or 1024, got {unit!r}')
    for divisor, suffix in ((unit * unit, 'M'), (unit, 'k')):
        if tokens >= divisor:
            text = f'{tokens / divisor:.1f}'.removesuffix('.0')
            return f'{text}{suffix}'
    return str(tokens)


def _exact_in_units(tokens: int, unit: int) -> bool:
    # True when `format_tokens` (one decimal of k or M) shows this length without rounding.
    divisor = unit * unit if tokens >= unit * unit else unit
    return tokens < unit or (tokens * 10) % divisor == 0


def length_labels(lengths: Sequence[int]) -> list[str]:
    """Labels for an axis of context lengths, unique and as round as possible.

    Decimal units (1k = 1000) unless only binary units label every length exactly (4096 -> '4k', 131072 ->
    '128k').  If rounding makes two labels equal, fall back to full token counts so columns stay distinct.
    """
    unit = 1000
    if not all(_exact_in_units(t, 1000) for t in lengths) and all(_exact_in_units(t, 1024) for t in lengths):
        unit = 1024
    labels = [format_tokens(t, unit=unit) for t in lengths]
    if len(set(labels)) != len(set(lengths)):
        labels = [f'{t:,}' for t in lengths]
    return labels


def format_depth(depth_percent: float) -> str:
    """Depth label without noise: 0 -> '0', 12.5 -> '12.5', 33.333 -> '33.33'."""
    return f'{depth_percent:.2f}'.rstrip('0').rstrip('.')


def cell_grid(
    cells: Iterable[CellSummary], *, subset: str
) -> tuple[list[int], list[float], dict[tuple[float, int], CellSummary]]:
    """Sorted lengths, sorted depths and a (depth, length) -> cell map for one subset.

    Raises ValueError when the subset has no cells or a (length, depth) pair occurs twice (e.g. concatenated CSVs):
    silently picking one would draw a wrong number.
    """
    grid: dict[tuple[float, int], CellSummary] = {}
    for cell in cells:
        if cell.subset != subset:
            continue
        key = (cell.depth_percent, cell.context_length)
        if key in grid:
            raise ValueError(
                f'duplicate cell for subset {subset!r}: context_length={cell.context_length}, '
                f'depth_percent={cell.depth_percent}'
            )
        grid[key] = cell
    if not grid:
        raise ValueError(f'no cells for subset {subset!r}')
    depths = sorted({d for d, _ in grid})
    lengths = sorted({t for _, t in grid})
    return lengths, depths, grid


def format_cell_table(cells: Iterable[CellSummary], *, subset: str) -> str:
    """Plain-text grid: rows = depth %, columns = context length, values 0.00-1.00, '—' for empty cells."""
    lengths, depths, grid = cell_grid(cells, subset=subset)
    corner = 'depth % \\ tokens'
    header = [corner, *length_labels(lengths)]
    rows = [header]
    for depth in depths:
        row = [format_depth(depth)]
        for length in lengths:
            cell = grid.get((depth, length))
            row.append(EMPTY_CELL if cell is None or cell.accuracy is None else f'{cell.accuracy:.2f}')
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        '  '.join([row[0].ljust(widths[0]), *(value.rjust(w) for value, w in zip(row[1:], widths[1:], strict=True))])
        for row in rows
    ]
    return '\n'.join([f'subset: {subset}', *lines])
