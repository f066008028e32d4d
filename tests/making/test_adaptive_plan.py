"""The adaptive sweep's plan (making/adaptive_plan.py): the same choices for a seed, coarse first, then settle or
bisect at the boundary; the budget never passed; a stop only when the effective length is pinned to one grid step."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from evalscope_niah.making.adaptive_plan import (
    AdaptiveSettings,
    PlanUnit,
    length_statuses,
    next_round,
    sweep_order,
)

LENGTHS = [1000 * (i + 1) for i in range(10)]
DEPTHS = [0.0, 25.0, 50.0, 75.0, 100.0]
SETTINGS = AdaptiveSettings(threshold=0.85, confidence=0.95, seed=0)


def _units(repeats: int = 3) -> list[PlanUnit]:
    return [
        PlanUnit((length, depth, repeat), length, depth)
        for length in LENGTHS
        for depth in DEPTHS
        for repeat in range(repeats)
    ]


def _sweep(
    units: list[PlanUnit], answer: Callable[[PlanUnit], float], settings: AdaptiveSettings = SETTINGS
) -> tuple[list[tuple], dict, str]:
    by_key = {unit.key: unit for unit in units}
    rounds: list[tuple] = []
    scores: dict = {}
    while True:
        planned = next_round(units, scores, settings)
        if not planned.keys:
            return rounds, scores, planned.stop
        assert not set(planned.keys) & set(scores), 'a sample was chosen twice'
        rounds.append(planned.keys)
        scores.update({key: answer(by_key[key]) for key in planned.keys})


def _step_model(limit: int) -> Callable[[PlanUnit], float]:
    return lambda unit: 1.0 if unit.context_length <= limit else 0.0


def test_a_seed_gives_the_same_rounds_and_another_seed_another_depth_order() -> None:
    units = _units()
    noisy = lambda seed: lambda unit: float(random.Random(f'{seed}{unit.key}').random() < 0.9)  # noqa: E731
    first = _sweep(units, noisy(1))
    assert _sweep(units, noisy(1)) == first
    other = AdaptiveSettings(threshold=0.85, confidence=0.95, seed=7)
    assert sweep_order(units, seed=0) != sweep_order(units, seed=7)
    assert _sweep(units, noisy(1), other)[0][0] != first[0][0]


def test_the_first_round_probes_the_shortest_and_the_middle_length_across_depths() -> None:
    planned = next_round(_units(), {}, SETTINGS)
    by_length: dict[int, set[float]] = {}
    for length, depth, _ in planned.keys:
        by_length.setdefault(length, set()).add(depth)
    assert sorted(by_length) == [LENGTHS[0], LENGTHS[4]]  # index round(0.5 x 9)
    # Half the depths per step, spread: the start, the middle and the end are not all left for later.
    assert all(len(depths) == 3 for depths in by_length.values())


def test_each_length_sends_every_depth_once_before_any_depth_twice() -> None:
    for units in sweep_order(_units(repeats=3), seed=3).values():
        first_pass = [unit.depth_percent for unit in units[: len(DEPTHS)]]
        assert sorted(first_pass) == DEPTHS


@pytest.mark.parametrize('limit', [0, 1000, 4000, 6000, 9000, 10_000])
def test_it_stops_pinned_on_the_true_boundary_of_a_clear_model(limit: int) -> None:
    units = _units()
    _, scores, stop = _sweep(units, _step_model(limit))
    assert stop == 'pinned'
    statuses = length_statuses(sweep_order(units, seed=0), scores, SETTINGS)
    passing = [length for length in LENGTHS if statuses[length] == 'pass']
    assert (max(passing) if passing else 0) == limit
    # The boundary is one grid step: the next length up was tested and failed (unless the longest passes).
    if limit < LENGTHS[-1]:
        assert statuses[LENGTHS[LENGTHS.index(limit) + 1] if limit else LENGTHS[0]] == 'fail'
    assert len(scores) < len(units)  # lengths between settled ones were never sent


def test_a_length_near_the_threshold_is_sent_whole_before_the_sweep_stops() -> None:
    units = _units()
    # 4000 scores 0.8: never shown above or below 0.85 at 95 %, so every sample of it is sent (as the grid would).
    answer = lambda unit: 1.0 if unit.context_length < 4000 else (0.8 if unit.context_length == 4000 else 0.0)  # noqa: E731
    _, scores, stop = _sweep(units, answer)
    assert stop == 'pinned'
    assert sum(key[0] == 4000 for key in scores) == len(DEPTHS) * 3


@pytest.mark.parametrize(('budget', 'field'), [(7, 'budget_prompts'), (9500, 'budget_tokens')])
def test_the_budget_is_never_passed(budget: int, field: str) -> None:
    units = _units()
    settings = AdaptiveSettings(threshold=0.85, confidence=0.95, **{field: budget})
    _, scores, stop = _sweep(units, _step_model(6000), settings)
    assert stop == 'budget'
    spent = len(scores) if field == 'budget_prompts' else sum(key[0] for key in scores)
    assert 0 < spent <= budget


def test_resuming_from_any_round_replays_the_same_choices() -> None:
    """Stateless: the scores of the first k rounds alone give round k + 1, as in the uninterrupted sweep."""
    units = _units()
    answer = lambda unit: float(random.Random(str(unit.key)).random() < (0.95 if unit.context_length < 5000 else 0.3))  # noqa: E731
    rounds, scores, _ = _sweep(units, answer)
    for k in range(len(rounds)):
        sent = {key: scores[key] for done in rounds[:k] for key in done}
        assert next_round(units, sent, SETTINGS).keys == rounds[k]


def test_relative_mode_sends_the_whole_shortest_length_first() -> None:
    units = _units()
    settings = AdaptiveSettings(threshold=0.85, mode='relative', confidence=0.95)
    rounds, _, stop = _sweep(units, _step_model(5000), settings)
    shortest = {unit.key for unit in units if unit.context_length == LENGTHS[0]}
    assert shortest <= set(rounds[0]) | set(rounds[1])
    assert stop == 'pinned'


def test_an_unscored_sample_counts_as_sent_without_a_score() -> None:
    units = _units()
    _, scores, stop = _sweep(units, lambda unit: None)  # every reply errored
    assert stop == 'pinned'  # the shortest length, all sent and never scored, fails: below the shortest
    assert {key[0] for key in scores} >= {LENGTHS[0]}
