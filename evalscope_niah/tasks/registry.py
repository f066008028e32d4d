"""Tasks by name. The registry and its lock are declared here, at the top, so the one place that decides which
tasks exist is visible; registering is idempotent for the same class and refuses a second class under a name."""

from __future__ import annotations

import threading

from ..errors import NiahConfigError
from ..params.run_params import ALIASES, NiahParams
from .base import Task

__all__ = ['get_task', 'register_task', 'task_names']

_TASKS: dict[str, Task] = {}
_LOCK = threading.Lock()


def register_task(cls: type[Task]) -> type[Task]:
    """Class decorator: make ``cls.name`` selectable as ``task`` and its parameters valid ``extra_params`` names."""
    # Every parameter needs a default: a run of another task never gives it.
    cls.params_model()
    with _LOCK:
        current = _TASKS.get(cls.name)
        if current is not None and type(current) is not cls:
            raise ValueError(f'task {cls.name!r} is already registered by {type(current).__qualname__}')
        for name in cls.params_model.model_fields:
            # Parameter names are flat: one name, one owner.
            owner = next((task.name for task in _TASKS.values() if name in task.params_model.model_fields), None)
            if name in NiahParams.model_fields or name in ALIASES or owner not in (None, cls.name):
                raise ValueError(
                    f'task {cls.name!r}: parameter {name!r} is already a parameter of {owner or "the run"}'
                )
        for value in cls.reported_values:
            # A report declares one meaning per value name: a second meaning would be shown with the first's.
            clash = next(
                (
                    (task.name, other)
                    for task in _TASKS.values()
                    if task.name != cls.name
                    for other in task.reported_values
                    if other.name == value.name and other != value
                ),
                None,
            )
            if clash is not None:
                raise ValueError(
                    f'task {cls.name!r}: reported value {value.name!r} is already declared by task {clash[0]!r} as '
                    f'{clash[1]!r}; declare the same meaning or use another name'
                )
        _TASKS[cls.name] = cls()
    return cls


def unregister_task(name: str) -> None:
    """Remove a task (tests register temporary ones)."""
    with _LOCK:
        _TASKS.pop(name, None)


def task_names() -> tuple[str, ...]:
    with _LOCK:
        return tuple(_TASKS)


def get_task(name: str) -> Task:
    with _LOCK:
        task = _TASKS.get(name)
    if task is None:
        raise NiahConfigError('task', f'unknown task {name!r}; choose one of {", ".join(task_names())}')
    return task
