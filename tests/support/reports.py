"""Reading scores back out of an EvalScope Report, as the tests compare them."""

from __future__ import annotations


def cell_scores(report) -> dict[tuple[str, int, int], float]:
    """(subset, context length, depth) -> accuracy, from the per-cell metric dimensions."""
    scores = {}
    for metric in report.metrics:
        dims = metric.identity.dimensions
        if metric.identity.name == 'accuracy' and 'context_length' in dims:
            for category in metric.categories:
                for subset in category.subsets:
                    scores[(subset.name, dims['context_length'], dims['depth_percent'])] = subset.score
    return scores


def overall_scores(report) -> dict[str, float]:
    return {m.identity.name: m.score for m in report.metrics if m.identity.dimensions == {'scope': 'overall'}}
