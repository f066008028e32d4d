"""Simulated models for bench_adaptive: the shapes real evaluations meet, picked at random per family, and the two
sweeps (full grid, adaptive) run on the same answers.

A model is p(length, depth), the chance of a right answer, built from parts a family switches on:

- falling: ``top`` up to a limit on the length axis, falling linearly to ``floor`` beyond it;
- dip: a dip at middle lengths that recovers at longer ones (a bump of ``dip_depth`` centred on ``dip_at``);
- lost in the middle: middle depths lose up to ``middle`` of it, more at longer lengths;
- noisy: a fixed offset per (length, depth) cell.

Each sample's answer is picked once (a model answering the same prompt the same way, as at temperature 0): the grid
reads all of them, the adaptive sweep those it sends. The question is whether the sweep names what the full grid
names, so both read the same answers and the same estimator (reporting/stats.effective_context_length).

Kept apart from the script so the study reads as the benchmark's one idea.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from evalscope_niah.making.adaptive_plan import AdaptiveSettings, PlanUnit, next_round
from evalscope_niah.reporting.sample_record import SampleResult
from evalscope_niah.reporting.stats import effective_context_length

FAMILIES = ('falling', 'dip_and_recover', 'lost_in_the_middle', 'noisy', 'all_combined')


@dataclass(frozen=True)
class SimModel:
    """p(length, depth) on a grid; positions on the length axis are shares of its span (0 shortest, 1 longest)."""

    family: str
    top: float
    limit: float  # where the fall starts (may lie outside [0, 1]: fails from the start, or never falls)
    fall: float  # share of the axis over which it falls to floor
    floor: float
    dip_at: float  # centre of the dip at middle lengths
    dip_width: float
    dip_depth: float  # 0: no dip
    middle: float  # what middle depths lose at the longest length (lost in the middle); 0: none
    middle_width: float  # in depth percent
    offsets: dict[tuple[int, float], float]  # the fixed noise of each cell
    axis: tuple[int, int]  # shortest and longest length

    def p(self, length: int, depth: float) -> float:
        low, high = self.axis
        x = (length - low) / (high - low) if high > low else 0.0
        base = self.top - (self.top - self.floor) * min(1.0, max(0.0, (x - self.limit) / self.fall))
        dip = self.dip_depth * math.exp(-(((x - self.dip_at) / self.dip_width) ** 2))
        middle = self.middle * x * math.exp(-(((depth - 50.0) / self.middle_width) ** 2))
        return min(1.0, max(0.0, base * (1.0 - middle) - dip + self.offsets.get((length, depth), 0.0)))


def make_models(
    family: str, count: int, lengths: Sequence[int], depths: Sequence[float], *, seed: int
) -> list[SimModel]:
    """``count`` random models of one family; limits and dips spread over the whole length axis."""
    rng = random.Random(f'{family}:{seed}')
    dips = family in ('dip_and_recover', 'all_combined')
    middles = family in ('lost_in_the_middle', 'all_combined')
    noise = rng.uniform if family in ('noisy', 'all_combined') else None
    models = []
    for index in range(count):
        share = (index + rng.random()) / count  # one model per slice of the axis, placed at random within it
        sd = noise(0.04, 0.12) if noise else 0.0
        models.append(
            SimModel(
                family=family,
                top=rng.uniform(0.9, 1.0),
                # Falling models cross the threshold anywhere (or nowhere); the others mostly fall late or never, so
                # what decides their effective length is the dip or the middle depths.
                limit=-0.15 + 1.3 * share if not (dips or middles) else rng.uniform(0.3, 1.5),
                fall=rng.uniform(0.05, 0.5),
                floor=rng.uniform(0.0, 0.5),
                dip_at=0.1 + 0.8 * share if dips else 0.5,
                dip_width=rng.uniform(0.03, 0.2),
                dip_depth=rng.uniform(0.03, 0.6) if dips else 0.0,
                middle=rng.uniform(0.1, 0.9) if middles else 0.0,
                middle_width=rng.uniform(8.0, 30.0),
                offsets={(length, depth): rng.gauss(0.0, sd) for length in lengths for depth in depths} if sd else {},
                axis=(lengths[0], lengths[-1]),
            )
        )
    return models


def grid_units(lengths: Sequence[int], depths: Sequence[float], repeats: int) -> list[PlanUnit]:
    return [
        PlanUnit((length, depth, repeat), length, depth)
        for length in lengths
        for depth in depths
        for repeat in range(repeats)
    ]


def answers(model: SimModel, units: Sequence[PlanUnit], *, seed: str) -> dict[Hashable, float]:
    """Every sample's answer, picked once: right (1) with the model's probability at its cell."""
    rng = random.Random(seed)
    return {unit.key: 1.0 if rng.random() < model.p(unit.context_length, unit.depth_percent) else 0.0 for unit in units}


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


def run_adaptive(
    units: Sequence[PlanUnit], ask: Callable[[Hashable], float | None], settings: AdaptiveSettings
) -> tuple[dict[Hashable, float | None], int, int, str]:
    """Rounds of the plan until it stops: (scores, sends, rounds, why it stopped). ``ask`` answers a sample's key,
    None for a sample that errored; such a sample may be sent again."""
    scores: dict[Hashable, float | None] = {}
    attempts: dict[Hashable, int] = {}
    rounds = 0
    while True:
        planned = next_round(units, scores, settings, attempts)
        if not planned.keys:
            return scores, sum(attempts.values()), rounds, planned.stop or ''
        rounds += 1
        for key in planned.keys:
            scores[key] = ask(key)
            attempts[key] = attempts.get(key, 0) + 1
