"""Behavioural tests for evalscope_niah.reporting.stats: cells, controls, subsets, agreement, effective length."""

from __future__ import annotations

import random

import pytest

from evalscope_niah.reporting import stats
from evalscope_niah.reporting.stats import (
    ControlSummary,
    JudgeRuleAgreement,
    agreement,
    effective_context_length,
    summarize_cells,
    summarize_controls,
    summarize_subsets,
)
from tests.support.results import (
    EFFECTIVE_THRESHOLD,
    PASS_MARK,
    at_length,
    control,
    curve,
    errored,
    judged,
    only_cell,
    sample,
)

# --------------------------------------------------------------------------------------------------------------------
# Cells
# --------------------------------------------------------------------------------------------------------------------


def test_cell_means_over_repeated_samples() -> None:
    results = [
        sample(1.0, rule_recall=1.0, levenshtein=0.9),
        sample(0.0, rule_recall=0.5, levenshtein=0.3),
        sample(1.0, rule_recall=0.0, levenshtein=None),
    ]
    cell = only_cell(summarize_cells(results))
    assert (cell.subset, cell.context_length, cell.depth_percent) == ('en', 1000, 0.0)
    assert cell.n == 3
    assert cell.accuracy == pytest.approx(2 / 3)
    assert cell.rule_recall == pytest.approx(0.5)
    assert cell.levenshtein == pytest.approx(0.6)  # None values are skipped, not counted as 0
    assert (cell.judge_failures, cell.errors) == (0, 0)


def test_errored_samples_are_excluded_from_means_and_counted() -> None:
    results = [sample(1.0, rule_recall=1.0), errored(), errored(), sample(0.0, rule_recall=0.0)]
    cell = only_cell(summarize_cells(results))
    assert cell.n == 2
    assert cell.errors == 2
    assert cell.accuracy == pytest.approx(0.5)
    assert cell.rule_recall == pytest.approx(0.5)


def test_all_errored_cell_has_no_accuracy() -> None:
    cell = only_cell(summarize_cells([errored(), errored()]))
    assert (cell.n, cell.errors) == (0, 2)
    assert cell.accuracy is cell.rule_recall is cell.levenshtein is cell.ci_low is cell.ci_high is None


def test_judge_failures_are_counted() -> None:
    results = [
        sample(1.0, rule_recall=1.0, judge_status='failed'),  # fell back to the rule score
        sample(0.0, rule_recall=0.0, judge_status='failed'),
        judged(1.0, 1.0),
        sample(1.0, rule_recall=1.0, judge_status='not_called'),
    ]
    cell = only_cell(summarize_cells(results))
    assert cell.judge_failures == 2
    assert cell.n == 4
    assert cell.accuracy == pytest.approx(0.75)


def test_cells_are_split_by_every_dimension_and_sorted_numerically() -> None:
    results = [
        sample(1.0, subset='zh', context_length=1000, depth_percent=0.0),
        sample(0.0, subset='en', context_length=32000, depth_percent=100.0),
        sample(1.0, subset='en', context_length=4000, depth_percent=100.0),
        sample(1.0, subset='en', context_length=4000, depth_percent=20.0),
        sample(0.0, subset='en', context_length=4000, depth_percent=20.0),
    ]
    keys = [(c.subset, c.context_length, c.depth_percent) for c in summarize_cells(results)]
    # Numeric order: 4000 before 32000 and 20 before 100 (a string sort would get both wrong).
    assert keys == [('en', 4000, 20.0), ('en', 4000, 100.0), ('en', 32000, 100.0), ('zh', 1000, 0.0)]
    assert summarize_cells(results)[0].accuracy == pytest.approx(0.5)


def test_ci_only_from_two_scored_samples_and_contains_mean() -> None:
    single = only_cell(summarize_cells([sample(1.0), errored()]))
    assert single.n == 1
    assert single.ci_low is None and single.ci_high is None

    scores = [1.0] * 13 + [0.0] * 7
    cell = only_cell(summarize_cells([sample(s) for s in scores]))
    assert cell.ci_low is not None and cell.ci_high is not None
    assert 0.0 <= cell.ci_low < cell.accuracy < cell.ci_high <= 1.0  # type: ignore[operator]
    # Normal approximation: 0.65 +- 1.96 * sqrt(0.65 * 0.35 / 20) ~ [0.44, 0.86].
    assert cell.ci_low == pytest.approx(0.44, abs=0.08)
    assert cell.ci_high == pytest.approx(0.86, abs=0.08)

    two = only_cell(summarize_cells([sample(0.0), sample(1.0)]))
    assert two.ci_low is not None and two.ci_high is not None
    assert two.ci_low <= 0.5 <= two.ci_high


def test_ci_is_deterministic_and_order_independent() -> None:
    scores = [1.0, 0.0, 1.0, 1.0, 0.5, 0.0, 1.0, 0.25]
    first = only_cell(summarize_cells([sample(s) for s in scores]))
    shuffled = scores[:]
    random.Random(7).shuffle(shuffled)
    second = only_cell(summarize_cells([sample(s) for s in shuffled]))
    assert (first.ci_low, first.ci_high) == (second.ci_low, second.ci_high)


def test_ci_of_constant_scores_is_a_point() -> None:
    cell = only_cell(summarize_cells([sample(1.0)] * 5))
    assert (cell.ci_low, cell.accuracy, cell.ci_high) == (1.0, 1.0, 1.0)


# --------------------------------------------------------------------------------------------------------------------
# Agreement
# --------------------------------------------------------------------------------------------------------------------


def test_kappa_on_hand_computed_two_by_two() -> None:
    # judge x rule table: both pass 20, judge-only 5, rule-only 10, both fail 15 (n=50).
    pairs = [(1.0, 1.0)] * 20 + [(1.0, 0.0)] * 5 + [(0.0, 1.0)] * 10 + [(0.0, 0.0)] * 15
    # p_o = 35/50 = 0.7; p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    result = agreement(pairs, threshold=PASS_MARK)
    assert result.n == 50
    assert result.share_agree == pytest.approx(0.7)
    assert result.kappa == pytest.approx(0.4)


def test_kappa_perfect_disagreement_is_minus_one() -> None:
    expected = JudgeRuleAgreement(n=2, share_agree=0.0, kappa=-1.0)
    assert agreement([(1.0, 0.0), (0.0, 1.0)], threshold=PASS_MARK) == expected


@pytest.mark.parametrize('score', [0.0, 1.0])
def test_kappa_degenerate_both_constant_and_equal(score: float) -> None:
    # Expected agreement is 1 (0/0): defined as 1.0 because observed agreement is 1 too.
    assert agreement([(score, score)] * 4, threshold=PASS_MARK) == JudgeRuleAgreement(n=4, share_agree=1.0, kappa=1.0)


def test_kappa_each_scorer_constant_but_opposite() -> None:
    assert agreement([(1.0, 0.0)] * 3, threshold=PASS_MARK) == JudgeRuleAgreement(n=3, share_agree=0.0, kappa=0.0)


def test_degenerate_branch_with_imperfect_agreement_returns_zero() -> None:
    # Mathematically unreachable through agreement(); the helper still honours the documented rule.
    assert stats._cohen_kappa(4, 3, 4, 4) == 0.0


def test_agreement_empty_and_threshold() -> None:
    assert agreement([], threshold=PASS_MARK) == JudgeRuleAgreement(n=0, share_agree=None, kappa=None)
    # A score equal to the threshold is a pass.
    assert agreement([(0.5, 0.5), (0.4, 0.0)], threshold=0.5).share_agree == 1.0
    assert agreement([(0.5, 0.4)], threshold=0.5).share_agree == 0.0
    assert agreement([(0.5, 0.4)], threshold=0.4).share_agree == 1.0
    with pytest.raises(ValueError):
        agreement([(float('nan'), 1.0)], threshold=PASS_MARK)


# --------------------------------------------------------------------------------------------------------------------
# Subsets and overall
# --------------------------------------------------------------------------------------------------------------------


def test_subset_summary_counts_and_agreement_only_from_judged_samples() -> None:
    results = [
        judged(1.0, 1.0, depth_percent=0.0),
        judged(1.0, 0.0, depth_percent=50.0),
        judged(0.0, 0.0, depth_percent=100.0, budget_exhausted=True),
        # Judge failed: rule fallback score, must not enter the agreement.
        sample(0.0, rule_recall=1.0, judge_status='failed'),
        sample(1.0, rule_recall=0.0, judge_status='not_called'),
        errored(budget_exhausted=True),
        judged(1.0, 1.0, subset='zh'),
    ]
    en, zh = summarize_subsets(results, pass_mark=PASS_MARK)
    assert (en.subset, zh.subset) == ('en', 'zh')
    assert en.n == 5
    assert en.accuracy == pytest.approx(3 / 5)
    assert en.rule_recall == pytest.approx(2 / 5)
    assert (en.judge_failures, en.errors, en.budget_exhausted) == (1, 1, 2)
    assert en.agreement.n == 3
    assert en.agreement.share_agree == pytest.approx(2 / 3)
    assert zh.agreement == JudgeRuleAgreement(n=1, share_agree=1.0, kappa=1.0)


# ----
def test_cells_exclude_controls_and_average_precision() -> None:
    results = [
        sample(1.0, precision=1.0),
        sample(0.0, precision=0.5),
        sample(1.0),  # single-needle sample: no precision, not counted as 0
        control(1.0),
        control(0.0, guessed=True),
    ]
    cell = only_cell(summarize_cells(results))
    assert (cell.n, cell.depth_percent) == (3, 0.0)
    assert cell.accuracy == pytest.approx(2 / 3)
    assert cell.task_values == {'precision': pytest.approx(0.75)}
    assert summarize_cells([control()]) == []
    assert only_cell(summarize_cells([sample(1.0)])).task_values == {}


def test_summarize_controls_per_subset_and_length() -> None:
    results = [
        control(1.0, guessed=False, context_length=2000),
        control(0.0, guessed=True, context_length=2000),
        control(0.0, guessed=False, context_length=2000),
        control(None, guessed=None, context_length=2000, error='HTTP 500'),
        control(1.0, guessed=None, context_length=1000),  # guess not recorded
        control(1.0, subset='zh', context_length=500),
        sample(0.0, context_length=2000),  # needle samples never enter control summaries
    ]
    assert summarize_controls(results) == [
        ControlSummary(subset='en', context_length=1000, n=1, abstention_rate=1.0, guess_rate=None, errors=0),
        ControlSummary(
            subset='en', context_length=2000, n=3, abstention_rate=pytest.approx(1 / 3), guess_rate=1 / 3, errors=1
        ),
        ControlSummary(subset='zh', context_length=500, n=1, abstention_rate=1.0, guess_rate=0.0, errors=0),
    ]
    assert summarize_controls([sample()]) == []


def test_subset_means_leave_controls_out_but_count_their_errors() -> None:
    results = [sample(1.0), sample(1.0), control(0.0, guessed=True), control(None, guessed=None, error='timeout')]
    (summary,) = summarize_subsets(results, pass_mark=PASS_MARK)
    assert (summary.n, summary.accuracy, summary.errors) == (2, 1.0, 1)


# --------------------------------------------------------------------------------------------------------------------
# Effective context length
# --------------------------------------------------------------------------------------------------------------------


def test_effective_length_all_lengths_pass() -> None:
    result = effective_context_length(curve(1.0, 1.0, 0.95, 0.9), subset='en', threshold=EFFECTIVE_THRESHOLD)
    assert result.length == 8000
    assert [s.passes for s in result.per_length] == [True] * 4
    assert [s.context_length for s in result.per_length] == [1000, 2000, 4000, 8000]
    assert [s.n for s in result.per_length] == [20] * 4
    assert result.per_length[2].accuracy == pytest.approx(0.95)
    assert (result.mode, result.threshold, result.base_score) == ('absolute', 0.85, None)


def test_effective_length_none_when_shortest_fails() -> None:
    result = effective_context_length(curve(0.5, 1.0, 1.0), subset='en', threshold=EFFECTIVE_THRESHOLD)
    assert result.length is None
    assert [s.passes for s in result.per_length] == [False, True, True]  # later passes do not count
    assert result.ci_low is None  # the interval reaches below the shortest length


def test_effective_length_stops_at_first_gap() -> None:
    # 4k fails, 8k passes again: the effective length is 2k, not 8k.
    result = effective_context_length(curve(1.0, 0.9, 0.6, 1.0, 0.2), subset='en', threshold=EFFECTIVE_THRESHOLD)
    assert result.length == 2000
    assert [s.passes for s in result.per_length] == [True, True, False, True, False]


def test_effective_length_threshold_is_inclusive_and_configurable() -> None:
    results = curve(1.0, 0.85, 0.8)  # 17/20 is exactly the default threshold
    assert effective_context_length(results, subset='en', threshold=EFFECTIVE_THRESHOLD).length == 2000
    assert effective_context_length(results, subset='en', threshold=0.8).length == 4000
    assert effective_context_length(results, subset='en', threshold=0.9).length == 1000


def test_effective_length_relative_mode_scales_by_shortest_length() -> None:
    # The model is mediocre everywhere: nothing passes 0.85 absolute, but relative to its own 1k score
    # (0.6) 2k (0.55 >= 0.85 * 0.6 = 0.51) passes and 4k (0.45) does not.
    results = curve(0.6, 0.55, 0.45, 0.6)
    absolute = effective_context_length(results, subset='en', threshold=EFFECTIVE_THRESHOLD)
    relative = effective_context_length(results, subset='en', mode='relative', threshold=EFFECTIVE_THRESHOLD)
    assert absolute.length is None
    assert relative.length == 2000
    assert relative.base_score == pytest.approx(0.6)
    assert [s.passes for s in relative.per_length] == [True, True, False, True]


def test_effective_length_relative_mode_needs_a_nonzero_baseline() -> None:
    # 0 >= 0.85 * 0 would make every length pass; a shortest length scoring 0 gives no baseline instead.
    result = effective_context_length(curve(0.0, 0.0, 1.0), subset='en', mode='relative', threshold=EFFECTIVE_THRESHOLD)
    assert result.length is None
    assert not any(s.passes for s in result.per_length)


def test_effective_length_ignores_controls_errors_and_other_subsets() -> None:
    results = [
        *curve(1.0, 1.0, 0.0),
        *[control(0.0, guessed=True, context_length=length) for length in (1000, 2000, 4000)],
        *[errored(context_length=2000) for _ in range(50)],
        *at_length(1000, [0.0] * 20, subset='zh'),
    ]
    result = effective_context_length(results, subset='en', threshold=EFFECTIVE_THRESHOLD)
    assert result.length == 2000
    assert [s.n for s in result.per_length] == [20, 20, 20]


def test_effective_length_a_length_that_only_errored_is_unknown_and_bounds_it() -> None:
    # The server failed every sample at 4k: that says nothing of the model, so 2k is a bound, not the answer.
    results = [*curve(1.0, 1.0), *[errored(context_length=4000) for _ in range(3)], *at_length(8000, [1.0] * 5)]
    result = effective_context_length(results, subset='en', threshold=EFFECTIVE_THRESHOLD)
    assert result.length == result.at_least == 2000
    assert (result.unknown_length, result.unknown_reason) == (4000, '3 server errors')
    unknown = result.per_length[2]
    assert (unknown.n, unknown.accuracy, unknown.unscored) == (0, None, 3)
    assert (unknown.status, unknown.passes, unknown.unknown) == ('unknown', False, '3 server errors')
    assert [s.status for s in result.per_length] == ['pass', 'pass', 'unknown', 'pass']
    assert result.bound.is_bound


def test_effective_length_outage_at_the_shortest_length_knows_nothing() -> None:
    results = [*[errored(context_length=1000) for _ in range(4)], *curve(1.0, 1.0, 1.0)[20:]]
    result = effective_context_length(results, subset='en', threshold=EFFECTIVE_THRESHOLD)
    assert result.length is None
    assert (result.unknown_length, result.unknown_reason) == (1000, '4 server errors')
    assert result.bound.describe(str) == 'unknown; 1000 unknown: 4 server errors'


def test_effective_length_a_failed_length_before_an_unknown_one_settles_it() -> None:
    results = [*curve(1.0, 0.2), *[errored(context_length=4000) for _ in range(3)]]
    result = effective_context_length(results, subset='en', threshold=EFFECTIVE_THRESHOLD)
    assert (result.length, result.unknown_length, result.unknown_reason) == (1000, None, None)
    assert not result.bound.is_bound


def test_effective_length_on_a_curve_that_dips_and_recovers_stops_at_the_dip() -> None:
    # Non-monotone: 4k dips, 8k recovers; the dip is a fail (scored), so the length is 2k and settled; with the dip's
    # samples errored instead, 2k is only a bound and 8k's recovery does not count either way.
    dip = curve(1.0, 1.0, 0.3, 1.0)
    settled = effective_context_length(dip, subset='en', threshold=EFFECTIVE_THRESHOLD)
    assert (settled.length, settled.unknown_length) == (2000, None)
    assert [s.status for s in settled.per_length] == ['pass', 'pass', 'fail', 'pass']
    outage = [r for r in dip if r.context_length != 4000] + [errored(context_length=4000) for _ in range(20)]
    bound = effective_context_length(outage, subset='en', threshold=EFFECTIVE_THRESHOLD)
    assert (bound.length, bound.unknown_length, bound.unknown_reason) == (2000, 4000, '20 server errors')


def test_effective_length_partial_errors_settle_on_the_scored_samples_when_enough() -> None:
    # 40 right answers and 3 errors at 2k: whatever the 3 would have scored, 2k passes (40/43 >= 0.85).
    enough = [*curve(1.0, 1.0, n=40), *[errored(context_length=2000) for _ in range(3)]]
    result = effective_context_length(enough, subset='en', threshold=EFFECTIVE_THRESHOLD)
    assert (result.length, result.unknown_length) == (2000, None)
    assert result.per_length[1].unscored == 3 and result.per_length[1].status == 'pass'
    # 20 right answers and 50 errors: the scored ones alone settle it (a one-sided 95% bound clears 0.85).
    many_errors = [*curve(1.0, 1.0), *[errored(context_length=2000) for _ in range(50)]]
    assert effective_context_length(many_errors, subset='en', threshold=EFFECTIVE_THRESHOLD).per_length[1].passes
    # Wrong answers settle a fail the same way: 20 of 20 wrong.
    failing = [*curve(1.0, 0.0), *[errored(context_length=2000) for _ in range(50)]]
    assert effective_context_length(failing, subset='en', threshold=EFFECTIVE_THRESHOLD).per_length[1].status == 'fail'


def test_effective_length_partial_errors_too_few_scored_to_settle_is_unknown() -> None:
    # 3 right, 3 errored at 2k: 3 of 6 could be all the length scores, and 3 answers settle nothing alone.
    results = [*curve(1.0), *at_length(2000, [1.0] * 3), *[errored(context_length=2000) for _ in range(3)]]
    result = effective_context_length(results, subset='en', threshold=EFFECTIVE_THRESHOLD)
    assert (result.length, result.unknown_length, result.unknown_reason) == (1000, 2000, '3 server errors')
    cut = [*curve(1.0), *at_length(2000, [1.0] * 3), sample(None, context_length=2000, budget_exhausted=True)]
    cut += [sample(None, context_length=2000, no_answer='reasoning_only') for _ in range(2)]
    reason = effective_context_length(cut, subset='en', threshold=EFFECTIVE_THRESHOLD).unknown_reason
    assert reason == '1 cut reply, 2 replies with no final answer'


def test_effective_length_relative_mode_with_an_unknown_baseline() -> None:
    # Relative mode scales by the shortest length: with it all errored, nothing after it can be decided.
    results = [*[errored(context_length=1000) for _ in range(5)], *curve(1.0, 1.0, 1.0)[20:]]
    result = effective_context_length(results, subset='en', mode='relative', threshold=EFFECTIVE_THRESHOLD)
    assert result.length is None and result.unknown_length == 1000
    assert [s.status for s in result.per_length] == ['unknown', 'unknown', 'unknown']
    # A partly errored baseline that still settles: 2k is judged against every baseline it could be.
    base = [*at_length(1000, [1.0] * 40), errored(context_length=1000), *at_length(2000, [0.5] * 40)]
    relative = effective_context_length(base, subset='en', mode='relative', threshold=EFFECTIVE_THRESHOLD)
    assert [s.status for s in relative.per_length] == ['pass', 'fail']


def test_effective_length_bound_ci_stays_below_the_unknown_length() -> None:
    results = [*curve(1.0, 1.0), *[errored(context_length=4000) for _ in range(3)], *at_length(8000, [1.0] * 5)]
    result = effective_context_length(results, subset='en', threshold=EFFECTIVE_THRESHOLD)
    assert (result.ci_low, result.ci_high) == (2000, 2000)


def test_effective_length_ci_contains_estimate_and_uses_grid_lengths() -> None:
    # Borderline at 4k (0.85 exactly): resamples fall on both sides, so the CI spans 2k..4k or more.
    results = curve(1.0, 0.95, 0.85, 0.5, n=20)
    result = effective_context_length(results, subset='en', threshold=EFFECTIVE_THRESHOLD)
    grid = {s.context_length for s in result.per_length}
    assert result.length == 4000
    assert result.ci_low is not None and result.ci_high is not None
    assert result.ci_low in grid and result.ci_high in grid
    assert result.ci_low <= result.length <= result.ci_high
    assert result.ci_low < result.length  # a borderline length is genuinely uncertain
    for score in result.per_length:
        assert score.ci_low is not None and score.ci_high is not None
        assert score.ci_low <= score.accuracy <= score.ci_high  # type: ignore[operator]


def test_effective_length_ci_is_a_point_for_clear_cut_data() -> None:
    result = effective_context_length(curve(1.0, 1.0, 0.0, 0.0), subset='en', threshold=EFFECTIVE_THRESHOLD)
    assert (result.ci_low, result.length, result.ci_high) == (2000, 2000, 2000)


def test_effective_length_is_deterministic_and_order_independent() -> None:
    results = curve(1.0, 0.9, 0.85, 0.8, 0.7, n=12)
    first = effective_context_length(results, subset='en', threshold=EFFECTIVE_THRESHOLD)
    shuffled = results[:]
    random.Random(3).shuffle(shuffled)
    assert effective_context_length(shuffled, subset='en', threshold=EFFECTIVE_THRESHOLD) == first
    # Any iterable, consumed once.
    assert effective_context_length(iter(results), subset='en', threshold=EFFECTIVE_THRESHOLD) == first


@pytest.mark.parametrize(
    ('kwargs', 'fragment'),
    [
        ({'threshold': 0.0}, 'threshold'),
        ({'threshold': 1.5}, 'threshold'),
        ({'threshold': float('nan')}, 'threshold'),
        ({'mode': 'ruler'}, 'mode'),
    ],
)
def test_effective_length_rejects_bad_arguments(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        effective_context_length(curve(1.0), subset='en', **{'threshold': EFFECTIVE_THRESHOLD, **kwargs})  # type: ignore[arg-type]


def test_effective_length_of_unknown_subset_is_an_error() -> None:
    with pytest.raises(ValueError, match="'fr'"):
        effective_context_length(curve(1.0), subset='fr', threshold=EFFECTIVE_THRESHOLD)
    with pytest.raises(ValueError, match='no needle samples'):
        effective_context_length([control()], subset='en', threshold=EFFECTIVE_THRESHOLD)


def test_replies_with_no_final_answer_are_counted_apart_from_means_and_errors() -> None:
    results = [
        sample(1.0),
        sample(None, no_answer='reasoning_only'),
        sample(None, no_answer='tool_call_only'),
        errored(),
        sample(0.0, depth_percent=50.0),
    ]
    first, second = summarize_cells(results)
    assert (first.n, first.accuracy, first.errors, first.no_answer) == (1, 1.0, 1, 2)
    assert (second.n, second.accuracy, second.no_answer) == (1, 0.0, 0)
    [subset] = summarize_subsets(results, pass_mark=PASS_MARK)
    assert (subset.n, subset.accuracy, subset.errors, subset.no_answer) == (2, 0.5, 1, 2)
