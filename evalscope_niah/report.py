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
import re
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal

import numpy as np

__all__ = [
    'CDME_META_COLUMNS',
    'CELLS_FILE',
    'CELL_CSV_COLUMNS',
    'DEFAULT_EFFECTIVE_THRESHOLD',
    'EFFECTIVE_MODES',
    'EMPTY_CELL',
    'JUDGE_STATUSES',
    'RESULTS_FILE',
    'SUMMARY_FILE',
    'Agreement',
    'CellSummary',
    'ControlSummary',
    'EffectiveLength',
    'EffectiveMode',
    'LengthScore',
    'RunSummary',
    'SampleResult',
    'SubsetSummary',
    'agreement',
    'atomic_write_bytes',
    'atomic_write_text',
    'cell_grid',
    'effective_context_length',
    'format_cell_table',
    'format_depth',
    'format_tokens',
    'length_labels',
    'overall_accuracy',
    'read_cells_csv',
    'read_results',
    'read_summary_csv',
    'read_summary_json',
    'summarize_cells',
    'summarize_controls',
    'summarize_subsets',
    'write_cdme_summary_csv',
    'write_cells_csv',
    'write_results',
    'write_summary_json',
]

# File names inside an EvalScope report directory (reports/<model_id>/), read back by `evalscope-niah plot`.
RESULTS_FILE = 'needle_haystack_results.jsonl'
CELLS_FILE = 'needle_haystack_cells.csv'
SUMMARY_FILE = 'needle_haystack_summary.json'

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
    'precision',
)
# Cells CSVs written before `precision` existed are still read (precision None).
_LEGACY_CELL_CSV_COLUMNS = CELL_CSV_COLUMNS[:-1]

# Effective context length: RULER's absolute pass mark, or NoLiMa's share of the shortest length's score.
EffectiveMode = Literal['absolute', 'relative']
EFFECTIVE_MODES: tuple[str, ...] = ('absolute', 'relative')
DEFAULT_EFFECTIVE_THRESHOLD = 0.85

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


def _as_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f'{name} must be a bool, got {value!r}')
    return value


def _as_opt_bool(name: str, value: Any) -> bool | None:
    return None if value is None else _as_bool(name, value)


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

    A `control` sample has no needle (the right answer is that the document does not say): its `depth_percent` is
    None, its `accuracy` is the abstention score (1.0 = abstained) and `guessed` says whether the reply stated the
    needle fact anyway.  `precision` is the per-needle precision of a multi-needle retrieval reply.
    """

    subset: str
    context_length: int
    depth_percent: float | None
    accuracy: float | None
    rule_recall: float | None
    levenshtein: float | None
    judge_accuracy: float | None
    judge_status: str
    error: str | None = None
    budget_exhausted: bool = False
    control: bool = False
    guessed: bool | None = None
    precision: float | None = None

    def __post_init__(self) -> None:
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
        _check_unit_interval('precision', self.precision)
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
        """Inverse of `to_dict`; missing optional keys take their defaults, unknown keys are an error.

        Rows written before control samples existed (no `control`, `guessed`, `precision`) read as needle samples.
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
    precision: float | None = None  # mean per-needle precision; None unless multi-needle retrieval scored it


@dataclass(frozen=True)
class ControlSummary:
    """Needle-absent control samples of one (subset, context length): did the model abstain or make something up?

    `n` counts scored controls; `abstention_rate` is their mean score and `guess_rate` the share (of those that
    recorded it) whose reply stated the needle fact anyway.  Errored controls count in `errors` only.
    """

    subset: str
    context_length: int
    n: int
    abstention_rate: float | None
    guess_rate: float | None
    errors: int


@dataclass(frozen=True)
class LengthScore:
    """Mean accuracy at one context length (all depths and repeats pooled) and whether it passes the threshold."""

    context_length: int
    n: int
    accuracy: float | None
    ci_low: float | None
    ci_high: float | None
    passes: bool


@dataclass(frozen=True)
class EffectiveLength:
    """The longest context length up to which every tested length passes, with a bootstrap CI over samples.

    `length` None means the shortest length already fails.  `base_score` is the shortest length's mean accuracy
    that `relative` mode scales the threshold by (None in `absolute` mode).  `ci_low`/`ci_high` are lengths of
    the tested grid, None where the interval reaches below the shortest length.
    """

    subset: str
    mode: EffectiveMode
    threshold: float
    base_score: float | None
    length: int | None
    ci_low: int | None
    ci_high: int | None
    per_length: tuple[LengthScore, ...]


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


@dataclass(frozen=True)
class RunSummary:
    """What `write_summary_json` stores: effective length per subset, control summaries, subset summaries."""

    effective_context_length: dict[str, EffectiveLength]
    controls: tuple[ControlSummary, ...]
    subsets: tuple[SubsetSummary, ...]


# --------------------------------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------------------------------


def _resampled_means(data: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """`_BOOTSTRAP_RESAMPLES` means of `data` resampled with replacement, drawn in memory-bounded chunks."""
    n = len(data)
    chunk = max(1, _BOOTSTRAP_MAX_ELEMENTS // n)
    means: list[np.ndarray] = []
    remaining = _BOOTSTRAP_RESAMPLES
    while remaining > 0:
        size = min(chunk, remaining)
        means.append(data[rng.integers(0, n, size=(size, n))].mean(axis=1))
        remaining -= size
    return np.concatenate(means)


def _bootstrap_ci(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of the mean; (None, None) below two values."""
    n = len(values)
    if n < 2:
        return None, None
    # Sorting makes the CI depend on the multiset of scores only, not on the order samples finished in.
    data = np.sort(np.asarray(values, dtype=float))
    means = _resampled_means(data, np.random.default_rng(_BOOTSTRAP_SEED))
    alpha = (1.0 - _CI_LEVEL) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
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
        precision=_mean([s.precision for s in scored if s.precision is not None]),
    )


def summarize_cells(results: Iterable[SampleResult]) -> list[CellSummary]:
    """One summary per (subset, context_length, depth_percent) of needle samples, sorted by that key.

    Control samples have no depth and are summarised by `summarize_controls` instead.  Errored samples (accuracy
    None) count in `errors` only, budget-excluded ones in neither; a cell whose samples all errored has n=0 and
    accuracy None.  `judge_failures` counts every sample whose judge call failed (its score fell back to the rule).
    """
    groups: dict[tuple[str, int, float], list[SampleResult]] = defaultdict(list)
    for result in results:
        if result.depth_percent is not None:  # i.e. not a control
            groups[(result.subset, result.context_length, result.depth_percent)].append(result)
    return [_summarize_cell(key, groups[key]) for key in sorted(groups)]


def _summarize_controls(key: tuple[str, int], samples: Sequence[SampleResult]) -> ControlSummary:
    scored = [s for s in samples if s.accuracy is not None]
    return ControlSummary(
        subset=key[0],
        context_length=key[1],
        n=len(scored),
        abstention_rate=_mean([s.accuracy for s in scored if s.accuracy is not None]),
        guess_rate=_mean([float(s.guessed) for s in scored if s.guessed is not None]),
        errors=sum(s.errored for s in samples),
    )


def summarize_controls(results: Iterable[SampleResult]) -> list[ControlSummary]:
    """One summary per (subset, context_length) of the needle-absent control samples, sorted by that key."""
    groups: dict[tuple[str, int], list[SampleResult]] = defaultdict(list)
    for result in results:
        if result.control:
            groups[(result.subset, result.context_length)].append(result)
    return [_summarize_controls(key, groups[key]) for key in sorted(groups)]


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
    # Scores and agreement describe retrieval, so controls (an abstention score) stay out of them; the counts
    # describe the health of the whole run and include controls.
    scored = [s for s in samples if not s.errored and not s.control]
    # Sample-weighted (micro) means: equal to the n-weighted mean of the cell means.
    scores = [s.accuracy for s in scored if s.accuracy is not None]
    return SubsetSummary(
        subset=subset,
        n=len(scores),
        accuracy=_mean(scores),
        rule_recall=_mean([s.rule_recall for s in scored if s.rule_recall is not None]),
        levenshtein=_mean([s.levenshtein for s in scored if s.levenshtein is not None]),
        agreement=agreement(_judge_rule_pairs(s for s in samples if not s.control)),
        judge_failures=sum(s.judge_status == 'failed' for s in samples),
        errors=sum(s.errored for s in samples),
        budget_exhausted=sum(s.budget_exhausted for s in samples),
    )


def summarize_subsets(results: Iterable[SampleResult]) -> list[SubsetSummary]:
    """One summary per subset, sorted by subset name.

    Means (`n`, accuracy, rule recall, levenshtein) and the judge/rule agreement are over needle samples only;
    `judge_failures`, `errors` and `budget_exhausted` count every sample, controls included.
    """
    groups: dict[str, list[SampleResult]] = defaultdict(list)
    for result in results:
        groups[result.subset].append(result)
    return [_summarize_subset(subset, groups[subset]) for subset in sorted(groups)]


def overall_accuracy(results: Iterable[SampleResult]) -> float | None:
    """Mean final accuracy over all scored needle samples of all subsets (no controls); None when none was scored."""
    return _mean([r.accuracy for r in results if r.accuracy is not None and not r.control])


# --------------------------------------------------------------------------------------------------------------------
# Effective context length
# --------------------------------------------------------------------------------------------------------------------


def _check_effective_args(threshold: float, mode: str) -> None:
    # `not 0 < x <= 1` is also True for NaN.
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.0 < threshold <= 1.0:
        raise ValueError(f'threshold must be in (0, 1], got {threshold!r}')
    if mode not in EFFECTIVE_MODES:
        raise ValueError(f'mode must be one of {list(EFFECTIVE_MODES)}, got {mode!r}')


def _passes(means: np.ndarray, *, threshold: float, mode: str) -> np.ndarray:
    """Pass/fail per length; `means` is (..., lengths) with NaN where a length has no scored sample.

    Relative mode scales the threshold by the shortest length's mean; a shortest length scoring 0 (or nothing)
    gives no baseline, so then nothing passes rather than everything.
    """
    with np.errstate(invalid='ignore'):  # NaN compares False: a length without scores never passes
        if mode == 'absolute':
            return means >= threshold
        base = means[..., :1]
        return (base > 0.0) & (means >= threshold * base)


def _leading_lengths(passes: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Effective length per row of `passes`: the longest length with every length up to it passing, else 0."""
    count = np.cumprod(passes, axis=-1).sum(axis=-1)
    return np.where(count > 0, lengths[np.maximum(count - 1, 0)], 0)


def effective_context_length(
    results: Iterable[SampleResult],
    *,
    subset: str,
    threshold: float = DEFAULT_EFFECTIVE_THRESHOLD,
    mode: EffectiveMode = 'absolute',
) -> EffectiveLength:
    """Effective context length of one subset: the largest tested length L such that L and every shorter length pass.

    A length's score is the mean accuracy over every scored needle sample at that length (all depths and repeats
    pooled; controls, errored and budget-excluded samples left out).  `absolute` (RULER): a length passes if its
    mean >= threshold.  `relative` (NoLiMa): if its mean >= threshold * the shortest length's mean.  A length
    whose samples all failed to score never passes.  The CI resamples the samples within each length
    (`_BOOTSTRAP_RESAMPLES` times, fixed seed), recomputes the effective length each time and takes the
    2.5/97.5 percentiles as grid lengths; it is widened to contain the point estimate, as for cell CIs.
    Raises ValueError for a bad threshold (must be in (0, 1]) or mode, or when the subset has no needle samples.
    """
    _check_effective_args(threshold, mode)
    by_length: dict[int, list[float]] = defaultdict(list)
    for result in results:
        if result.subset == subset and not result.control:
            scores = by_length[result.context_length]  # created even when unscored: such a length must fail
            if result.accuracy is not None:
                scores.append(result.accuracy)
    if not by_length:
        raise ValueError(f'no needle samples for subset {subset!r}')
    lengths = sorted(by_length)
    means = [_mean(by_length[length]) for length in lengths]
    point_means = np.array([np.nan if m is None else m for m in means])
    passes = _passes(point_means, threshold=threshold, mode=mode)
    grid = np.asarray(lengths, dtype=np.int64)
    point = int(_leading_lengths(passes, grid))
    ci_low, ci_high = _effective_length_ci([by_length[length] for length in lengths], grid, threshold, mode)
    per_length = []
    for length, mean, passed in zip(lengths, means, passes, strict=True):
        scores = by_length[length]
        low, high = _bootstrap_ci(scores)
        per_length.append(
            LengthScore(
                context_length=length, n=len(scores), accuracy=mean, ci_low=low, ci_high=high, passes=bool(passed)
            )
        )
    return EffectiveLength(
        subset=subset,
        mode=mode,
        threshold=float(threshold),
        base_score=means[0] if mode == 'relative' else None,
        length=point or None,
        # Widen to the point estimate, as `_bootstrap_ci` does for means (0 stands for 'below the shortest').
        ci_low=min(ci_low, point) or None,
        ci_high=max(ci_high, point) or None,
        per_length=tuple(per_length),
    )


def _effective_length_ci(
    scores_by_length: Sequence[Sequence[float]], grid: np.ndarray, threshold: float, mode: str
) -> tuple[int, int]:
    """2.5/97.5 percentiles of the bootstrap distribution of the effective length (0 = below the shortest)."""
    rng = np.random.default_rng(_BOOTSTRAP_SEED)
    columns = [
        # Sorted: the CI depends on the multiset of scores per length, not on the order samples finished in.
        _resampled_means(np.sort(np.asarray(scores, dtype=float)), rng)
        if scores
        else np.full(_BOOTSTRAP_RESAMPLES, np.nan)
        for scores in scores_by_length
    ]
    effective = _leading_lengths(_passes(np.stack(columns, axis=1), threshold=threshold, mode=mode), grid)
    alpha = (1.0 - _CI_LEVEL) / 2.0
    # 'lower'/'higher' pick observed values, so both ends are lengths of the grid (or 0), never interpolations.
    low = int(np.quantile(effective, alpha, method='lower'))
    high = int(np.quantile(effective, 1.0 - alpha, method='higher'))
    return low, high


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
        precision=_parse_opt_float(row['precision']) if 'precision' in row else None,
    )


def read_cells_csv(path: str | os.PathLike[str]) -> list[CellSummary]:
    """Read a CSV written by `write_cells_csv`; the header must match exactly (or lack only `precision`)."""
    with open(path, encoding='utf-8', newline='') as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) not in (CELL_CSV_COLUMNS, _LEGACY_CELL_CSV_COLUMNS):
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
    threshold: float = DEFAULT_EFFECTIVE_THRESHOLD,
    mode: EffectiveMode = 'absolute',
) -> Path:
    """Write {'effective_context_length': {subset: ...}, 'controls': [...], 'subsets': [...]} as JSON (atomically).

    Effective lengths are computed for every subset that has needle samples; see `effective_context_length`.
    """
    _check_effective_args(threshold, mode)
    result_list = list(results)
    subsets = sorted({r.subset for r in result_list if not r.control})
    payload = {
        'effective_context_length': {
            subset: asdict(effective_context_length(result_list, subset=subset, threshold=threshold, mode=mode))
            for subset in subsets
        },
        'controls': [asdict(c) for c in summarize_controls(result_list)],
        'subsets': [asdict(s) for s in summarize_subsets(result_list)],
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


# --------------------------------------------------------------------------------------------------------------------
# OpenCompass NeedleBench / CDME summary CSV
# --------------------------------------------------------------------------------------------------------------------

# OpenCompass' summarizer writes `dataset,version,metric,mode,<model>...` with scores in 0-100 ('-' = no result);
# newer NeedleBench summarizers drop the three middle columns.  Its dataset names pack the cell into a string,
# 'Length{tokens}Depth{percent}_{task}_{lang}_{size}' (e.g. 'Length16000Depth21_origin_en_200k'; old CDME configs:
# 'CDME_Length1000Depth0').  It is a foreign format, so parsing the name is the only way to read it.
CDME_META_COLUMNS: tuple[str, ...] = ('dataset', 'version', 'metric', 'mode')
_CDME_DATASET = re.compile(r'(?P<prefix>.*?)Length(?P<length>\d+)Depth(?P<depth>\d+(?:\.\d+)?)(?:_(?P<rest>.*))?')
# The suite size OpenCompass appends ('4k', '128k', '1000k'); matched by value, so '1M' == '1000k' == '1000K'.
_DATASET_LENGTH = re.compile(r'(?P<value>\d+(?:\.\d+)?)(?P<unit>[kKmM])')
_CDME_MISSING = '-'
_CDME_METRIC = 'score'  # NeedleBench's evaluators report 'score'
_CDME_MODE = 'gen'
_CDME_DEFAULT_SUBSET = 'default'  # for names with nothing but length and depth


def _dataset_length_tokens(tag: str) -> int:
    match = _DATASET_LENGTH.fullmatch(tag.strip())
    if match is None:
        raise ValueError(f'dataset_length must look like 4k, 200K or 1M, got {tag!r}')
    scale = 1_000_000 if match['unit'] in 'mM' else 1000
    return round(float(match['value']) * scale)


def _dataset_length_tag(tokens: int) -> str:
    """Suite size tag for our own files: the round label of the longest length, always with a k/M suffix."""
    label = length_labels([tokens])[0]
    return label if label.endswith(('k', 'M')) else f'{tokens / 1000:g}k'


def write_cdme_summary_csv(path: str | os.PathLike[str], cells: Iterable[CellSummary], *, model: str) -> Path:
    """Write cells as an OpenCompass NeedleBench summary CSV with one model column (atomically).

    Header `dataset,version,metric,mode,<model>`; one row per subset x length x depth named
    'Length{L}Depth{D}_{subset}_{size}', size being the subset's longest length ('128k'); scores in 0-100 with two
    decimals, '-' where a cell has no score.  Depths keep their decimals ('Depth33.33'), unlike OpenCompass' own
    integer depths, so that distinct depths stay distinct; OpenCompass' script parses them as floats either way.
    """
    if not model:
        raise ValueError('model must be a non-empty column name')
    cell_list = sorted(cells, key=lambda c: (c.subset, c.context_length, c.depth_percent))
    longest: dict[str, int] = {}
    for cell in cell_list:
        longest[cell.subset] = max(longest.get(cell.subset, 0), cell.context_length)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator='\n')
    writer.writerow([*CDME_META_COLUMNS, model])
    seen: set[str] = set()
    for cell in cell_list:
        dataset = (
            f'Length{cell.context_length}Depth{format_depth(cell.depth_percent)}'
            f'_{cell.subset}_{_dataset_length_tag(longest[cell.subset])}'
        )
        if dataset in seen:  # two depths equal at two decimals, or concatenated cells
            raise ValueError(f'two cells map to the same OpenCompass dataset name {dataset!r}')
        seen.add(dataset)
        score = _CDME_MISSING if cell.accuracy is None else f'{100.0 * cell.accuracy:.2f}'
        writer.writerow([dataset, _CDME_MISSING, _CDME_METRIC, _CDME_MODE, score])
    return atomic_write_text(path, buffer.getvalue())


@dataclass(frozen=True)
class _CdmeRow:
    line: int
    subset: str
    context_length: int
    depth_percent: float
    size: str | None  # the dataset-length tag, when the name has one
    values: tuple[str, ...]  # one per model column


def _cdme_row(line: int, match: re.Match[str], values: Sequence[str]) -> _CdmeRow:
    parts = (match['rest'] or '').split('_')
    size = parts.pop() if parts and _DATASET_LENGTH.fullmatch(parts[-1]) else None
    subset = '_'.join(parts) or match['prefix'].strip('_') or _CDME_DEFAULT_SUBSET
    return _CdmeRow(
        line=line,
        subset=subset,
        context_length=int(match['length']),
        depth_percent=float(match['depth']),
        size=size,
        values=tuple(value.strip() for value in values),
    )


def _cdme_score(path: str | os.PathLike[str], row: _CdmeRow, text: str) -> float | None:
    if text in (_CDME_MISSING, ''):
        return None
    try:
        score = float(text)
    except ValueError:
        raise ValueError(f'{path}:{row.line}: score must be a number or "-", got {text!r}') from None
    if not 0.0 <= score <= 100.0:  # also rejects NaN
        raise ValueError(f'{path}:{row.line}: OpenCompass scores are percentages in [0, 100], got {text!r}')
    return score / 100.0


def read_summary_csv(  # long because two layouts (ours, OpenCompass') are told apart row by row
    path: str | os.PathLike[str], *, dataset_length: str | None = None
) -> dict[str, list[CellSummary]]:
    """Cells per model from our cells CSV (`CELLS_FILE`) or an OpenCompass NeedleBench/CDME summary CSV.

    Our cells CSV holds one model, named after its folder (reports/<model_id>/).  From an OpenCompass CSV every
    column after `dataset` (and `version,metric,mode` when present) is a model; rows whose dataset name is not a
    'Length{L}Depth{D}...' cell (group averages, separators, repeated headers) are skipped, as are '-' scores.
    Scores become 0-1; each cell gets n=1 (the CSV holds means, not samples) and no CI.  The subset is what the
    name holds between the depth and the size suffix ('origin_en' in 'Length1000Depth0_origin_en_4k').
    `dataset_length` ('200K', '128k', '1M'; matched by value) keeps only datasets of that size suffix.  ValueError
    for an unknown layout, a bad score, a size not present (listing those present), or two scores for one cell of
    a model (e.g. overlapping 128k and 200k suites: pick one with `dataset_length`).
    """
    wanted = None if dataset_length is None else _dataset_length_tokens(dataset_length)
    with open(path, encoding='utf-8-sig', newline='') as handle:  # -sig: spreadsheet exports often add a BOM
        rows = list(csv.reader(handle))
    header = tuple(name.strip() for name in rows[0]) if rows else ()
    if header in (CELL_CSV_COLUMNS, _LEGACY_CELL_CSV_COLUMNS):
        if dataset_length is not None:
            raise ValueError(
                f'{path}: dataset_length {dataset_length!r} not found; dataset lengths present: none '
                f'(a {CELLS_FILE} has no OpenCompass dataset lengths)'
            )
        return {Path(path).resolve().parent.name: read_cells_csv(path)}
    if not header or header[0] != CDME_META_COLUMNS[0]:
        raise ValueError(
            f'{path}: neither a {CELLS_FILE} nor an OpenCompass summary CSV (header {list(header)}, expected '
            f'{list(CELL_CSV_COLUMNS)} or dataset,version,metric,mode,<model>...)'
        )
    first_model = len(CDME_META_COLUMNS) if header[1 : len(CDME_META_COLUMNS)] == CDME_META_COLUMNS[1:] else 1
    models = header[first_model:]
    if not models or len(set(models)) != len(models) or '' in models:
        raise ValueError(f'{path}: expected distinct, named model columns after {list(header[:first_model])}')
    parsed: list[_CdmeRow] = []
    for line, row in enumerate(rows[1:], start=2):
        match = _CDME_DATASET.fullmatch(row[0].strip()) if row else None
        if match is None:
            continue
        if len(row) != len(header):
            raise ValueError(f'{path}:{line}: expected {len(header)} fields, got {len(row)}')
        parsed.append(_cdme_row(line, match, row[first_model:]))
    if not parsed:
        raise ValueError(f'{path}: no NeedleBench cell rows (dataset names like Length1000Depth50_origin_en_4k)')
    sizes = sorted({r.size for r in parsed if r.size is not None}, key=_dataset_length_tokens)
    present = ', '.join(sizes) or 'none'
    if wanted is not None:
        parsed = [r for r in parsed if r.size is not None and _dataset_length_tokens(r.size) == wanted]
        if not parsed:
            raise ValueError(f'{path}: dataset_length {dataset_length!r} not found; dataset lengths present: {present}')
    out: dict[str, list[CellSummary]] = {}
    for column, model in enumerate(models):
        cells: dict[tuple[str, int, float], CellSummary] = {}
        for row in parsed:
            score = _cdme_score(path, row, row.values[column])
            if score is None:
                continue
            key = (row.subset, row.context_length, row.depth_percent)
            if key in cells:
                raise ValueError(
                    f'{path}:{row.line}: model {model!r} has two scores for subset {row.subset!r} at '
                    f'context_length={row.context_length}, depth_percent={row.depth_percent:g}; dataset lengths '
                    f'present: {present} (pick one with dataset_length)'
                )
            cells[key] = CellSummary(
                subset=row.subset,
                context_length=row.context_length,
                depth_percent=row.depth_percent,
                n=1,
                accuracy=score,
                rule_recall=None,
                levenshtein=None,
                judge_failures=0,
                errors=0,
                ci_low=None,
                ci_high=None,
            )
        if cells:
            out[model] = [cells[key] for key in sorted(cells)]
    if not out:
        raise ValueError(f'{path}: no model has a score in any NeedleBench cell row')
    return out


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
