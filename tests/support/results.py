"""Builders of `SampleResult` records shared by the result, statistics and OpenCompass tests, and of the sample
metadata a row is made from (the run-state and score-row tests)."""

from __future__ import annotations

from evalscope_niah.metadata import SampleMeta
from evalscope_niah.params.run_params import NiahParams
from evalscope_niah.reporting.sample_record import GUESSED, SampleResult
from evalscope_niah.reporting.stats import CellSummary
from evalscope_niah.scoring import RULE_PASS_THRESHOLD

# The statistics take their pass marks as arguments; the tests pass the defaults a run passes.
EFFECTIVE_THRESHOLD: float = NiahParams.model_fields['effective_length_threshold'].default
PASS_MARK: float = RULE_PASS_THRESHOLD


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
    precision: float | None = None,
    no_answer: str | None = None,
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
        no_answer=no_answer,  # type: ignore[arg-type]
        # What multi-needle retrieval reports beside accuracy.
        task_values={} if precision is None else {'precision': precision},
    )


def control(
    accuracy: float | None = 1.0, *, guessed: bool | None = False, subset: str = 'en', context_length: int = 1000, **kw
) -> SampleResult:
    """A needle-absent control sample: accuracy 1.0 = abstained correctly."""
    return SampleResult(
        subset=subset,
        context_length=context_length,
        depth_percent=None,
        accuracy=accuracy,
        rule_recall=None,
        levenshtein=None,
        judge_accuracy=None,
        judge_status='not_called',
        control=True,
        task_values={} if guessed is None else {GUESSED: float(guessed)},
        **kw,
    )


def errored(**kwargs: object) -> SampleResult:
    return sample(None, error='HTTP 500 from model server', **kwargs)  # type: ignore[arg-type]


def judged(judge: float, rule: float, **kwargs: object) -> SampleResult:
    return sample(judge, judge_accuracy=judge, rule_recall=rule, judge_status='ok', **kwargs)  # type: ignore[arg-type]


def only_cell(cells: list[CellSummary]) -> CellSummary:
    assert len(cells) == 1
    return cells[0]


def mixed_results() -> list[SampleResult]:
    return [
        judged(1.0, 1 / 3, context_length=4600, depth_percent=33.333333333333336),
        sample(0.1 + 0.2, rule_recall=0.3, levenshtein=2 / 3, judge_status='failed', depth_percent=50.0),
        errored(context_length=128000, depth_percent=100.0, budget_exhausted=True),
        sample(0.0, subset='中文', error=None, judge_status='not_called', levenshtein=0.0),
        sample(None, error='line1\nline2 "quoted" ✓'),
    ]


def at_length(context_length: int, scores: list[float], *, subset: str = 'en') -> list[SampleResult]:
    """Samples at one length, spread over three depths (the effective length pools depths)."""
    return [
        sample(score, subset=subset, context_length=context_length, depth_percent=(0.0, 50.0, 100.0)[i % 3])
        for i, score in enumerate(scores)
    ]


def curve(*accuracies: float, n: int = 20) -> list[SampleResult]:
    """n samples at 1k, 2k, 4k, ... with exactly the given mean accuracy each (rounded to 1/n)."""
    results: list[SampleResult] = []
    for i, accuracy in enumerate(accuracies):
        ones = round(accuracy * n)
        results += at_length(1000 * 2**i, [1.0] * ones + [0.0] * (n - ones))
    return results


def row_meta(subset: str, depth: float) -> SampleMeta:
    """A single-needle sample's metadata at 600 tokens and ``depth`` in ``subset``: what a results row is made of."""
    return SampleMeta(
        subset=subset, language='en', task='single', context_length=600, depth_percent=depth, repeat=0, pick=0,
        needles=('n',), question='q', reference_answer='n', answer_keys=('n',), start_token=0, divergence_token=0,
    )  # fmt: skip
