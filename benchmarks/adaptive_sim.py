"""Simulated models for bench_adaptive: answers right with a probability that falls with length beyond a limit and
dips at middle depths, with a fixed per-cell offset (noise), drawn per sample. Their true effective length is known.

Kept apart from the script so the study (plan + estimator, no server) reads as the benchmark's one idea.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from evalscope_niah.making.adaptive_plan import AdaptiveSettings, PlanUnit, next_round
from evalscope_niah.reporting.records import SampleResult
from evalscope_niah.reporting.stats import effective_context_length


@dataclass(frozen=True)
class SimModel:
    """p(length, depth): ``top`` up to ``limit``, falling linearly to ``floor`` over ``fall`` tokens beyond it, times a
    middle-depth dip that deepens with length; ``offsets`` is the fixed noise of each (length, depth) cell."""

    limit: float
    fall: float
    top: float
    floor: float
    dip: float
    offsets: dict[tuple[int, float], float]
    max_length: int

    def p(self, length: int, depth: float) -> float:
        beyond = max(0.0, (length - self.limit) / self.fall)
        base = self.top - (self.top - self.floor) * min(1.0, beyond)
        dip = self.dip * (length / self.max_length) * math.exp(-(((depth - 50.0) / 20.0) ** 2))
        return min(1.0, max(0.0, base * (1.0 - dip) + self.offsets[(length, depth)]))


def make_models(count: int, lengths: Sequence[int], depths: Sequence[float], *, seed: int) -> list[SimModel]:
    """``count`` models whose limits are spread evenly from below the shortest length to past the longest."""
    rng = random.Random(seed)
    span = lengths[-1] - lengths[0]
    models = []
    for index in range(count):
        share = (index + rng.random()) / count  # one model per slice of the axis, placed at random within it
        models.append(
            SimModel(
                limit=lengths[0] - 0.15 * span + 1.3 * span * share,
                fall=span * rng.uniform(0.05, 0.5),
                top=rng.uniform(0.93, 1.0),
                floor=rng.uniform(0.0, 0.4),
                dip=rng.uniform(0.0, 0.25),
                offsets={(length, depth): rng.gauss(0.0, 0.03) for length in lengths for depth in depths},
                max_length=lengths[-1],
            )
        )
    return models


def true_effective_length(model: SimModel, lengths: Sequence[int], depths: Sequence[float], *, threshold: float):
    """The longest length up to which every length's mean probability over the depths reaches the threshold."""
    found = None
    for length in lengths:
        if math.fsum(model.p(length, depth) for depth in depths) / len(depths) < threshold:
            break
        found = length
    return found


def grid_units(lengths: Sequence[int], depths: Sequence[float], repeats: int) -> list[PlanUnit]:
    return [
        PlanUnit((length, depth, repeat), length, depth)
        for length in lengths
        for depth in depths
        for repeat in range(repeats)
    ]


def answer(model: SimModel, rng: random.Random) -> Callable[[PlanUnit], float]:
    return lambda unit: 1.0 if rng.random() < model.p(unit.context_length, unit.depth_percent) else 0.0


def estimate(scores: dict[Hashable, float | None], units: Sequence[PlanUnit], *, threshold: float) -> int | None:
    """The run's own estimator (stats.effective_context_length) over the samples that were sent."""
    by_key = {unit.key: unit for unit in units}
    results = [
        SampleResult(
            subset='sim',
            context_length=by_key[key].context_length,
            depth_percent=by_key[key].depth_percent,
            accuracy=score,
            rule_recall=score,
            levenshtein=None,
            judge_accuracy=None,
            judge_status='not_called',
        )
        for key, score in scores.items()
    ]
    return effective_context_length(results, subset='sim', threshold=threshold).length


def run_grid(units: Sequence[PlanUnit], ask: Callable[[PlanUnit], float]) -> dict[Hashable, float | None]:
    return {unit.key: ask(unit) for unit in units}


def run_adaptive(
    units: Sequence[PlanUnit], ask: Callable[[PlanUnit], float], settings: AdaptiveSettings
) -> tuple[dict[Hashable, float | None], int, str]:
    """Rounds of the plan until it stops: (scores, rounds, why it stopped)."""
    by_key = {unit.key: unit for unit in units}
    scores: dict[Hashable, float | None] = {}
    rounds = 0
    while True:
        planned = next_round(units, scores, settings)
        if not planned.keys:
            return scores, rounds, planned.stop or ''
        rounds += 1
        for key in planned.keys:
            scores[key] = ask(by_key[key])
