"""The adaptive sweep's plan: which grid samples to send next, from the scores of those sent so far.

Pure and stateless: ``next_round(units, scores, settings, attempts)`` reads only the scores of the samples it chose
before (key -> score, None for a sample that was sent and gave no score) and how often each was sent, so a run resumed
from its cache re-derives every earlier decision from the cached scores and picks what the uninterrupted run would
have. The only randomness, the order of depths within a length, comes from the seed.

The promise: a length it has not sent can never count as passed. The effective length (as ``reporting.stats``
computes it on the full grid) is the longest length up to which every length passes, and real models dip at middle
lengths and recover at longer ones, so nothing about one length is inferred from another. The sweep walks up the
lengths from the shortest: each is sent a few samples (the fewest that, all right, would settle it), then more while
it is undecided, until it is settled; the first length that settles as a fail pins the effective length to the length
below it, and nothing above that is ever sent (the grid's effective length does not depend on it).

A length is settled when the grid's verdict on it is already fixed whatever its unsent samples would score, or when
what its samples showed is too unlikely to come from a length the grid would judge the other way: the exact
hypergeometric chance of picking them from the length's samples in the grid, were just too few of those right to pass
(or just enough), is at most (1 - ``confidence``) / number of lengths (the effective length is wrong when any length
up to it is misjudged, so the confidence holds for the walk as a whole). A length whose answers are clear settles on
part of its samples; one near the threshold is sent until the grid could know no more.

Errors are not answers. A sample that was sent and errored (score None) does not count as a fail: it is asked again
in a later round, up to ``ERROR_ATTEMPTS`` sends in all, while its length is undecided. A length that no sample left
to send could settle, because errored samples might still tip it, is unknown: the sweep stops there with ``errors``
and the effective length is at least the length below it. A length with errored samples is settled only where the
report of the samples sent (``length_verdict``, errored ones unscored) settles it the same way, so the sweep never
walks on past a length its report will call unknown, nor stops at one its report will settle.
"""

from __future__ import annotations

import functools
import math
import random
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..length_verdict import length_word
from ..vocabulary import LengthStatus

__all__ = [
    'ERROR_ATTEMPTS',
    'AdaptiveSettings',
    'PlanUnit',
    'Round',
    'StopReason',
    'length_statuses',
    'next_round',
    'sweep_order',
]

StopReason = Literal['pinned', 'budget', 'exhausted', 'errors']
# A length's verdict as the grid's (vocabulary.LengthStatus), or not yet: never sent, or sent and not settled.
Status = Literal['untested', 'open'] | LengthStatus

# How many times one sample may be sent within a run before its error stands (each send is itself a request with the
# model client's own retries): a burst of server faults is ridden out, an outage at one length ends the sweep.
ERROR_ATTEMPTS = 3


@dataclass(frozen=True)
class PlanUnit:
    """One sample of the full grid: its key (how the run names it), length and depth (in grid order)."""

    key: Hashable
    context_length: int
    depth_percent: float


@dataclass(frozen=True)
class AdaptiveSettings:
    threshold: float
    mode: Literal['absolute', 'relative'] = 'absolute'
    confidence: float = 0.9
    budget_prompts: int | None = None
    budget_tokens: int | None = None
    seed: int = 0


@dataclass(frozen=True)
class Round:
    """The samples to send next (empty when the sweep stops) and, when it stops, why."""

    keys: tuple[Hashable, ...]
    stop: StopReason | None = None


Scores = Mapping[Hashable, 'float | None']
Attempts = Mapping[Hashable, int]


def sweep_order(units: Sequence[PlanUnit], *, seed: int) -> dict[int, list[PlanUnit]]:
    """Per length (ascending), its units in the order the sweep sends them: one sample of every depth before a
    second of any, the depths spread over the document (a van der Corput order turned by the seed), so the first
    few samples of a length already see its start, middle and end."""
    by_length: dict[int, dict[float, list[PlanUnit]]] = defaultdict(lambda: defaultdict(list))
    for unit in units:
        by_length[unit.context_length][unit.depth_percent].append(unit)
    ordered: dict[int, list[PlanUnit]] = {}
    for length in sorted(by_length):
        depths = sorted(by_length[length])
        turn = random.Random(f'{seed}:{length}').random()
        depth_order = sorted(range(len(depths)), key=lambda i: ((_van_der_corput(i) + turn) % 1.0, i))
        columns = [by_length[length][depths[i]] for i in depth_order]
        ordered[length] = [
            column[row] for row in range(max(map(len, columns))) for column in columns if row < len(column)
        ]
    return ordered


def _van_der_corput(index: int) -> float:
    value, denominator = 0.0, 1.0
    while index:
        denominator *= 2
        index, bit = divmod(index, 2)
        value += bit / denominator
    return value


@dataclass(frozen=True)
class _Tally:
    """One length's samples as the plan sees them: the scores it has, and what might still change its mean."""

    population: int  # the length's samples in the full grid
    total: float  # sum of the scores received
    scored: int  # samples with a score
    pending: tuple[PlanUnit, ...]  # may still be sent: never sent, or errored with attempts left (these first)
    errored: int  # errored with no attempt left: their score stays unknown
    sent: bool  # any of its samples was sent
    retrying: int = 0  # errored with attempts left (among ``pending``): no score yet

    @property
    def open_count(self) -> int:
        return len(self.pending) + self.errored


def _tally(units: Sequence[PlanUnit], scores: Scores, attempts: Attempts) -> _Tally:
    total, scored, errored = 0.0, 0, 0
    retry, unsent = [], []
    for unit in units:
        if unit.key not in scores:
            unsent.append(unit)
        elif (score := scores[unit.key]) is not None:
            total, scored = total + score, scored + 1
        elif attempts.get(unit.key, 1) < ERROR_ATTEMPTS:
            retry.append(unit)
        else:
            errored += 1
    return _Tally(len(units), total, scored, (*retry, *unsent), errored, len(unsent) < len(units), len(retry))


@functools.lru_cache(maxsize=65_536)
def _tail(population: int, right: int, sent: int, seen: int, *, upper: bool) -> float:
    """P(at least ``seen`` right among ``sent`` samples picked from ``population`` holding ``right`` right ones), or at
    most ``seen`` when not ``upper``: the hypergeometric tail (in logarithms: a length of many samples stays cheap)."""
    low, high = max(0, sent - (population - right)), min(sent, right)
    hits = range(max(low, seen), high + 1) if upper else range(low, min(high, seen) + 1)
    whole = _log_comb(population, sent)
    return math.fsum(math.exp(_log_comb(right, k) + _log_comb(population - right, sent - k) - whole) for k in hits)


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def _status(tally: _Tally, threshold: float, alpha: float) -> Status:
    if not tally.sent:
        return 'untested'
    # Fixed whatever the samples not yet scored would score: the grid's verdict is already known.
    rest = tally.open_count
    if tally.scored + rest and tally.total / (tally.scored + rest) >= threshold:
        return 'pass'
    if tally.scored + rest and (tally.total + rest) / (tally.scored + rest) < threshold:
        return 'fail'
    verdict = _sampled_verdict(tally, threshold, alpha)
    unscored = tally.errored + tally.retrying
    if unscored and math.isfinite(threshold):
        # Errored samples are rows of the report, which settles the length only if they could not tip it: a verdict
        # the report would call unknown is no verdict yet (more samples may still settle it for both).
        reported = length_word(tally.total, tally.scored, unscored, threshold=threshold)
        if verdict is not None and verdict != reported:
            verdict = None
        if verdict is None and not tally.pending:
            return reported  # nothing left to send: what the report will say
    if verdict is not None:
        return verdict
    # Undecided: more samples may settle it; with none left, only its errors keep it open.
    return 'open' if tally.pending else 'unknown'


def _sampled_verdict(tally: _Tally, threshold: float, alpha: float) -> LengthStatus | None:
    """'pass' or 'fail' when the samples scored so far are too unlikely to come from a length the grid judges the
    other way; None when they may."""
    if not (tally.scored and math.isfinite(threshold)):
        return None
    # The grid passes the length when at least ``needed`` of its samples are right. Could what was seen come from a
    # length the grid fails (needed - 1 right at most), or from one it passes (needed at least)? Exact for right/wrong
    # scores; partial ones (a multi-needle share) count by their sum, rounded against the verdict.
    needed = math.ceil(round(threshold * tally.population, 9))
    seen_low, seen_high = math.floor(tally.total + 1e-9), math.ceil(tally.total - 1e-9)
    if needed > 0 and _tail(tally.population, needed - 1, tally.scored, seen_high, upper=True) <= alpha:
        return 'pass'
    if needed <= tally.population and _tail(tally.population, needed, tally.scored, seen_low, upper=False) <= alpha:
        return 'fail'
    return None


def length_statuses(
    order: Mapping[int, Sequence[PlanUnit]],
    scores: Scores,
    settings: AdaptiveSettings,
    attempts: Attempts | None = None,
) -> dict[int, Status]:
    """Per length: untested, open (undecided, samples left to send), pass or fail (settled), or unknown (undecided,
    and only errored samples, with no attempt left, could decide it)."""
    attempts = attempts or {}
    threshold = _threshold(order, scores, settings)
    alpha = _alpha(settings, len(order))
    return {
        length: _status(_tally(units, scores, attempts), threshold if threshold is not None else math.inf, alpha)
        for length, units in order.items()
    }


def _alpha(settings: AdaptiveSettings, lengths: int) -> float:
    """The chance of misjudging one length that the plan accepts: the effective length is wrong when any length up to
    it is misjudged, so ``confidence`` holds for the walk as a whole (Bonferroni)."""
    return (1.0 - settings.confidence) / max(1, lengths)


def _threshold(order: Mapping[int, Sequence[PlanUnit]], scores: Scores, settings: AdaptiveSettings) -> float | None:
    """The mark a length's mean must reach; None in relative mode while the shortest length has no score."""
    if settings.mode == 'absolute':
        return settings.threshold
    values = [scores[unit.key] for unit in order[min(order)] if scores.get(unit.key) is not None]
    if not values:
        return None
    base = math.fsum(values) / len(values)
    # A shortest length scoring 0 gives no baseline: nothing passes, as the grid's rule has it (length_status.py).
    return settings.threshold * base if base > 0 else math.inf


def next_round(
    units: Sequence[PlanUnit], scores: Scores, settings: AdaptiveSettings, attempts: Attempts | None = None
) -> Round:
    """The next samples to send, given the scores of every sample sent so far (keys absent: not sent; None: sent and
    errored) and how many times each was sent (absent: once)."""
    order = sweep_order(units, seed=settings.seed)
    if not order:
        return Round((), 'exhausted')
    attempts = attempts or {}
    wanted = _wanted(order, scores, settings, attempts)
    if isinstance(wanted, str):
        return Round((), wanted)
    return _within_budget(wanted, units, scores, settings, attempts)


def _wanted(
    order: Mapping[int, Sequence[PlanUnit]], scores: Scores, settings: AdaptiveSettings, attempts: Attempts
) -> list[PlanUnit] | StopReason:
    """The units wanted next (before the budget), or why the sweep stops."""
    lengths = sorted(order)
    shortest = _tally(order[lengths[0]], scores, attempts)
    if settings.mode == 'relative' and shortest.pending:
        return list(shortest.pending)  # the baseline every threshold scales by: all of it, first
    threshold = _threshold(order, scores, settings)
    if threshold is None:  # relative, and the whole shortest length errored: no baseline to judge by
        return 'errors'
    alpha = _alpha(settings, len(lengths))
    for length in lengths:  # the walk: the first length not settled as a pass is where the sweep works
        tally = _tally(order[length], scores, attempts)
        status = _status(tally, threshold, alpha)
        if status == 'pass':
            continue
        if status == 'fail':
            return 'pinned'
        if status == 'unknown':
            return 'errors'
        return list(tally.pending[: _settling_step(tally, threshold, alpha)])
    return 'pinned'  # every length passes


def _settling_step(tally: _Tally, threshold: float, alpha: float) -> int:
    """Samples to send to an undecided length: a length not yet sent gets the fewest that, all right, would settle it
    as a pass (most lengths below a model's limit then settle in one round); a length already sent the fewest that
    could settle it either way, all right or all wrong."""

    def settles(extra: int, right: bool) -> bool:
        more = _Tally(
            tally.population,
            tally.total + (extra if right else 0),
            tally.scored + extra,
            tally.pending[extra:],
            tally.errored,
            True,
            max(0, tally.retrying - extra),  # the samples to retry are sent first (pending lists them first)
        )
        return _status(more, threshold, alpha) == ('pass' if right else 'fail')

    steps = [_fewest(len(tally.pending), lambda extra: settles(extra, True))]
    if tally.scored:
        steps.append(_fewest(len(tally.pending), lambda extra: settles(extra, False)))
    return min(steps)


def _fewest(most: int, enough: Callable[[int], bool]) -> int:
    """The fewest extra samples, 1 to ``most``, for which ``enough`` holds (it holds for every count above one that
    it holds for: more of the same answers only strengthen a verdict), else ``most``: a bisection."""
    low, high = 1, most
    while low < high:
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle + 1
    return low


def _within_budget(
    wanted: Sequence[PlanUnit],
    units: Sequence[PlanUnit],
    scores: Scores,
    settings: AdaptiveSettings,
    attempts: Attempts,
) -> Round:
    """The wanted units that fit what is left of the budget, in order; a stop when none fits. Every send counts,
    a sample asked again after an error too."""
    sends = {unit.key: attempts.get(unit.key, 1) for unit in units if unit.key in scores}
    lengths = {unit.key: unit.context_length for unit in units}
    prompts_left = math.inf if settings.budget_prompts is None else settings.budget_prompts - sum(sends.values())
    tokens_left = (
        math.inf
        if settings.budget_tokens is None
        else settings.budget_tokens - sum(lengths[key] * count for key, count in sends.items())
    )
    keys = []
    for unit in wanted:
        if prompts_left < 1 or unit.context_length > tokens_left:
            break
        keys.append(unit.key)
        prompts_left -= 1
        tokens_left -= unit.context_length
    return Round(tuple(keys), None if keys else 'budget')
