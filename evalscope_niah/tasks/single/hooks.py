"""What a task may do beyond every task's contract (``Task``), which only ``single`` does today: pick its needles from
a needle bank, read the user's needles, check the run's parameters as a whole, name a file beside the corpus, and
grade several values in the judge check.

``Task`` keeps only the hooks every task needs, so an author reads what matters. A task that needs these implements
``NeedleSourceHooks`` (all of it: the check is structural, as ``isinstance`` on a ``runtime_checkable`` Protocol is);
callers never call the hooks on a task directly but through the functions below, which ask the task when it has the
hooks and otherwise answer as every other task does.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ...metadata import SampleMeta
    from ...params.run_params import NiahParams
    from ...params.subsets import ResolvedSubset
    from ..base import Task

__all__ = [
    'NeedleSourceHooks',
    'asks_user_needles',
    'calibration_values',
    'check_run_params',
    'corpus_folder_params',
    'needles_per_cell',
    'picks_for_subset',
    'sent_texts',
    'several_answer_keys',
]


@runtime_checkable
class NeedleSourceHooks(Protocol):
    """The hooks of a task that chooses where its needles come from (``single``: the subset's, or a bank's picks)."""

    def asks_user_needles(self, *, keyword: str | None) -> bool:
        """Called while the run's parameters are composed, per subset of this task (``keyword``: the subset's or the
        run's chain keyword): whether the subset asks about the needles and question the user gives. Return False
        and giving them is refused (they would be ignored)."""
        ...

    def check_params(self, params: NiahParams) -> None:
        """Called once per run while the parameters are composed, whether the run uses this task or not: raise one
        ``NiahConfigError`` naming the parameter when the run's parameters contradict this task's own (or would be
        silently overridden by them); return None when they agree."""
        ...

    def needles_per_cell(self, params: NiahParams) -> int:
        """Called once per run after the parameters are composed: how many samples each grid cell holds for this
        task (``GridCell.pick`` runs over them), 1 or more; the run takes the largest over its tasks."""
        ...

    def picks(self, subset: ResolvedSubset, params: NiahParams) -> tuple[Any, ...]:
        """Called once per subset before its cells are planned: what the task picks for it (a bank's entries), one
        entry per pick of a cell; ``choose`` reads them as ``PlanContext.picks``. Return () when it picks nothing."""
        ...

    def with_corpus_folder(self, params: NiahParams, folder: Path) -> NiahParams:
        """Called once per run when the corpus folder is known (the run's ``task``'s hooks only): the parameters with
        this task's own files named relative to ``folder`` resolved in it; ``params`` itself when none are."""
        ...

    def calibration_values(self, meta: SampleMeta) -> tuple[str, ...]:
        """Called by the judge check for each sample it calibrates on: the values a right answer names when this
        sample asks for several (the calibration's answers then name them all; one alone is part credit); () when
        the answer is one value."""
        ...

    def sent_texts(self, params: NiahParams) -> tuple[list[tuple[str, str]], list[tuple[str, str]]] | None:
        """Called once per run before any request, per subset of this task: the needles and questions it may send
        in place of the subset's own, as (parameter, text) pairs, so they are checked as the subset's are; None:
        the subset's own."""
        ...


def asks_user_needles(task: Task, *, keyword: str | None) -> bool:
    """Whether a subset of ``task`` asks about the user's needles and question: its hook, else a chain task's when a
    keyword makes them a chain (``Task.uses_user_chain``)."""
    if isinstance(task, NeedleSourceHooks):
        return task.asks_user_needles(keyword=keyword)
    return task.uses_user_chain and keyword is not None


def check_run_params(task: Task, params: NiahParams) -> None:
    """The task's check of the run's parameters as a whole (``NeedleSourceHooks.check_params``); nothing else for a
    task whose own parameters are checked field by field in their model."""
    if isinstance(task, NeedleSourceHooks):
        task.check_params(params)


def needles_per_cell(task: Task, params: NiahParams) -> int:
    """Samples per grid cell ``task`` picks: its hook, else 1."""
    return task.needles_per_cell(params) if isinstance(task, NeedleSourceHooks) else 1


def picks_for_subset(task: Task, subset: ResolvedSubset, params: NiahParams) -> tuple[Any, ...]:
    """What ``task`` picks for a subset once (``PlanContext.picks``): its hook, else ()."""
    return task.picks(subset, params) if isinstance(task, NeedleSourceHooks) else ()


def corpus_folder_params(task: Task, params: NiahParams, folder: Path) -> NiahParams:
    """The parameters with ``task``'s own files resolved in the corpus folder: its hook, else ``params``."""
    return task.with_corpus_folder(params, folder) if isinstance(task, NeedleSourceHooks) else params


def calibration_values(task: Task, meta: SampleMeta) -> tuple[str, ...]:
    """The values a right answer to ``meta`` names when it asks for several: the task's hook, else every answer key
    when there are several, () when there is one."""
    if isinstance(task, NeedleSourceHooks):
        return task.calibration_values(meta)
    return several_answer_keys(meta)


def several_answer_keys(meta: SampleMeta) -> tuple[str, ...]:
    """Every answer key of a sample that has several; () for one (what most tasks' judge check calibrates on)."""
    return meta.answer_keys if len(meta.answer_keys) > 1 else ()


def sent_texts(task: Task, params: NiahParams) -> tuple[list[tuple[str, str]], list[tuple[str, str]]] | None:
    """The needles and questions ``task`` may send in place of a subset's own: its hook, else None (the subset's)."""
    return task.sent_texts(params) if isinstance(task, NeedleSourceHooks) else None
