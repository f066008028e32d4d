"""The adaptive sweep's plan: which grid samples to send next, from the scores of those sent so far.

Pure and stateless: ``next_round(units, scores, settings)`` reads only the scores of the samples it chose before
(key -> score, None for a sample that gave no score), so a run resumed from its cache re-derives every earlier
decision from the cached scores and picks what the uninterrupted run would have. The only randomness, the order of
depths within a length, comes from the seed.

The search (the effective length is the longest length up to which every tested length passes, as ``stats`` computes
it): a coarse round probes the shortest length and the middle one; then, round by round, the lowest tested length that
is not yet a settled pass gets more samples while it is undecided (the fewest that could settle it, at most half its
depths), and once it settles as a fail the untested gap below it is bisected. A length is settled when a one-sided
Wilson bound at ``confidence`` puts its mean on one side of the threshold, or when every sample of it was sent (the full
grid could not know more). The sweep stops when the effective length is pinned to one step of the grid (the lengths on
both sides of it settled), or when the next round would pass the budget. It assumes what the effective length itself
assumes: a model that fails at one length does not recover at a longer one; a failing length between two tested ones
that pass goes unseen.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

__all__ = ['AdaptiveSettings', 'PlanUnit', 'Round', 'StopReason', 'length_statuses', 'next_round', 'sweep_order']

StopReason = Literal['pinned', 'budget', 'exhausted']
Status = Literal['untested', 'open', 'pass', 'fail']


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


# Lengths the coarse round probes besides the shortest (shares of the axis' index range). The middle alone: on the
# 100 simulated models of benchmarks/bench_adaptive.py, probing thirds or the longest length too spent more tokens
# and named the true effective length less often (the longest length is the dearest probe of all).
_COARSE_SHARES = (0.5,)


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


def _wilson(mean: float, n: int, z: float) -> tuple[float, float]:
    centre = (mean + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(mean * (1 - mean) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def length_statuses(
    order: Mapping[int, Sequence[PlanUnit]], scores: Mapping[Hashable, float | None], settings: AdaptiveSettings
) -> dict[int, Status]:
    """Per length: untested, open (undecided, samples left), pass or fail (settled)."""
    z = NormalDist().inv_cdf(settings.confidence)
    means = {length: _scored(units, scores) for length, units in order.items()}
    threshold = _threshold(order, scores, settings)
    statuses: dict[int, Status] = {}
    for length, units in order.items():
        tested = sum(unit.key in scores for unit in units)
        exhausted = tested == len(units)
        if not tested:
            statuses[length] = 'untested'
        elif means[length] is None:  # only samples without a score so far: they never pass
            statuses[length] = 'fail' if exhausted else 'open'
        else:
            mean, n = means[length]
            low, high = _wilson(mean, n, z)
            if low >= threshold or (exhausted and mean >= threshold):
                statuses[length] = 'pass'
            elif high < threshold or exhausted:
                statuses[length] = 'fail'
            else:
                statuses[length] = 'open'
    return statuses


def _threshold(
    order: Mapping[int, Sequence[PlanUnit]], scores: Mapping[Hashable, float | None], settings: AdaptiveSettings
) -> float:
    if settings.mode == 'absolute':
        return settings.threshold
    base = _scored(order[min(order)], scores)
    # A shortest length scoring 0 (or nothing) gives no baseline: nothing passes, as in stats._passes.
    return settings.threshold * base[0] if base and base[0] > 0 else math.inf


def _settling_step(
    units: Sequence[PlanUnit],
    scores: Mapping[Hashable, float | None],
    threshold: float,
    settings: AdaptiveSettings,
    step: int,
) -> int:
    """Samples to add to an open length: the fewest that could settle it (all right, or all wrong), at most
    ``step``; a length two samples short of a decision is not sent a whole step."""
    scored = _scored(units, scores)
    if scored is None:
        return step
    total, n = scored[0] * scored[1], scored[1]
    z = NormalDist().inv_cdf(settings.confidence)
    for extra in range(1, step):
        if _wilson((total + extra) / (n + extra), n + extra, z)[0] >= threshold:
            return extra
        if _wilson(total / (n + extra), n + extra, z)[1] < threshold:
            return extra
    return step


def _scored(units: Sequence[PlanUnit], scores: Mapping[Hashable, float | None]) -> tuple[float, int] | None:
    values = [scores[unit.key] for unit in units if scores.get(unit.key) is not None]
    return (math.fsum(values) / len(values), len(values)) if values else None


def next_round(units: Sequence[PlanUnit], scores: Mapping[Hashable, float | None], settings: AdaptiveSettings) -> Round:
    """The next samples to send, given the scores of every sample sent so far (keys absent: not sent)."""
    order = sweep_order(units, seed=settings.seed)
    if not order:
        return Round((), 'exhausted')
    step = _step(units)
    wanted = _wanted(order, scores, settings, step)
    if wanted is None:
        return Round((), 'pinned')
    if not wanted:
        return Round((), 'exhausted')
    return _within_budget(wanted, units, scores, settings)


def _step(units: Sequence[PlanUnit]) -> int:
    # Half a length's depths per step (at least 3): two steps see every depth once.
    depths = len({unit.depth_percent for unit in units})
    return max(3, math.ceil(depths / 2))


def _wanted(
    order: Mapping[int, Sequence[PlanUnit]],
    scores: Mapping[Hashable, float | None],
    settings: AdaptiveSettings,
    step: int,
) -> list[PlanUnit] | None:
    """The units wanted next (before the budget), [] when nothing is left to send, None when the length is pinned."""
    lengths = sorted(order)
    if not any(unit.key in scores for units in order.values() for unit in units):
        return [unit for index in _coarse(len(lengths)) for unit in order[lengths[index]][:step]]
    first = lengths[0]
    if settings.mode == 'relative' and not all(unit.key in scores for unit in order[first]):
        return _untested(order[first], scores)  # the baseline every threshold scales by: all of it, first
    statuses = length_statuses(order, scores, settings)
    tested = [index for index, length in enumerate(lengths) if statuses[length] != 'untested']
    blocking = next((index for index in tested if statuses[lengths[index]] != 'pass'), None)
    if blocking is None:  # every tested length passes: look above the longest tested
        top = tested[-1]
        if top == len(lengths) - 1:
            return None
        return _untested(order[lengths[(top + len(lengths)) // 2]], scores)[:step]
    if statuses[lengths[blocking]] == 'open':
        units = order[lengths[blocking]]
        return _untested(units, scores)[
            : _settling_step(units, scores, _threshold(order, scores, settings), settings, step)
        ]
    below = max((index for index in tested if index < blocking), default=-1)
    if blocking == below + 1:
        return None
    return _untested(order[lengths[(below + blocking + 1) // 2]], scores)[:step]


def _coarse(count: int) -> list[int]:
    return sorted({0, *(round(share * (count - 1)) for share in _COARSE_SHARES)})


def _untested(units: Sequence[PlanUnit], scores: Mapping[Hashable, float | None]) -> list[PlanUnit]:
    return [unit for unit in units if unit.key not in scores]


def _within_budget(
    wanted: Sequence[PlanUnit],
    units: Sequence[PlanUnit],
    scores: Mapping[Hashable, float | None],
    settings: AdaptiveSettings,
) -> Round:
    """The wanted units that fit what is left of the budget, in order; a stop when none fits."""
    sent = [unit for unit in units if unit.key in scores]
    prompts_left = math.inf if settings.budget_prompts is None else settings.budget_prompts - len(sent)
    tokens_left = (
        math.inf if settings.budget_tokens is None else settings.budget_tokens - sum(u.context_length for u in sent)
    )
    keys = []
    for unit in wanted:
        if prompts_left < 1 or unit.context_length > tokens_left:
            break
        keys.append(unit.key)
        prompts_left -= 1
        tokens_left -= unit.context_length
    return Round(tuple(keys), None if keys else 'budget')
