"""What each of our metrics means, declared through EvalScope's metric-semantics catalog, and the OVERALL row
each one gets.

EvalScope resolves a report metric's display contract (direction, unit, percent or count) from its catalog and
warns about names it does not know, telling users to edit EvalScope. The catalog's per-benchmark table is the
mechanism it offers for a benchmark's own names, so our names are declared there for both of our benchmark names.
The values a task reports are declared by the task (``Task.reported_values``) and read from the registered tasks each
time, so a task registered after import is declared when its run aggregates its scores.
The table is module data, not a registration function, so writing it is guarded like the override: a changed
EvalScope gets no declarations (its warnings come back) rather than a failed run.
"""

from __future__ import annotations

from typing import Any

from ..escaping import inert_logger
from ..reporting.run_metrics import OVERALL_AGGREGATION
from ..tasks import reported_value_declarations
from ..tasks.base import ReportedValue
from .evalscope_surface import METRIC_ENTRY, METRIC_OVERRIDES, SEMANTICS_CACHE, resolve

__all__ = ['declarations', 'declare_metric_semantics', 'fix_overall_rows']

logger = inert_logger(__name__)

# name -> (EvalScope baseline id, display name, overrides) of the metrics every run reports. Rates are ratios shown as
# percents; counts and lengths are plain numbers; diagnostics carry no direction, so no dashboard ranks models by them.
_DECLARATIONS: dict[str, tuple[str, str, dict[str, Any]]] = {
    'rule_recall': ('quality.recall.ratio', 'Rule recall', {}),
    'levenshtein': ('quality.similarity.ratio', 'Levenshtein similarity', {}),
    'judge_accuracy': ('quality.accuracy.ratio', 'Judge accuracy', {}),
    'abstained': ('quality.score.ratio', 'Abstained', {}),
    'absent_abstention_rate': ('quality.score.ratio', 'Needle-absent abstention', {}),
    'absent_guess_rate': ('quality.error_rate.ratio', 'Needle-absent guess rate', {}),
    'effective_context_length': (
        'quality.model_score.unbounded',
        'Effective context length',
        {'raw_unit': 'tokens', 'display_unit': 'tokens', 'display_precision': 0},
    ),
    'effective_context_length_served': (
        'quality.model_score.unbounded',
        "Effective context length (model's tokens)",
        {'raw_unit': 'tokens', 'display_unit': 'tokens', 'display_precision': 0},
    ),
    'judge_rule_agreement': ('diagnostic.parse_status.ratio', 'Judge-rule agreement', {}),
    'judge_rule_kappa': ('diagnostic.posterior_sd.ratio', "Judge-rule Cohen's kappa", {'display_precision': 2}),
    'judge_failures': ('diagnostic.count.items', 'Judge failures', {}),
    'served_length_mismatches': ('diagnostic.count.items', 'Served length mismatches', {}),
    'inference_error_rate': ('diagnostic.parse_status.ratio', 'Inference error rate', {}),
    'budget_exhausted_rate': ('diagnostic.parse_status.ratio', 'Answer budget exhausted', {}),
    'no_answer_rate': ('diagnostic.parse_status.ratio', 'No final answer (reasoning or tool call only)', {}),
    'served_prompt_ratio': (
        'diagnostic.posterior_sd.ratio',
        'Served / planned prompt tokens',
        {'display_precision': 2},
    ),
}


def _task_declaration(value: ReportedValue) -> tuple[str, str, dict[str, Any]]:
    # Every task value is a share of samples; what it measures picks EvalScope's baseline, and with it the direction.
    return (f'quality.{value.measure}.ratio', value.label, {})


def declarations() -> dict[str, tuple[str, str, dict[str, Any]]]:
    """Every metric we declare: the shared ones and the values of the tasks registered now."""
    tasks = {value.name: _task_declaration(value) for value in reported_value_declarations()}
    return {**tasks, **_DECLARATIONS}  # a task cannot redeclare a shared metric


def declare_metric_semantics(benchmark_names: tuple[str, ...]) -> bool:
    """Declare every metric we emit for each benchmark name; False (and nothing written) on a changed EvalScope."""
    try:
        overrides, entry_type, clear_resolver_cache = (
            resolve(hook) for hook in (METRIC_OVERRIDES, METRIC_ENTRY, SEMANTICS_CACHE)
        )
    except (ImportError, AttributeError) as exc:
        logger.debug('metric semantics not declared: %s', exc)
        return False
    if not isinstance(overrides, dict):
        return False
    try:
        entries = {
            name: _entry(entry_type, baseline, display, changes)
            for name, (baseline, display, changes) in declarations().items()
        }
        for name, entry in entries.items():
            entry.resolve(name)  # validates against this EvalScope's contract before anything is written
    except Exception as exc:  # a changed contract: leave the catalog as it is
        logger.debug('metric semantics not declared: %s', exc)
        return False
    for benchmark in benchmark_names:
        for name, entry in entries.items():
            overrides[(benchmark, name)] = entry
    clear_resolver_cache()
    return True


def _entry(entry_type: Any, baseline: str, display: str, overrides: dict[str, Any]) -> Any:
    # EvalScope names a quality metric by metric_name and lets only diagnostics carry a separate display_name.
    label = 'display_name' if baseline.startswith('diagnostic.') else 'metric_name'
    return entry_type(baseline=baseline, **{label: display}, **overrides)


def fix_overall_rows(report: Any) -> None:
    """EvalScope's OVERALL is the sample-weighted mean of the subsets: right for rates, wrong for a count (the sum)
    or a length (the mean of two lengths is no length on the grid). Set those from the subset rows."""
    for metric in getattr(report, 'metrics', []):
        how = OVERALL_AGGREGATION.get(metric.identity.name)
        if how is None:
            continue
        values = [subset.score for category in metric.categories for subset in category.subsets if subset.num]
        if values:
            metric.score = float(sum(values)) if how == 'sum' else float(min(values))
