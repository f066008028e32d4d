"""Task types: one class per task, found by name. Importing this package registers the built-in tasks.

This is the registry's face (``get_task``, ``task_names``, ``score_answer``, ...). What a task author writes against
(``Task``, ``NeedleChoice``, ``PlanContext``, the rule pieces) is imported from one place, ``tasks.kit``."""

from __future__ import annotations

from ..metadata import SampleMeta
from ..scoring import PromptText
from ..scoring.result import RuleScore
from .associative.task import Associative
from .base import ReportedValue, Task
from .control.task import ABSENT_CONTROL, ABSENT_REFERENCE, AbsentControl
from .multi_retrieval.task import MultiRetrieval
from .plugins import failed_plugins, load_entry_point_tasks, plugin_report, plugin_tasks
from .reasoning.task import ReasoningChain
from .registry import get_task, register_task, set_task_loader, task_names, unregister_task, without_plugins
from .ruler_niah.task import RulerNiah
from .single.task import SingleNeedle

# In this order in every list of choices; a task added elsewhere is one more register_task call, or an entry point
# of another installed package (plugins.py: loaded when a lookup needs more than the registered tasks, never at
# import).
for _builtin in (SingleNeedle, MultiRetrieval, ReasoningChain, Associative, RulerNiah):
    register_task(_builtin)
set_task_loader(load_entry_point_tasks)
# A task folder in this tree whose task.py ends with register_task(MyTask) is one import line here, below the
# built-ins so that every list of choices keeps their order (docs/en/development.md, 'Adding a task'):
# 'from .my_task import task as _my_task', with ruff's noqa for E402 and F401 (imported late, for its effect).

__all__ = [
    'ABSENT_CONTROL',
    'ABSENT_REFERENCE',
    'AbsentControl',
    'Associative',
    'MultiRetrieval',
    'ReasoningChain',
    'RulerNiah',
    'SingleNeedle',
    'Task',
    'failed_plugins',
    'get_task',
    'judge_reference',
    'load_entry_point_tasks',
    'plugin_report',
    'plugin_tasks',
    'register_task',
    'reported_value_declarations',
    'reported_values',
    'score_answer',
    'task_for',
    'task_names',
    'unregister_task',
    'without_plugins',
]


def task_for(meta: SampleMeta) -> Task:
    """The task that scores this sample: its own, or the control for a needle-absent cell."""
    return ABSENT_CONTROL if meta.control else get_task(meta.task)


def score_answer(final_answer: str, meta: SampleMeta, *, prompt: PromptText | None = None) -> RuleScore:
    """Rule score of a final answer (reasoning stripped) for its sample's task; ``prompt`` is what the model was
    shown (the evidence of a pasted answer)."""
    return task_for(meta).rule_score(final_answer, meta, prompt=prompt)


def judge_reference(meta: SampleMeta) -> str:
    """The reference as the judge reads it, with the sample's task hint: the run and the judge check both use it."""
    return task_for(meta).judge_reference(meta)


def reported_values() -> tuple[str, ...]:
    """Every value a selectable task reports beside the shared ones: the cells CSV has a column for each."""
    return tuple(dict.fromkeys(value.name for task in task_names() for value in get_task(task).reported_values))


def reported_value_declarations() -> tuple[ReportedValue, ...]:
    """What each value reported by a registered task or the needle-absent control means, one per name (register_task
    refuses a second meaning): a report declares them so none shows as an unexplained number."""
    declared: dict[str, ReportedValue] = {}
    for task in [*(get_task(name) for name in task_names()), ABSENT_CONTROL]:
        for value in task.reported_values:
            declared.setdefault(value.name, value)
    return tuple(declared.values())
