"""The adaptive sweep's plan (making/adaptive_plan.py): a length it has not sent never counts as passed, so it names
what the full grid names on curves that dip and recover or lose the middle depths; errors are asked again and, when
they cannot be ridden out, stop the sweep as unknown (never a fail); the budget is never passed; the same choices for
a seed and on resume."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from evalscope_niah.length_verdict import length_word
from evalscope_niah.making import adaptive_plan
from evalscope_niah.making.adaptive_plan import (
    ERROR_ATTEMPTS,
    AdaptiveSettings,
    PlanUnit,
    length_statuses,
    next_round,
    sweep_order,
)
from evalscope_niah.reporting.sample_record import SampleResult
from evalscope_niah.reporting.stats import effective_context_length

LENGTHS = [1000 * (i + 1) for i in range(10)]
DEPTHS = [0.0, 25.0, 50.0, 75.0, 100.0]
SETTINGS = AdaptiveSettings(threshold=0.85, confidence=0.95, seed=0)

Answer = Callable[[PlanUnit], 'float | None']


def _units(repeats: int = 3, depths: list[float] = DEPTHS) -> list[PlanUnit]:
    return [
        PlanUnit((length, depth, repeat), length, depth)
        for length in LENGTHS
        for depth in depths
        for repeat in range(repeats)
    ]


def _sweep(
    units: list[PlanUnit], answer: Answer, settings: AdaptiveSettings = SETTINGS
) -> tuple[list[tuple], dict, str, dict]:
    """Rounds until the plan stops: (rounds, last score per sample, why it stopped, sends per sample)."""
    by_key = {unit.key: unit for unit in units}
    rounds: list[tuple] = []
    scores: dict = {}
    attempts: dict = {}
    while True:
        planned = next_round(units, scores, settings, attempts)
        if not planned.keys:
            return rounds, scores, planned.stop, attempts
        assert not [key for key in planned.keys if scores.get(key) is not None], 'a scored sample was sent again'
        rounds.append(planned.keys)
        for key in planned.keys:
            scores[key] = answer(by_key[key])
            attempts[key] = attempts.get(key, 0) + 1


def _grid_effective_length(units: list[PlanUnit], answer: Answer, scores: dict | None = None) -> int | None:
    """What reporting.stats names from the samples in ``scores`` (all of the grid when None)."""
    by_key = {unit.key: unit for unit in units}
    keys = by_key if scores is None else scores
    results = [
        SampleResult(
            subset='s',
            context_length=by_key[key].context_length,
            depth_percent=by_key[key].depth_percent,
            accuracy=answer(by_key[key]) if scores is None else scores[key],
            rule_recall=None,
            levenshtein=None,
            judge_accuracy=None,
            judge_status='not_called',
        )
        for key in keys
    ]
    return effective_context_length(results, subset='s', threshold=SETTINGS.threshold).length


def _step_model(limit: int) -> Answer:
    return lambda unit: 1.0 if unit.context_length <= limit else 0.0


def test_a_seed_gives_the_same_rounds_and_another_seed_another_depth_order() -> None:
    units = _units()
    noisy = lambda seed: lambda unit: float(random.Random(f'{seed}{unit.key}').random() < 0.9)  # noqa: E731
    first = _sweep(units, noisy(1))
    assert _sweep(units, noisy(1)) == first
    other = AdaptiveSettings(threshold=0.85, confidence=0.95, seed=7)
    assert sweep_order(units, seed=0) != sweep_order(units, seed=7)
    assert _sweep(units, noisy(1), other)[0][0] != first[0][0]


def test_the_first_round_sends_the_shortest_length_across_its_depths_and_no_other() -> None:
    units = _units()
    planned = next_round(units, {}, SETTINGS)
    assert {key[0] for key in planned.keys} == {LENGTHS[0]}
    assert {key[1] for key in planned.keys} == set(DEPTHS)  # the start, the middle and the end all seen
    # The fewest that, all right, settle the length as a pass: one more than that is never needed for a clear one.
    scores = dict.fromkeys(planned.keys, 1.0)
    assert length_statuses(sweep_order(units, seed=0), scores, SETTINGS)[LENGTHS[0]] == 'pass'
    fewer = dict.fromkeys(planned.keys[:-1], 1.0)
    assert length_statuses(sweep_order(units, seed=0), fewer, SETTINGS)[LENGTHS[0]] == 'open'


def test_each_length_sends_every_depth_once_before_any_depth_twice() -> None:
    for units in sweep_order(_units(repeats=3), seed=3).values():
        first_pass = [unit.depth_percent for unit in units[: len(DEPTHS)]]
        assert sorted(first_pass) == DEPTHS


@pytest.mark.parametrize('limit', [0, 1000, 4000, 6000, 9000, 10_000])
def test_it_stops_pinned_on_the_true_boundary_of_a_clear_model(limit: int) -> None:
    units = _units()
    _, scores, stop, _ = _sweep(units, _step_model(limit))
    assert stop == 'pinned'
    statuses = length_statuses(sweep_order(units, seed=0), scores, SETTINGS)
    assert [length for length in LENGTHS if statuses[length] == 'pass'] == [n for n in LENGTHS if n <= limit]
    if limit < LENGTHS[-1]:  # the length above it was sent and failed, and nothing above that was sent
        above = limit + 1000
        assert statuses[above] == 'fail'
        assert max(key[0] for key in scores) == above
    per_length = len(DEPTHS) * 3
    assert all(sum(key[0] == length for key in scores) < per_length for length in LENGTHS)  # clear: not all sent


def test_a_dip_at_middle_lengths_that_recovers_is_found_where_the_old_rule_named_the_longest_length() -> None:
    """Fails at 3000-4000 and right everywhere else: the old plan probed 1000 and 5000, saw both pass, took every
    length below 5000 as passed unsent and named 10000. A length not sent never counts as passed: 2000."""
    units = _units()
    answer = lambda unit: 0.0 if unit.context_length in (3000, 4000) else 1.0  # noqa: E731
    _, scores, stop, _ = _sweep(units, answer)
    assert stop == 'pinned'
    assert _grid_effective_length(units, answer) == 2000
    assert _grid_effective_length(units, answer, scores) == 2000
    assert {key[0] for key in scores} == {1000, 2000, 3000}  # every length up to the boundary, nothing above


def test_lost_in_the_middle_one_failing_depth_fails_its_length_as_in_the_grid() -> None:
    """From 6000 on only depth 50 is lost (a mean of 0.8, under 0.85): the grid names 5000, so must the sweep."""
    units = _units()
    answer = lambda unit: 0.0 if unit.context_length >= 6000 and unit.depth_percent == 50.0 else 1.0  # noqa: E731
    _, scores, stop, _ = _sweep(units, answer)
    assert stop == 'pinned'
    assert _grid_effective_length(units, answer) == _grid_effective_length(units, answer, scores) == 5000


@pytest.mark.parametrize('seed', range(12))
def test_on_random_curves_of_any_shape_it_names_the_grids_length_and_sends_every_length_up_to_it(seed: int) -> None:
    rng = random.Random(seed)
    # Per length a chance of a right answer that is either clearly above or clearly below the threshold, in any
    # order (dips, recoveries, falls), and per sample a fixed pick: the grid's answers.
    chance = {length: rng.choice([0.98, 0.99, 1.0, 0.3, 0.6]) for length in LENGTHS}
    picks = {unit.key: rng.random() for unit in _units()}
    answer = lambda unit: float(picks[unit.key] < chance[unit.context_length])  # noqa: E731
    units = _units()
    _, scores, stop, _ = _sweep(units, answer)
    named = _grid_effective_length(units, answer, scores)
    assert stop == 'pinned'
    assert named == _grid_effective_length(units, answer)
    sent_lengths = {key[0] for key in scores}
    assert all(length in sent_lengths for length in LENGTHS if length <= (named or 0) + 1000)


def test_a_length_near_the_threshold_gets_more_samples_than_a_clear_one_and_the_grids_verdict() -> None:
    units = _units()
    # 3000 has 2 wrong answers of 15 (0.87, a pass by a hair): it is sent until that is sure; 4000 all wrong.
    wrong = {(3000, 25.0, 1), (3000, 75.0, 2)}
    answer = lambda unit: 0.0 if unit.key in wrong or unit.context_length > 3000 else 1.0  # noqa: E731
    _, scores, stop, _ = _sweep(units, answer)
    sent = {length: sum(key[0] == length for key in scores) for length in LENGTHS}
    assert stop == 'pinned'
    assert sent[3000] > sent[2000] and sent[3000] == len(DEPTHS) * 3
    assert _grid_effective_length(units, answer, scores) == _grid_effective_length(units, answer) == 3000


def test_every_error_at_one_length_stops_the_sweep_as_unknown_never_as_a_fail() -> None:
    """A server that answers 500 at 5000 to every request: asked again up to ERROR_ATTEMPTS times, then 'errors';
    the length is unknown, and the sweep never goes above it."""
    units = _units()
    answer = lambda unit: None if unit.context_length == 5000 else 1.0  # noqa: E731
    _, scores, stop, attempts = _sweep(units, answer)
    assert stop == 'errors'
    statuses = length_statuses(sweep_order(units, seed=0), scores, SETTINGS, attempts)
    assert statuses[5000] == 'unknown'
    assert [statuses[length] for length in LENGTHS[:4]] == ['pass'] * 4
    at_5000 = [key for key in scores if key[0] == 5000]
    assert at_5000 and all(attempts[key] == ERROR_ATTEMPTS for key in at_5000)
    assert max(key[0] for key in scores) == 5000


def test_errored_samples_are_asked_again_and_the_sweep_settles_when_they_answer() -> None:
    units = _units()
    asked: dict = {}

    def flaky(unit: PlanUnit) -> float | None:  # every sample errors the first time it is asked
        asked[unit.key] = asked.get(unit.key, 0) + 1
        return None if asked[unit.key] == 1 else _step_model(6000)(unit)

    _, scores, stop, attempts = _sweep(units, flaky)
    assert stop == 'pinned'
    assert _grid_effective_length(units, _step_model(6000), scores) == 6000
    assert set(attempts.values()) == {2} and None not in scores.values()


def test_a_few_errors_that_cannot_tip_a_length_do_not_stop_the_sweep() -> None:
    """Errors with no attempt left, at a length decided whatever they would have scored: no stop there."""
    units = _units()
    lost = {(2000, 0.0, 0), (2000, 50.0, 0)}
    answer = lambda unit: None if unit.key in lost else _step_model(6000)(unit)  # noqa: E731
    _, scores, stop, attempts = _sweep(units, answer)
    assert stop == 'pinned'
    assert all(attempts[key] == ERROR_ATTEMPTS for key in lost if key in scores)
    assert _grid_effective_length(units, _step_model(6000), scores) == 6000


@pytest.mark.parametrize(('budget', 'field'), [(7, 'budget_prompts'), (9500, 'budget_tokens')])
def test_the_budget_is_never_passed(budget: int, field: str) -> None:
    units = _units()
    settings = AdaptiveSettings(threshold=0.85, confidence=0.95, **{field: budget})
    _, scores, stop, _ = _sweep(units, _step_model(6000), settings)
    assert stop == 'budget'
    spent = len(scores) if field == 'budget_prompts' else sum(key[0] for key in scores)
    assert 0 < spent <= budget


def test_asking_an_errored_sample_again_is_paid_from_the_budget() -> None:
    units = _units()
    settings = AdaptiveSettings(threshold=0.85, confidence=0.95, budget_prompts=20)
    rounds, _, stop, attempts = _sweep(units, lambda unit: None, settings)
    assert stop == 'budget'
    assert sum(attempts.values()) == sum(map(len, rounds)) == 20
    assert max(attempts.values()) > 1  # the budget went to asking again, and it counted


def test_resuming_from_any_round_replays_the_same_choices() -> None:
    """Stateless: the scores of the first k rounds alone give round k + 1, as in the uninterrupted sweep."""
    units = _units()
    answer = lambda unit: float(random.Random(str(unit.key)).random() < (0.95 if unit.context_length < 5000 else 0.3))  # noqa: E731
    rounds, scores, _, _ = _sweep(units, answer)
    for k in range(len(rounds)):
        sent = {key: scores[key] for done in rounds[:k] for key in done}
        assert next_round(units, sent, SETTINGS).keys == rounds[k]


def test_relative_mode_sends_the_whole_shortest_length_first() -> None:
    units = _units()
    settings = AdaptiveSettings(threshold=0.85, mode='relative', confidence=0.95)
    rounds, scores, stop, _ = _sweep(units, _step_model(5000), settings)
    shortest = {unit.key for unit in units if unit.context_length == LENGTHS[0]}
    assert set(rounds[0]) == shortest
    assert stop == 'pinned'
    assert max(key[0] for key in scores) == 6000


def test_relative_mode_with_a_shortest_length_that_only_errored_stops_on_errors() -> None:
    settings = AdaptiveSettings(threshold=0.85, mode='relative', confidence=0.95)
    _, _, stop, _ = _sweep(_units(), lambda unit: None, settings)
    assert stop == 'errors'


@pytest.mark.parametrize(('partial', 'named'), [(0.9, 10_000), (0.8, 2000)])
def test_partial_scores_are_judged_by_their_mean_as_the_grid_judges_them(partial: float, named: int) -> None:
    """Scores between 0 and 1 (a multi-needle task's share found): from 3000 on every sample scores ``partial``."""
    units = _units()
    answer = lambda unit: 1.0 if unit.context_length < 3000 else partial  # noqa: E731
    _, scores, stop, _ = _sweep(units, answer)
    assert stop == 'pinned'
    assert _grid_effective_length(units, answer) == _grid_effective_length(units, answer, scores) == named


def test_a_length_of_many_samples_settles_a_clear_answer_on_a_small_part_of_them() -> None:
    """10,000 samples per length (100 depths x 100 haystacks): clear lengths settle on a few dozen samples each."""
    units = [
        PlanUnit((length, depth, k), length, float(depth))
        for length in (1000, 2000, 3000)
        for depth in range(100)
        for k in range(100)
    ]
    _, scores, stop, _ = _sweep(units, lambda unit: 1.0 if unit.context_length < 3000 else float(unit.key[2] % 2))
    assert stop == 'pinned'
    assert {key[0] for key in scores} == {1000, 2000, 3000} and len(scores) < 100


# ---- the sweep and its report never disagree about a length ----------------------------------------------------


@pytest.mark.parametrize('population', [5, 10, 30, 100])
@pytest.mark.parametrize('threshold', [0.5, 0.86, 0.95])
def test_a_length_the_sweep_settles_is_settled_the_same_way_by_its_report(population: int, threshold: float) -> None:
    """Every mix of right, wrong, errored (no attempt left) and unsent samples of one length: where the sweep settles
    it, the report of the samples it sent (stats: errored ones unscored) says the same; where nothing is left to send,
    the two say the same word, unknown included. Before, a sweep could settle a length its report called unknown,
    and walk on."""
    step = max(1, population // 10)
    for errored in range(0, population + 1, step):
        for scored in range(0, population - errored + 1, step):
            unsent = population - errored - scored
            for right in range(scored + 1):
                tally = adaptive_plan._Tally(population, float(right), scored, tuple(range(unsent)), errored, True)
                swept = adaptive_plan._status(tally, threshold, (1 - 0.9) / 5)
                reported = length_word(float(right), scored, errored, threshold=threshold) if scored + errored else None
                case = (errored, scored, unsent, right, swept, reported)
                if swept in ('pass', 'fail'):
                    assert reported == swept, case
                if not unsent and reported is not None:
                    assert swept == reported, case
