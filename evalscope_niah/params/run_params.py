"""The run's own parameters in one typed model: every ``extra_params`` name but those a task declares for itself.

``NiahParams`` is assembled from small groups, one module each, whose fields are flat ``extra_params`` names: the grid
(``grid``), the subsets (``subsets``), sample making (``placement``), grading (``scoring``), sending
(``sending``), run-size bounds (``limits``) and other tools' names (``aliases``, ``kamradt_names``).
``tasks.compose.parse_params`` composes it with each registered task's ``TaskParams`` model into the flat
``extra_params`` users write; names and defaults of EvalScope's built-in ``needle_haystack`` are kept so existing
configs keep working. This module knows no task: a task reads its own parameters with ``NiahParams.task_params``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, PrivateAttr, model_validator

from ..errors import NiahConfigError
from ..metadata import GridCell
from .aliases import ALIASES, AliasParams
from .grading import ScoringParams
from .grid import GridParams
from .kamradt_names import KamradtParams
from .limits import LimitsParams
from .placement import PlacementParams
from .request_routing import SendingParams
from .run_size import check_sample_count
from .subsets import ResolvedSubset, SubsetParams, check_subset_list
from .sweep import SweepParams, check_budget_fits

__all__ = ['ALIASES', 'NiahParams', 'TaskParams']


class TaskParams(BaseModel):
    """A task's own parameters: a task subclasses this with its fields (each with its default, description and
    checks). Its field names are flat ``extra_params`` names, unique across the run model and every task."""

    model_config = ConfigDict(extra='forbid', frozen=True)


P = TypeVar('P', bound=TaskParams)


# Pydantic lists the fields of the last base first: the groups are named here in the reverse of the order in which
# EvalScope's spec and the messages list them (subsets, grid, sweep, sample making, grading, sending, other names,
# limits).
class NiahParams(
    LimitsParams,
    KamradtParams,
    AliasParams,
    SendingParams,
    ScoringParams,
    PlacementParams,
    SweepParams,
    GridParams,
    SubsetParams,
    BaseModel,
):
    """The run's parameters: every ``extra_params`` name but those a task declares in its own ``TaskParams``, from
    the groups it is assembled of (each group's fields, defaults and checks live in its module)."""

    model_config = ConfigDict(extra='forbid', frozen=True)

    # Each task's own parameters by model type, set by params.parse_params; empty means every task's defaults.
    _task_params: dict[type[TaskParams], TaskParams] = PrivateAttr(default_factory=dict)
    # Samples per grid cell, as the run's tasks pick them; set by tasks.compose.parse_params (see needles_per_cell).
    _needles_per_cell: int = PrivateAttr(default=1)

    @model_validator(mode='after')
    def _sweep_fits_the_grid(self) -> NiahParams:
        if self.sweep == 'grid':
            for name in ('sweep_budget_prompts', 'sweep_budget_tokens'):
                if getattr(self, name) is not None:
                    raise NiahConfigError(name, "is the adaptive sweep's budget: give sweep: 'adaptive' with it")
        elif self.absent_control:
            raise NiahConfigError(
                'sweep',
                "'adaptive' does not send needle-absent controls (it chooses needle samples by their scores): "
                "run absent_control with sweep: 'grid'",
            )
        else:
            check_budget_fits(
                self.sweep_budget_tokens,
                shortest_length=min(self.context_length_grid()),
                tokenizer=self.tokenizer_path,
            )
        return self

    # ---- derived values -------------------------------------------------------------------------------------

    def cells(self, subsets: Sequence[str]) -> list[GridCell]:
        """Every cell of the grid in generation order: subsets outer, then lengths, then depths (as the built-in),
        then the length's control cell, replicates (repeats x needle picks) innermost."""
        lengths, depths = self.context_length_grid(), self.depth_percent_grid()
        positions: list[float | None] = [*depths, None] if self.absent_control else list(depths)
        picks = self.needles_per_cell()
        return [
            GridCell(subset, length, depth, repeat, pick)
            for subset in subsets
            for length in lengths
            for depth in positions
            for repeat in range(self.num_repeats)
            for pick in range(picks)
        ]

    def samples_per_subset(self) -> int:
        """Samples of one subset: what ``cells`` yields per subset (lengths x depths/control x repeats x picks),
        computed without building the grid."""
        positions = len(self.depth_percent_grid()) + (1 if self.absent_control else 0)
        return len(self.context_length_grid()) * positions * self.num_repeats * self.needles_per_cell()

    def resolve_subsets(self, names: Any) -> list[ResolvedSubset]:
        """The subsets a run selects (``subset_list``), checked as a whole: a list of distinct, known, safe names, and
        a run size within ``MAX_SAMPLES_PER_RUN`` unless ``allow_large_grid``. Preview, ``--estimate`` and the
        adapter all come through here, so they accept and refuse the same runs."""
        names = check_subset_list(names)
        resolved = [self.resolve_subset(name) for name in names]
        self.check_run_size(subset_count=len(names))
        return resolved

    def needles_per_cell(self) -> int:
        """Samples per grid cell: what the run's tasks pick (a needle bank's n_needles x n_runs), set when the tasks
        compose the parameters (``tasks.compose.parse_params``); 1 for a model built without them."""
        return self._needles_per_cell

    def with_needles_per_cell(self, picks: int) -> NiahParams:
        """A copy whose cells each hold ``picks`` samples (the tasks' ``Task.needles_per_cell``)."""
        copy = self.model_copy()
        copy._needles_per_cell = picks
        return copy

    def check_run_size(self, *, subset_count: int) -> int:
        """Samples of the run (``samples_per_subset`` x subsets), refused above the limits of ``run_size``."""
        shape = (
            f'{subset_count} subset(s) x {len(self.context_length_grid())} lengths x '
            f'{len(self.depth_percent_grid()) + (1 if self.absent_control else 0)} depths'
            f'{" (control included)" if self.absent_control else ""} x {self.num_repeats} num_repeats x '
            f'{self.needles_per_cell()} needle picks'
        )
        total = self.samples_per_subset() * subset_count
        return check_sample_count(total, shape=shape, allow_large_grid=self.allow_large_grid)

    def given_task_params(self, model: type[P]) -> P | None:
        """A task's own parameters (its ``TaskParams`` model) as given in extra_params; None when left at their
        defaults (``tasks.base.task_params`` makes those: the task's model is the task's code, not this floor's)."""
        given = self._task_params.get(model)
        return given if isinstance(given, model) else None

    def replacing_task_params(self, model: TaskParams) -> NiahParams:
        """A copy with one task's parameter model replaced, the others kept."""
        return self.with_task_params({**self._task_params, type(model): model}.values())

    def with_task_params(self, given: Iterable[TaskParams]) -> NiahParams:
        """A copy holding the task parameter models ``given``; the caller leaves out those at their defaults
        (``tasks.compose``), so that parameters written out at their defaults equal no parameters at all."""
        copy = self.model_copy()
        copy._task_params = {type(model): model for model in given}
        return copy
