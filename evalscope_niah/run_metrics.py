"""The run's metrics beyond accuracy, as plain records: what the integration layer hands EvalScope's report.

Accuracy itself (overall and per cell) is EvalScope's mean of the sample scores; everything here needs the whole
subset at once (effective length, control rates, judge agreement, error and budget shares).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .report import SampleResult, effective_context_length, summarize_subsets

__all__ = ['OVERALL_AGGREGATION', 'MetricRecord', 'subset_metrics']

OVERALL = {'scope': 'overall'}
# How a metric's subsets combine into the OVERALL row when a mean is wrong: counts add up; the effective length of
# the run is the shortest subset's (each subset's is where its leading run of passing lengths ends, so the
# shortest is the longest length at which every subset passes). Rates are left to EvalScope's weighted mean.
OVERALL_AGGREGATION = {'judge_failures': 'sum', 'effective_context_length': 'min'}


@dataclass(frozen=True)
class MetricRecord:
    name: str
    value: float
    n: int
    dimensions: Mapping[str, Any] = field(default_factory=lambda: dict(OVERALL))


def subset_metrics(
    results: Sequence[SampleResult], errors: Sequence[SampleResult], *, threshold: float, mode: str
) -> list[MetricRecord]:
    """Metrics of the subset(s) in ``results`` (scored samples) and ``errors`` (samples that raised)."""
    needle_results = [result for result in [*results, *errors] if not result.control]
    records = _effective_lengths(needle_results, threshold=threshold, mode=mode)
    records += _control_rates([result for result in results if result.control])
    records += _subset_shares(needle_results)
    return records


def _effective_lengths(results: Sequence[SampleResult], *, threshold: float, mode: str) -> list[MetricRecord]:
    records = []
    for subset in sorted({result.subset for result in results}):
        effective = effective_context_length(results, subset=subset, threshold=threshold, mode=mode)
        if effective.per_length:  # 0 when even the shortest length falls below the threshold
            n = sum(item.n for item in effective.per_length)
            records.append(MetricRecord('effective_context_length', float(effective.length or 0), n))
    return records


def _control_rates(controls: Sequence[SampleResult]) -> list[MetricRecord]:
    # Control cells measure guessing, not retrieval: their own rates, never part of accuracy.
    records = []
    for name, values in (
        ('absent_abstention_rate', [result.accuracy for result in controls]),
        ('absent_guess_rate', [float(bool(result.guessed)) for result in controls]),
    ):
        scored = [value for value in values if value is not None]
        if scored:
            records.append(MetricRecord(name, sum(scored) / len(scored), len(scored)))
    return records


def _subset_shares(results: Sequence[SampleResult]) -> list[MetricRecord]:
    records = []
    for summary in summarize_subsets(results):
        # Errors and budget failures as shares of every sample of the subset (count * share = exact count).
        total = sum(result.subset == summary.subset for result in results)
        values = {
            'judge_rule_agreement': (summary.agreement.share_agree, summary.n),
            'judge_rule_kappa': (summary.agreement.kappa, summary.n),
            'judge_failures': (float(summary.judge_failures), summary.n),
            'inference_error_rate': (summary.errors / total, total),
            'budget_exhausted_rate': (summary.budget_exhausted / total, total),
        }
        records += [MetricRecord(name, value, n) for name, (value, n) in values.items() if value is not None]
    return records
