"""Behavioural tests for evalscope_niah.report: cell/subset summaries, agreement, persistence, terminal table."""

from __future__ import annotations

import json
import os
import random
import stat
from pathlib import Path

import pytest

from evalscope_niah import report
from evalscope_niah.report import (
    CELL_CSV_COLUMNS,
    Agreement,
    CellSummary,
    SampleResult,
    agreement,
    format_cell_table,
    format_tokens,
    length_labels,
    overall_accuracy,
    read_cells_csv,
    read_results,
    summarize_cells,
    summarize_subsets,
    write_cells_csv,
    write_results,
)


def sample(
    accuracy: float | None = 1.0,
    *,
    subset: str = 'en',
    context_length: int = 1000,
    depth_percent: float = 0.0,
    rule_recall: float | None = None,
    levenshtein: float | None = None,
    judge_accuracy: float | None = None,
    judge_status: str = 'not_called',
    error: str | None = None,
    budget_exhausted: bool = False,
) -> SampleResult:
    return SampleResult(
        subset=subset,
        context_length=context_length,
        depth_percent=depth_percent,
        accuracy=accuracy,
        rule_recall=rule_recall,
        levenshtein=levenshtein,
        judge_accuracy=judge_accuracy,
        judge_status=judge_status,
        error=error,
        budget_exhausted=budget_exhausted,
    )


def errored(**kwargs: object) -> SampleResult:
    return sample(None, error='HTTP 500 from model server', **kwargs)  # type: ignore[arg-type]


def judged(judge: float, rule: float, **kwargs: object) -> SampleResult:
    return sample(judge, judge_accuracy=judge, rule_recall=rule, judge_status='ok', **kwargs)  # type: ignore[arg-type]


def only_cell(cells: list[CellSummary]) -> CellSummary:
    assert len(cells) == 1
    return cells[0]


# --------------------------------------------------------------------------------------------------------------------
# SampleResult
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    'kwargs',
    [
        {'judge_status': 'maybe'},
        {'judge_status': 'ok'},  # ok without a judge score
        {'judge_status': 'failed', 'judge_accuracy': 1.0},  # a score from a failed judge
        {'accuracy': 1.5},
        {'accuracy': float('nan')},
        {'rule_recall': -0.1},
        {'levenshtein': float('inf')},
        {'error': 'timeout'},  # an error next to a score
        {'context_length': 0},
        {'depth_percent': 100.5},
    ],
)
def test_sample_result_rejects_inconsistent_values(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        sample(**kwargs)  # type: ignore[arg-type]


def test_sample_result_dict_round_trip_and_defaults() -> None:
    original = sample(
        1 / 3,
        subset='中文',
        context_length=4600,
        depth_percent=33.333333333333336,
        rule_recall=0.1 + 0.2,
        levenshtein=0.7,
        judge_accuracy=1 / 3,
        judge_status='ok',
        budget_exhausted=True,
    )
    assert SampleResult.from_dict(original.to_dict()) == original
    minimal = {k: v for k, v in errored().to_dict().items() if k not in ('budget_exhausted',)}
    assert SampleResult.from_dict(minimal).budget_exhausted is False
    # JSON ints for float fields are accepted and normalised.
    assert SampleResult.from_dict({**sample().to_dict(), 'depth_percent': 50}).depth_percent == 50.0


@pytest.mark.parametrize(
    'change',
    [
        {'extra': 1},
        {'context_length': True},
        {'context_length': 1000.0},
        {'accuracy': '1.0'},
        {'budget_exhausted': 'no'},
    ],
)
def test_sample_result_from_dict_is_strict(change: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        SampleResult.from_dict({**sample().to_dict(), **change})


def test_sample_result_from_dict_missing_required_field() -> None:
    data = sample().to_dict()
    del data['judge_status']
    with pytest.raises(ValueError, match='judge_status'):
        SampleResult.from_dict(data)


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
    result = agreement(pairs)
    assert result.n == 50
    assert result.share_agree == pytest.approx(0.7)
    assert result.kappa == pytest.approx(0.4)


def test_kappa_perfect_disagreement_is_minus_one() -> None:
    assert agreement([(1.0, 0.0), (0.0, 1.0)]) == Agreement(n=2, share_agree=0.0, kappa=-1.0)


@pytest.mark.parametrize('score', [0.0, 1.0])
def test_kappa_degenerate_both_constant_and_equal(score: float) -> None:
    # Expected agreement is 1 (0/0): defined as 1.0 because observed agreement is 1 too.
    assert agreement([(score, score)] * 4) == Agreement(n=4, share_agree=1.0, kappa=1.0)


def test_kappa_each_scorer_constant_but_opposite() -> None:
    assert agreement([(1.0, 0.0)] * 3) == Agreement(n=3, share_agree=0.0, kappa=0.0)


def test_degenerate_branch_with_imperfect_agreement_returns_zero() -> None:
    # Mathematically unreachable through agreement(); the helper still honours the documented rule.
    assert report._cohen_kappa(4, 3, 4, 4) == 0.0


def test_agreement_empty_and_threshold() -> None:
    assert agreement([]) == Agreement(n=0, share_agree=None, kappa=None)
    # A score equal to the threshold is a pass.
    assert agreement([(0.5, 0.5), (0.4, 0.0)], threshold=0.5).share_agree == 1.0
    assert agreement([(0.5, 0.4)], threshold=0.5).share_agree == 0.0
    assert agreement([(0.5, 0.4)], threshold=0.4).share_agree == 1.0
    with pytest.raises(ValueError):
        agreement([(float('nan'), 1.0)])


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
    en, zh = summarize_subsets(results)
    assert (en.subset, zh.subset) == ('en', 'zh')
    assert en.n == 5
    assert en.accuracy == pytest.approx(3 / 5)
    assert en.rule_recall == pytest.approx(2 / 5)
    assert (en.judge_failures, en.errors, en.budget_exhausted) == (1, 1, 2)
    assert en.agreement.n == 3
    assert en.agreement.share_agree == pytest.approx(2 / 3)
    assert zh.agreement == Agreement(n=1, share_agree=1.0, kappa=1.0)


def test_overall_accuracy_is_sample_weighted_and_skips_errors() -> None:
    results = [sample(1.0, subset='a'), sample(1.0, subset='a'), sample(0.0, subset='b'), errored(subset='b')]
    assert overall_accuracy(results) == pytest.approx(2 / 3)
    assert overall_accuracy([errored()]) is None
    assert overall_accuracy([]) is None


# --------------------------------------------------------------------------------------------------------------------
# Persistence
# --------------------------------------------------------------------------------------------------------------------


def mixed_results() -> list[SampleResult]:
    return [
        judged(1.0, 1 / 3, context_length=4600, depth_percent=33.333333333333336),
        sample(0.1 + 0.2, rule_recall=0.3, levenshtein=2 / 3, judge_status='failed', depth_percent=50.0),
        errored(context_length=128000, depth_percent=100.0, budget_exhausted=True),
        sample(0.0, subset='中文', error=None, judge_status='not_called', levenshtein=0.0),
        sample(None, error='line1\nline2 "quoted" ✓'),
    ]


def test_jsonl_round_trip_exact(tmp_path: Path) -> None:
    results = mixed_results()
    path = write_results(tmp_path / 'results.jsonl', results)
    lines = path.read_text(encoding='utf-8').splitlines()
    assert len(lines) == len(results)
    assert all(isinstance(json.loads(line), dict) for line in lines)
    assert read_results(path) == results


def test_jsonl_reader_skips_blank_lines_and_reports_bad_line(tmp_path: Path) -> None:
    path = tmp_path / 'r.jsonl'
    good = json.dumps(sample().to_dict())
    path.write_text(f'{good}\n\n{good}\n', encoding='utf-8')
    assert len(read_results(path)) == 2
    path.write_text(f'{good}\n{{"subset": \n', encoding='utf-8')
    with pytest.raises(ValueError, match=':2:'):
        read_results(path)
    path.write_text('[1, 2]\n', encoding='utf-8')
    with pytest.raises(ValueError, match=':1:'):
        read_results(path)


def test_cells_csv_round_trip_exact(tmp_path: Path) -> None:
    cells = summarize_cells(mixed_results() + [sample(s, rule_recall=s) for s in (1.0, 0.0, 1.0)])
    assert any(c.accuracy is None for c in cells) and any(c.ci_low is not None for c in cells)
    path = write_cells_csv(tmp_path / 'cells.csv', cells)
    header = (
        'subset,context_length,depth_percent,n,accuracy,rule_recall,levenshtein,judge_failures,errors,ci_low,ci_high'
    )
    assert path.read_text(encoding='utf-8').splitlines()[0] == header
    assert len(path.read_text(encoding='utf-8').splitlines()) == len(cells) + 1
    assert read_cells_csv(path) == cells


def test_cells_csv_rejects_wrong_header_and_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / 'cells.csv'
    path.write_text('subset,n\nen,1\n', encoding='utf-8')
    with pytest.raises(ValueError, match='header'):
        read_cells_csv(path)
    path.write_text(','.join(CELL_CSV_COLUMNS) + '\nen,notanint,0.0,1,1.0,,,0,0,,\n', encoding='utf-8')
    with pytest.raises(ValueError, match='invalid cell row'):
        read_cells_csv(path)


def test_atomic_write_leaves_no_temp_files(tmp_path: Path) -> None:
    write_results(tmp_path / 'results.jsonl', mixed_results())
    write_cells_csv(tmp_path / 'cells.csv', summarize_cells(mixed_results()))
    write_results(tmp_path / 'results.jsonl', mixed_results()[:1])  # overwrite
    assert sorted(p.name for p in tmp_path.iterdir()) == ['cells.csv', 'results.jsonl']
    assert stat.S_IMODE((tmp_path / 'cells.csv').stat().st_mode) == 0o644  # not mkstemp's 0600


def test_atomic_write_failure_keeps_old_file_and_cleans_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / 'results.jsonl'
    write_results(path, mixed_results()[:1])
    before = path.read_bytes()

    def broken_replace(src: str, dst: str) -> None:
        raise OSError('disk full')

    monkeypatch.setattr(os, 'replace', broken_replace)
    with pytest.raises(OSError, match='disk full'):
        write_results(path, mixed_results())
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ['results.jsonl']


def test_atomic_write_keeps_existing_permissions_and_creates_parents(tmp_path: Path) -> None:
    path = tmp_path / 'deep' / 'dir' / 'cells.csv'
    write_cells_csv(path, [])
    assert read_cells_csv(path) == []
    path.chmod(0o600)
    write_cells_csv(path, summarize_cells([sample()]))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# --------------------------------------------------------------------------------------------------------------------
# Labels and table
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('tokens', 'unit', 'expected'),
    [
        (500, 1000, '500'),
        (1000, 1000, '1k'),
        (4600, 1000, '4.6k'),
        (128000, 1000, '128k'),
        (1_000_000, 1000, '1M'),
        (4096, 1024, '4k'),
        (131072, 1024, '128k'),
        (1536, 1024, '1.5k'),
    ],
)
def test_format_tokens(tokens: int, unit: int, expected: str) -> None:
    assert format_tokens(tokens, unit=unit) == expected


def test_length_labels_pick_round_unique_labels() -> None:
    assert length_labels([1000, 4600, 32000, 128000]) == ['1k', '4.6k', '32k', '128k']
    assert length_labels([1024, 4096, 32768, 131072]) == ['1k', '4k', '32k', '128k']
    assert length_labels([1000, 10071]) == ['1k', '10.1k']  # rounded, still unique
    assert length_labels([4096, 4100]) == ['4,096', '4,100']  # both would read '4.1k'


def test_format_cell_table_grid() -> None:
    results = [
        sample(1.0, context_length=1000, depth_percent=0.0),
        sample(0.0, context_length=1000, depth_percent=0.0),
        sample(1.0, context_length=128000, depth_percent=0.0),
        sample(0.25, context_length=4000, depth_percent=100.0),
        errored(context_length=128000, depth_percent=100.0),
        sample(1.0, subset='other', context_length=2000, depth_percent=50.0),
    ]
    table = format_cell_table(summarize_cells(results), subset='en')
    lines = table.splitlines()
    assert lines[0] == 'subset: en'
    assert lines[1].split()[-3:] == ['1k', '4k', '128k']
    assert lines[2].split() == ['0', '0.50', '—', '1.00']  # 4k at depth 0 was never run
    assert lines[3].split() == ['100', '—', '0.25', '—']  # 128k at depth 100 only errored
    assert len(lines) == 4  # the other subset's depth 50 does not leak in
    assert len({len(line) for line in lines[1:]}) == 1  # aligned columns


def test_format_cell_table_errors() -> None:
    with pytest.raises(ValueError, match='no cells'):
        format_cell_table(summarize_cells([sample()]), subset='missing')
    cells = summarize_cells([sample()])
    with pytest.raises(ValueError, match='duplicate'):
        format_cell_table(cells + cells, subset='en')
