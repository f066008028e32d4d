"""The adapter's knowledge of a run, in two objects: what it decided (``RunPlan``) and what the run gathers as it goes
(``RunTally``).

EvalScope calls the adapter's hooks at different times and from different threads. What they read about the run's
plan (its parameters, prompt, the sampler of each subset, the cells the grid expects, the judge check's verdicts) is
decided by ``NiahAdapter.__init__`` (from what EvalScope hands over) and ``NiahAdapter.load``, and never changes
after it: one frozen ``RunPlan``, made in ``__init__`` and replaced whole at the end of ``load``, so no hook sees half
of it and no hook fills a piece of it later.

What the run gathers (the samples asked, their result rows and error rows, where the reports go, an adaptive sweep's
plan, the live pages, what the server said of its token counts, the prefix gate's turns) is one ``RunTally``, filled
only through its named methods, under one lock: worker threads record errors while the main thread aggregates.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..metadata import SampleMeta
from ..reporting.sample_record import SampleResult
from ..serving.prefix_gate import PrefixGate
from ..serving.server_values import ServerValues
from .score_rows import LOST_SAMPLE_ERROR, error_result

if TYPE_CHECKING:
    from ..making.prompts import PromptSpec
    from ..making.samples import SubsetSampler
    from ..metadata import GridCell
    from ..params.run_params import NiahParams
    from ..reporting.live import LiveRun
    from ..reporting.result_files import SubsetEffective
    from ..serving.redact import Redactor

__all__ = ['RunPlan', 'RunTally', 'report_dir_of']


def report_dir_of(prediction_dir: str) -> str:
    """reports/<model_id>, the sibling of EvalScope's predictions/<model_id>: where the run's results files go."""
    return os.path.join(os.path.dirname(os.path.dirname(prediction_dir)), 'reports', os.path.basename(prediction_dir))


@dataclass(frozen=True)
class RunPlan:
    """The run as the adapter planned it. ``__init__`` fills what EvalScope hands over (parameters, prompt, model id,
    the redactor of its keys); ``load`` adds the subsets: before it a hook finds no subset."""

    params: NiahParams | None = None
    prompt: PromptSpec | None = None  # the run's system prompt and user template, validated once
    # What a sample holds until its turn comes (its haystack is built then): the system prompt and a placeholder.
    pending_messages: tuple[Mapping[str, str], ...] = ()
    model_id: str | None = None  # the user's model id (its folder has the safe name)
    redactor: Redactor | None = None  # server text (errors, replies) can quote the run's keys: redacted with it
    samplers: Mapping[str, SubsetSampler] = field(default_factory=dict)  # subset -> its sampler
    # subset -> sample id -> its cell in this grid: reviews reject a cached prediction of another grid's row
    expected_cells: Mapping[str, Mapping[Any, GridCell]] = field(default_factory=dict)
    judge_check: Mapping[str, Any] = field(default_factory=dict)  # subset -> the judge's QualificationResult

    def loaded(self, **subsets: Any) -> RunPlan:
        """This plan with what ``load`` decided (samplers, expected_cells, judge_check)."""
        return dataclasses.replace(self, **subsets)

    @property
    def rule_fallback(self) -> frozenset[str]:
        """The subsets scored by rule because the judge failed its check for them."""
        return frozenset(subset for subset, result in self.judge_check.items() if not result.qualified)


class RunTally:
    """What the run has gathered so far. Every sample asked ends as a row: a score, an error it raised after every
    retry, or, when EvalScope failed after our hooks returned (a reply arrived, no prediction or review was saved),
    an error row saying it was lost (:data:`LOST_SAMPLE_ERROR`). A sample the adaptive sweep asks again keeps one
    row, its last try's. Filled from worker threads and the main thread: every method holds the lock."""

    def __init__(self, *, server: str = '', prefix_gate: PrefixGate | None = None) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, dict[Hashable, SampleMeta]] = defaultdict(dict)  # subset -> asked, no row yet
        self._scored: dict[str, list[SampleResult]] = {}  # subset -> its rows, as EvalScope aggregated it
        self._errors: dict[str, dict[Hashable, SampleResult]] = defaultdict(dict)  # subset -> sample id -> row
        self._effective: dict[str, SubsetEffective] = {}  # subset -> the effective length its report was given
        self._report_dir: str | None = None
        self._sweep_plan: dict[str, Any] | None = None
        self._outputs_written = False
        self._live: LiveRun | None = None
        # What the model server says of its token counts (implausible values dropped, warned of once).
        self.server_values = ServerValues(f'the model server {server}'.strip())
        # In a prefix order a deep prompt waits for the earlier one computing its prefix (the evaluator plans it).
        self.prefix_gate = prefix_gate

    # ---- samples asked and their rows ---------------------------------------------------------------------------

    def asked(self, sample_id: Hashable, meta: SampleMeta, *, prediction_dir: str) -> None:
        """A sample is sent; its predictions go to ``prediction_dir`` (reports/<model_id> is that folder's sibling,
        kept for runs where every sample errors)."""
        report_dir = report_dir_of(prediction_dir)
        with self._lock:
            self._report_dir = report_dir
            self._open[meta.subset][sample_id] = meta

    def scored(self, subset: str, rows: list[tuple[Hashable, SampleResult]]) -> None:
        """EvalScope aggregated ``subset``: its scored rows (sample id, row), which end those samples."""
        with self._lock:
            self._scored[subset] = [row for _, row in rows]
            for sample_id, _ in rows:
                self._open[subset].pop(sample_id, None)

    def errored(self, sample_id: Hashable, row: SampleResult) -> None:
        """A sample raised after every retry: its error row, which ends it (the live page shows it at its next
        update)."""
        with self._lock:
            self._open[row.subset].pop(sample_id, None)
            self._errors[row.subset][sample_id] = row
            live = self._live
        if live is not None:
            live.add(row)

    def close_lost(self, subsets: Iterable[str] | None = None) -> None:
        """Each sample of ``subsets`` (None: all) asked and never ended gets its lost-sample error row."""
        with self._lock:
            chosen = list(self._open) if subsets is None else [subset for subset in subsets if subset in self._open]
            lost = [
                (sample_id, error_result(meta, LOST_SAMPLE_ERROR))
                for subset in sorted(chosen)
                for sample_id, meta in self._open.pop(subset).items()  # in the order they were asked
            ]
        for sample_id, row in lost:
            self.errored(sample_id, row)

    def forget_errors(self, subset: str, sample_ids: Iterable[Hashable]) -> None:
        """Samples the adaptive sweep asks again: their error row leaves the results."""
        with self._lock:
            for sample_id in sample_ids:
                self._errors.get(subset, {}).pop(sample_id, None)

    def effective_found(self, found: Mapping[str, SubsetEffective]) -> None:
        """The effective lengths EvalScope's report was given (per subset, with their rows): the run's files state
        them again where their rows are the same (``reporting.result_files.subset_effective``)."""
        with self._lock:
            self._effective.update(found)

    def effective(self) -> dict[str, SubsetEffective]:
        with self._lock:
            return dict(self._effective)

    def errors_of(self, subset: str) -> list[SampleResult]:
        with self._lock:
            return list(self._errors.get(subset, {}).values())

    def error_subsets(self) -> set[str]:
        with self._lock:
            return {subset for subset, rows in self._errors.items() if rows}

    def rows(self) -> list[SampleResult]:
        """Every row so far, subset by subset: the scored ones, then the error rows."""
        with self._lock:
            subsets = sorted(set(self._scored) | {subset for subset, rows in self._errors.items() if rows})
            return [
                row
                for subset in subsets
                for row in [*self._scored.get(subset, []), *self._errors.get(subset, {}).values()]
            ]

    # ---- where the run's files go, and its pages ----------------------------------------------------------------

    @property
    def report_dir(self) -> str | None:
        with self._lock:
            return self._report_dir

    def sweep_planned(self, entries: dict[str, Any]) -> None:
        """An adaptive sweep's plan so far (its subset entries): the final pages draw its untested cells."""
        with self._lock:
            self._sweep_plan = entries

    @property
    def sweep_plan(self) -> dict[str, Any] | None:
        with self._lock:
            return self._sweep_plan

    def outputs_written(self) -> None:
        with self._lock:
            self._outputs_written = True

    @property
    def has_outputs(self) -> bool:
        with self._lock:
            return self._outputs_written

    def live_started(self, live: LiveRun) -> None:
        with self._lock:
            self._live = live

    @property
    def live(self) -> LiveRun | None:
        with self._lock:
            return self._live
