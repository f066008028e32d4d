"""What the adapter knows of a run once it has planned it, filled in one place.

EvalScope calls the adapter's hooks at different times and from different threads; what they read about the run's
plan (the sampler of each subset, the cells the grid expects, the judge check's verdicts) is decided by
``NiahAdapter.load`` alone and never changes after it. It is one frozen ``RunPlan``, set once at the end of ``load``,
so no hook sees half of it and no hook fills a piece of it later. What a run gathers as it goes (results, errors,
the ledger of samples asked) stays with the hooks that gather it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..making.samples import SubsetSampler
    from ..metadata import GridCell

__all__ = ['RunPlan']


@dataclass(frozen=True)
class RunPlan:
    """The run as ``load`` planned it; empty before ``load`` (a hook called earlier finds no subset)."""

    samplers: Mapping[str, SubsetSampler] = field(default_factory=dict)  # subset -> its sampler
    # subset -> sample id -> its cell in this grid: reviews reject a cached prediction of another grid's row
    expected_cells: Mapping[str, Mapping[Any, GridCell]] = field(default_factory=dict)
    judge_check: Mapping[str, Any] = field(default_factory=dict)  # subset -> the judge's QualificationResult

    @property
    def rule_fallback(self) -> frozenset[str]:
        """The subsets scored by rule because the judge failed its check for them."""
        return frozenset(subset for subset, result in self.judge_check.items() if not result.qualified)
