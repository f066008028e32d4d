"""Statistics over NIAH results: cell, control and subset summaries, bootstrap CIs, judge/rule agreement (Cohen's
kappa) and the effective context length.

Pure Python + numpy.  Inputs are `records.SampleResult` records; the file layer in `result_files.py` imports this module
to write summaries, never the other way round.  Pass marks and thresholds are arguments: their defaults belong to the
parameter model and the scoring rules, which the callers read.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..length_verdict import CI_LEVEL, mean_range, status_arrays, statuses
from ..vocabulary import EFFECTIVE_LENGTH_MODES, EffectiveLengthMode, LengthStatus
from .bootstrap import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, bootstrap_ci, resampled_means
from .length_status import EffectiveBound, unscored_reason
from .sample_record import GUESSED, SampleResult

__all__ = [
    'EFFECTIVE_MODES',
    'CellKey',
    'CellSummary',
    'ControlSummary',
    'EffectiveLength',
    'EffectiveMode',
    'JudgeRuleAgreement',
    'LengthScore',
    'RunSummary',
    'SubsetSummary',
    'agreement',
    'check_effective_args',
    'effective_context_length',
    'samples_by_cell',
    'summarize_cells',
    'summarize_controls',
    'summarize_subsets',
]

# Effective context length: RULER's absolute pass mark, or NoLiMa's share of the shortest length's score.
EffectiveMode = EffectiveLengthMode
EFFECTIVE_MODES = EFFECTIVE_LENGTH_MODES


def _mean(values: Sequence[float]) -> float | None:
    # fsum: means of many 0/1 scores should not drift with summation order.
    return math.fsum(values) / len(values) if values else None


@dataclass(frozen=True)
class CellSummary:
    """Aggregate of all samples sharing (subset, context_length, depth_percent); one row of the cells CSV.

    Each field's comment is its meaning on the docs' results-files page, which is generated from them."""

    subset: str  # the subset of the cell
    context_length: int  # the cell's length, in tokens of `tokenizer`
    depth_percent: float  # the cell's needle depth, 0 (start) to 100 (end)
    n: int  # the scored samples in the cell (errors, cut replies and replies with no final answer left out)
    accuracy: float | None  # mean final score of the scored samples; empty when none was scored
    rule_recall: float | None  # mean rule score of the samples that have one
    levenshtein: float | None  # mean similarity of answer to reference (a diagnostic)
    judge_failures: int  # samples whose judge call failed (scored by rule instead)
    errors: int  # samples left unscored by a server fault
    ci_low: float | None  # lower end of the 95% bootstrap interval of accuracy; empty below two scored samples
    ci_high: float | None  # upper end of that interval
    # Mean of each value the cell's task reports (``Task.reported_values``) over the samples that reported it; in
    # the CSV, one column per value, in name order, after `unknown`.
    task_values: Mapping[str, float] = field(default_factory=dict)
    # Replies that finished with no final answer (only reasoning, or only a tool call): not scored, not errors.
    no_answer: int = 0
    # The tokenizer that counted context_length (SampleResult.tokenizer); None in files from before it was recorded.
    tokenizer: str | None = None
    # Why a cell with samples has no score, so it is unknown rather than failed: '3 server errors' (length_status.py).
    unknown: str | None = None

    @classmethod
    def accuracy_only(
        cls, subset: str, context_length: int, depth_percent: float, *, n: int = 0, accuracy: float | None = None
    ) -> CellSummary:
        """A cell known only by its accuracy (a summary CSV's), or by none (a cell an adaptive sweep left out)."""
        return cls(subset, context_length, depth_percent, n, accuracy, None, None, 0, 0, None, None)


@dataclass(frozen=True)
class ControlSummary:
    """Needle-absent control samples of one (subset, context length): did the model abstain or make something up?

    `n` counts scored controls; `abstention_rate` is their mean score and `guess_rate` the share (of those that
    recorded it) whose reply stated the needle fact anyway.  Errored controls count in `errors` only.
    """

    # the subset of the control cell
    subset: str
    # the control cell's length, in tokens of the run's tokenizer
    context_length: int
    # the scored control samples (errored ones left out)
    n: int
    # mean score of the scored controls: the share that said the text does not hold the answer
    abstention_rate: float | None
    # the share (of those that recorded it) whose reply stated the needle fact anyway
    guess_rate: float | None
    # control samples left unscored by a server fault
    errors: int


@dataclass(frozen=True)
class LengthScore:
    """Mean accuracy at one context length (all depths and repeats pooled) and whether it passes the threshold.

    `status` is the three-way verdict (length_status.py): 'unknown' when its unscored samples (`unscored`, 'why'
    in `unknown`) could still tip it; `passes` is `status == 'pass'` (a summary from before `status` reads its
    `passes` as pass or fail)."""

    # the length, in tokens of the run's tokenizer
    context_length: int
    # the scored needle samples at this length (all depths and repeats)
    n: int
    # their mean score; None when none was scored
    accuracy: float | None
    # lower end of the 95% bootstrap interval of that mean
    ci_low: float | None
    # upper end of that interval
    ci_high: float | None
    # whether the length passes the threshold (the effective length ends before the first that does not)
    passes: bool
    # 'pass', 'fail' or 'unknown' (its unscored samples could still tip it: server errors, cut replies)
    status: LengthStatus
    # the samples at this length that have no score (server errors, cut replies, no final answer)
    unscored: int = 0
    # why the length is unknown ('3 server errors'); None when it is settled
    unknown: str | None = None


@dataclass(frozen=True)
class EffectiveLength:
    """The longest context length up to which every tested length passes, with a bootstrap CI over samples.

    `length` None means the shortest length already does not pass.  `base_score` is the shortest length's mean
    accuracy that `relative` mode scales the threshold by (None in `absolute` mode).  `ci_low`/`ci_high` are lengths
    of the tested grid, None where the interval reaches below the shortest length.  When the first length that does
    not pass is unknown rather than failed, `length` is a lower bound: `unknown_length` names that length and
    `unknown_reason` why ('3 server errors'); both None when the length is settled.
    """

    # the subset
    subset: str
    # 'absolute' (mean >= threshold, RULER) or 'relative' (>= threshold x the shortest length's mean, NoLiMa)
    mode: EffectiveMode
    # the pass mark the lengths were held to
    threshold: float
    # the shortest length's mean accuracy that 'relative' mode scales the threshold by; None in 'absolute'
    base_score: float | None
    # the effective context length: the longest length up to which every tested length passes; None when the
    # shortest already fails
    length: int | None
    # lower end of its 95% bootstrap interval, a length of the grid; None below the shortest length
    ci_low: int | None
    # upper end of that interval
    ci_high: int | None
    # each tested length, shortest first
    per_length: tuple[LengthScore, ...]
    # the first length that does not pass, when it is unknown rather than failed: `length` is then a lower bound
    unknown_length: int | None = None
    # why that length is unknown ('3 server errors'); None when the effective length is settled
    unknown_reason: str | None = None

    @property
    def at_least(self) -> int | None:
        """The lengths known to pass end here (the effective length itself when it is settled)."""
        return self.length

    @property
    def bound(self) -> EffectiveBound:
        """What reports state: the length, or the bound with the unknown length and why."""
        return EffectiveBound(self.length, self.unknown_length, self.unknown_reason)


@dataclass(frozen=True)
class JudgeRuleAgreement:
    """How often a run's judge and rule agree on pass or fail. `share_agree` and `kappa` are None when n == 0."""

    # the samples with both a judge verdict and a rule score
    n: int
    # the share of them where judge and rule agree on pass or fail; None when n is 0
    share_agree: float | None
    # Cohen's kappa of that agreement; None when n is 0
    kappa: float | None


@dataclass(frozen=True)
class SubsetSummary:
    # the subset
    subset: str
    # the scored needle samples of the subset
    n: int
    # their mean final score
    accuracy: float | None
    # mean rule score of the samples that have one
    rule_recall: float | None
    # mean similarity of answer to reference (a diagnostic)
    levenshtein: float | None
    # how often the judge and the rule agree
    agreement: JudgeRuleAgreement
    # samples whose judge call failed (scored by rule instead)
    judge_failures: int
    # samples left unscored by a server fault
    errors: int
    # replies cut by max_tokens or the window before any answer: not scored, not errors
    budget_exhausted: int
    # Replies with no final answer (records.SampleResult.no_answer); 0 in summaries written before it was counted.
    no_answer: int = 0


@dataclass(frozen=True)
class RunSummary:
    """What `write_summary_json` stores: effective length per subset, control summaries, subset summaries."""

    # per needle subset, its effective context length
    effective_context_length: dict[str, EffectiveLength]
    # per control cell (subset x length), how the model answered the needle-absent samples
    controls: tuple[ControlSummary, ...]
    # per subset, its samples summed up
    subsets: tuple[SubsetSummary, ...]


# --------------------------------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------------------------------


CellKey = tuple[str, int, float]  # (subset, context_length, depth_percent)


def samples_by_cell(results: Iterable[SampleResult]) -> dict[CellKey, list[SampleResult]]:
    """Needle samples grouped by (subset, context_length, depth_percent), keys sorted; controls are left out."""
    groups: dict[CellKey, list[SampleResult]] = defaultdict(list)
    for result in results:
        if result.depth_percent is not None:  # i.e. not a control
            groups[(result.subset, result.context_length, result.depth_percent)].append(result)
    return {key: groups[key] for key in sorted(groups)}


def _summarize_cell(key: tuple[str, int, float], samples: Sequence[SampleResult]) -> CellSummary:
    scored = [s for s in samples if not s.errored]
    scores = [s.accuracy for s in scored if s.accuracy is not None]
    ci_low, ci_high = bootstrap_ci(scores)
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
        task_values=_task_value_means(scored),
        no_answer=sum(s.no_answer_excluded for s in samples),
        tokenizer=next((s.tokenizer for s in samples if s.tokenizer), None),
        unknown=None if scores else unscored_reason(samples),
    )


def _task_value_means(samples: Sequence[SampleResult]) -> dict[str, float]:
    means: dict[str, float] = {}
    for name in sorted({name for sample in samples for name in sample.task_values}):
        values = [sample.task_values[name] for sample in samples if name in sample.task_values]
        means[name] = math.fsum(values) / len(values)
    return means


def summarize_cells(results: Iterable[SampleResult]) -> list[CellSummary]:
    """One summary per (subset, context_length, depth_percent) of needle samples, sorted by that key.

    Control samples have no depth and are summarised by `summarize_controls` instead.  Errored samples (accuracy
    None) count in `errors` only, budget-excluded ones in neither, replies with no final answer in `no_answer`; a
    cell whose samples all errored has n=0 and accuracy None.  `judge_failures` counts every sample whose judge
    call failed (its score fell back to the rule).
    """
    return [_summarize_cell(key, samples) for key, samples in samples_by_cell(results).items()]


def _summarize_controls(key: tuple[str, int], samples: Sequence[SampleResult]) -> ControlSummary:
    scored = [s for s in samples if s.accuracy is not None]
    return ControlSummary(
        subset=key[0],
        context_length=key[1],
        n=len(scored),
        abstention_rate=_mean([s.accuracy for s in scored if s.accuracy is not None]),
        guess_rate=_mean([s.task_values[GUESSED] for s in scored if GUESSED in s.task_values]),
        errors=sum(s.errored for s in samples),
    )


def summarize_controls(results: Iterable[SampleResult]) -> list[ControlSummary]:
    """One summary per (subset, context_length) of the needle-absent control samples, sorted by that key."""
    groups: dict[tuple[str, int], list[SampleResult]] = defaultdict(list)
    for result in results:
        if result.control:
            groups[(result.subset, result.context_length)].append(result)
    return [_summarize_controls(key, groups[key]) for key in sorted(groups)]


def agreement(pairs: Iterable[tuple[float, float]], *, threshold: float) -> JudgeRuleAgreement:
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
        return JudgeRuleAgreement(n=0, share_agree=None, kappa=None)
    return JudgeRuleAgreement(n=n, share_agree=agree / n, kappa=_cohen_kappa(n, agree, pass_a, pass_b))


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


def _summarize_subset(subset: str, samples: Sequence[SampleResult], pass_mark: float) -> SubsetSummary:
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
        agreement=agreement(_judge_rule_pairs(s for s in samples if not s.control), threshold=pass_mark),
        judge_failures=sum(s.judge_status == 'failed' for s in samples),
        errors=sum(s.errored for s in samples),
        budget_exhausted=sum(s.budget_exhausted for s in samples),
        no_answer=sum(s.no_answer_excluded for s in samples),
    )


def summarize_subsets(results: Iterable[SampleResult], *, pass_mark: float) -> list[SubsetSummary]:
    """One summary per subset, sorted by subset name.

    Means (`n`, accuracy, rule recall, levenshtein) and the judge/rule agreement are over needle samples only;
    `judge_failures`, `errors`, `budget_exhausted` and `no_answer` count every sample, controls included.
    `pass_mark`: the score at which a judge or rule score counts as a pass, for their agreement (the scoring rules
    own the default).
    """
    groups: dict[str, list[SampleResult]] = defaultdict(list)
    for result in results:
        groups[result.subset].append(result)
    return [_summarize_subset(subset, groups[subset], pass_mark) for subset in sorted(groups)]


# --------------------------------------------------------------------------------------------------------------------
# Effective context length
# --------------------------------------------------------------------------------------------------------------------


def check_effective_args(threshold: float, mode: str) -> None:
    """ValueError unless threshold is in (0, 1] and mode one of `EFFECTIVE_MODES`."""
    # `not 0 < x <= 1` is also True for NaN.
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.0 < threshold <= 1.0:
        raise ValueError(f'threshold must be in (0, 1], got {threshold!r}')
    if mode not in EFFECTIVE_MODES:
        raise ValueError(f'mode must be one of {list(EFFECTIVE_MODES)}, got {mode!r}')


def _leading_lengths(passes: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Effective length per row of `passes`: the longest length with every length up to it passing, else 0."""
    count = np.cumprod(passes, axis=-1).sum(axis=-1)
    return np.where(count > 0, lengths[np.maximum(count - 1, 0)], 0)


def effective_context_length(
    results: Iterable[SampleResult],
    *,
    subset: str,
    threshold: float,
    mode: EffectiveMode = 'absolute',
) -> EffectiveLength:
    """Effective context length of one subset: the largest tested length L such that L and every shorter length pass.

    A length's score is the mean accuracy over every scored needle sample at that length (all depths and repeats
    pooled; controls and unscored samples left out).  `absolute` (RULER): a length passes if its mean >= threshold.
    `relative` (NoLiMa): if its mean >= threshold * the shortest length's mean.  A length with unscored samples (server
    errors, cut replies, no final answer) is decided only if they could not tip it; else it is unknown, and when the
    first length that does not pass is unknown the result is a bound (`unknown_length`, `unknown_reason`), never a
    fail (length_status.py).  The CI resamples the scored samples within each length (`BOOTSTRAP_RESAMPLES` times,
    fixed seed), recomputes the effective length each time and takes the 2.5/97.5 percentiles as grid lengths; it is
    widened to contain the point estimate, as for cell CIs.
    Raises ValueError for a bad threshold (must be in (0, 1]) or mode, or when the subset has no needle samples.
    """
    check_effective_args(threshold, mode)
    by_length: dict[int, list[SampleResult]] = defaultdict(list)
    for result in results:
        if result.subset == subset and not result.control:
            by_length[result.context_length].append(result)
    if not by_length:
        raise ValueError(f'no needle samples for subset {subset!r}')
    lengths = sorted(by_length)
    scores = [[s.accuracy for s in by_length[length] if s.accuracy is not None] for length in lengths]
    unscored = np.array([len(by_length[length]) - len(scored) for length, scored in zip(lengths, scores, strict=True)])
    means = [_mean(scored) for scored in scores]
    point_means = np.array([np.nan if m is None else m for m in means])
    low, high = mean_range(point_means, [len(scored) for scored in scores], unscored, level=CI_LEVEL)
    passes, fails = status_arrays(low, high, threshold=threshold, mode=mode)
    grid = np.asarray(lengths, dtype=np.int64)
    point = int(_leading_lengths(passes, grid))
    ci_low, ci_high = _effective_length_ci(scores, unscored, grid, threshold, mode)
    words = statuses(passes, fails)
    reasons = [unscored_reason(by_length[length]) for length in lengths]
    per_length = tuple(
        LengthScore(length, len(scored), mean, *bootstrap_ci(scored), word == 'pass', word, int(missing), reason)
        for length, scored, mean, word, missing, reason in zip(
            lengths, scores, means, words, unscored, reasons, strict=True
        )
    )
    unknown = next((score for score in per_length if score.status != 'pass'), None)
    if unknown is not None and unknown.status != 'unknown':
        unknown = None
    return EffectiveLength(
        subset=subset,
        mode=mode,
        threshold=float(threshold),
        base_score=means[0] if mode == 'relative' else None,
        length=point or None,
        # Widen to the point estimate, as `bootstrap_ci` does for means (0 stands for 'below the shortest').
        ci_low=min(ci_low, point) or None,
        ci_high=max(ci_high, point) or None,
        per_length=per_length,
        unknown_length=None if unknown is None else unknown.context_length,
        unknown_reason=None if unknown is None else _unknown_reason(unknown, per_length[0]),
    )


def _unknown_reason(unknown: LengthScore, shortest: LengthScore) -> str:
    # A length unknown with every sample scored is one whose threshold scales by an unknown baseline (relative mode).
    if unknown.unknown:
        return unknown.unknown
    return f"its threshold scales by the shortest length's score, unknown: {shortest.unknown}"


def _effective_length_ci(
    scores_by_length: Sequence[Sequence[float]], unscored: np.ndarray, grid: np.ndarray, threshold: float, mode: str
) -> tuple[int, int]:
    """2.5/97.5 percentiles of the bootstrap distribution of the effective length (0 = below the shortest)."""
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    columns = [
        # Sorted: the CI depends on the multiset of scores per length, not on the order samples finished in.
        resampled_means(np.sort(np.asarray(scores, dtype=float)), rng)
        if scores
        else np.full(BOOTSTRAP_RESAMPLES, np.nan)
        for scores in scores_by_length
    ]
    means = np.stack(columns, axis=1)
    low, high = mean_range(means, [len(scores) for scores in scores_by_length], unscored, level=CI_LEVEL)
    passes, _ = status_arrays(low, high, threshold=threshold, mode=mode)
    effective = _leading_lengths(passes, grid)
    alpha = (1.0 - CI_LEVEL) / 2.0
    # 'lower'/'higher' pick observed values, so both ends are lengths of the grid (or 0), never interpolations.
    low = int(np.quantile(effective, alpha, method='lower'))
    high = int(np.quantile(effective, 1.0 - alpha, method='higher'))
    return low, high
