"""The run's metrics beyond accuracy, as plain records: what the integration layer hands EvalScope's report.

Accuracy itself (overall and per cell) is EvalScope's mean of the sample scores; everything here needs the whole
subset at once (effective length, control rates, judge agreement, error and budget shares).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..scoring import RULE_PASS_THRESHOLD
from .labels import length_unit
from .length_status import EffectiveBound
from .sample_record import GUESSED, SampleResult
from .stats import EffectiveLength, effective_context_length, summarize_subsets
from .sweep_plan import UNTESTED_KIND

__all__ = [
    'OVERALL_AGGREGATION',
    'MetricRecord',
    'effective_length_message',
    'judge_failure_message',
    'served_drift_message',
    'served_ratios',
    'subset_metrics',
]

OVERALL = {'scope': 'overall'}
# How a metric's subsets combine into the OVERALL row when a mean is wrong: counts add up; the effective length of
# the run is the shortest subset's (each subset's is where its leading run of passing lengths ends, so the
# shortest is the longest length at which every subset passes). Rates are left to EvalScope's weighted mean.
OVERALL_AGGREGATION = {
    'judge_failures': 'sum',
    'served_length_mismatches': 'sum',
    'effective_context_length': 'min',
    'effective_context_length_served': 'min',
}


@dataclass(frozen=True)
class MetricRecord:
    name: str
    value: float
    n: int
    dimensions: Mapping[str, Any] = field(default_factory=lambda: dict(OVERALL))


def subset_metrics(
    results: Sequence[SampleResult],
    errors: Sequence[SampleResult],
    *,
    threshold: float,
    mode: str,
    lengths_are_served_tokens: bool = False,
    effective: Mapping[str, EffectiveLength] | None = None,
) -> list[MetricRecord]:
    """Metrics of the subset(s) in ``results`` (scored samples) and ``errors`` (samples that raised).

    ``lengths_are_served_tokens``: the grid was counted by the model's own server (tokenizer_path 'server'), so
    every served prompt must equal its length; the samples where it does not are counted. ``effective``: the
    subsets' effective lengths when the caller computed them (to pass them on to the run's files); None computes."""
    needle_results = [result for result in [*results, *errors] if not result.control]
    records = _effective_lengths(needle_results, threshold=threshold, mode=mode, effective=effective or {})
    records += _control_rates([result for result in results if result.control])
    records += _subset_shares(needle_results)
    records += _served_ratio([*results, *errors])
    if lengths_are_served_tokens:
        counted = [r for r in [*results, *errors] if r.served_prompt_tokens]
        mismatches = sum(r.served_prompt_tokens != r.context_length for r in counted)
        records.append(MetricRecord('served_length_mismatches', float(mismatches), len(counted)))
    return records


# A judge that fails on more than this share of the samples it was asked about is reported loudly: their accuracy
# is then the rule score, and a reader of the heatmap should know it.
JUDGE_FAILURE_ALERT = 0.1


def judge_failure_message(results: Sequence[SampleResult], *, subset: str) -> str | None:
    """One sentence when the judge failed on too many of a subset's samples; None otherwise."""
    asked = [r for r in results if r.subset == subset and r.judge_status != 'not_called']
    failed = sum(r.judge_status == 'failed' for r in asked)
    if not asked or failed / len(asked) <= JUDGE_FAILURE_ALERT:
        return None
    return (
        f'subset {subset}: the judge failed on {failed} of {len(asked)} samples ({failed / len(asked):.0%}); their '
        'accuracy is the rule score. Check the judge endpoint and its generation_config (judge_failures in the report)'
    )


def effective_length_message(bound: EffectiveBound, *, subset: str, tokenizer: str | None) -> str | None:
    """One sentence when a subset's effective length is a bound (a length the data could not decide, named with
    why); None when it is settled. The report's effective_context_length is then the lengths known to pass."""
    if not bound.is_bound:
        return None
    text = bound.describe(lambda length: f'{length:,}')
    reason = bound.reason or ''
    retry = (
        '; resume the run with --use-cache DIR to retry the errored samples'
        if 'server error' in reason
        else '; the adaptive sweep stopped before it (its budget): raise sweep_budget_prompts or sweep_budget_tokens'
        if any(kind in reason for kind in UNTESTED_KIND)
        else ''
    )
    return f'subset {subset}: effective context length {text} ({length_unit(tokenizer)}): unknown, not failed{retry}'


# Outside this band the grid's length labels are not the model's own tokens, and the report says so in words.
SERVED_RATIO_BAND = (0.95, 1.05)


def served_ratios(results: Sequence[SampleResult]) -> list[float]:
    """Served prompt tokens (the server's usage) over planned ones (the cell's exact length), per sample."""
    return [r.served_prompt_tokens / r.context_length for r in results if r.served_prompt_tokens]


def _served_ratio(results: Sequence[SampleResult]) -> list[MetricRecord]:
    ratios = served_ratios(results)
    return [MetricRecord('served_prompt_ratio', float(statistics.median(ratios)), len(ratios))] if ratios else []


def served_drift_message(results: Sequence[SampleResult], *, subset: str, tokenizer: str) -> str | None:
    """One sentence when the model read notably more or fewer tokens than the lengths say; None when they agree."""
    ratios = served_ratios([result for result in results if result.subset == subset])
    if not ratios:
        return None
    median = statistics.median(ratios)
    if SERVED_RATIO_BAND[0] <= median <= SERVED_RATIO_BAND[1]:
        return None
    return (
        f'subset {subset}: lengths are {tokenizer} tokens; this model read {median:.2f}x as many (median; '
        f'min {min(ratios):.2f}x, max {max(ratios):.2f}x over {len(ratios)} samples). Size the grid in its own '
        "tokens with tokenizer_path: 'server' or its tokenizer"
    )


def _effective_lengths(
    results: Sequence[SampleResult], *, threshold: float, mode: str, effective: Mapping[str, EffectiveLength]
) -> list[MetricRecord]:
    records = []
    for subset in sorted({result.subset for result in results}):
        found = effective.get(subset) or effective_context_length(
            results, subset=subset, threshold=threshold, mode=mode
        )
        # 0 when even the shortest length falls below the threshold; a bound reports the lengths known to pass, and
        # nothing when even the shortest is unknown (a 0 would read as a finding about the model).
        if found.per_length and not (found.length is None and found.unknown_length is not None):
            n = sum(item.n for item in found.per_length)
            records.append(MetricRecord('effective_context_length', float(found.length or 0), n))
            # The same length in the model's own tokens (what its server said it read), when the labels are not.
            served = [
                r.served_prompt_tokens
                for r in results
                if r.subset == subset and r.context_length == found.length and r.served_prompt_tokens
            ]
            if served and statistics.median(served) != found.length:
                records.append(
                    MetricRecord('effective_context_length_served', float(statistics.median(served)), len(served))
                )
    return records


def _control_rates(controls: Sequence[SampleResult]) -> list[MetricRecord]:
    # Control cells measure guessing, not retrieval: their own rates, never part of accuracy.
    records = []
    for name, values in (
        ('absent_abstention_rate', [result.accuracy for result in controls]),
        ('absent_guess_rate', [float(bool(result.task_values.get(GUESSED))) for result in controls]),
    ):
        scored = [value for value in values if value is not None]
        if scored:
            records.append(MetricRecord(name, sum(scored) / len(scored), len(scored)))
    return records


def _subset_shares(results: Sequence[SampleResult]) -> list[MetricRecord]:
    records = []
    for summary in summarize_subsets(results, pass_mark=RULE_PASS_THRESHOLD):
        # Errors, budget failures and replies with no final answer as shares of every sample of the subset
        # (count * share = exact count).
        total = sum(result.subset == summary.subset for result in results)
        values = {
            'judge_rule_agreement': (summary.agreement.share_agree, summary.n),
            'judge_rule_kappa': (summary.agreement.kappa, summary.n),
            'judge_failures': (float(summary.judge_failures), summary.n),
            'inference_error_rate': (summary.errors / total, total),
            'budget_exhausted_rate': (summary.budget_exhausted / total, total),
            'no_answer_rate': (summary.no_answer / total, total),
        }
        records += [MetricRecord(name, value, n) for name, (value, n) in values.items() if value is not None]
    return records
