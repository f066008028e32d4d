"""Tasks from other installed packages: each entry point of the ``evalscope_niah.tasks`` group names a Task
subclass (``my_task = "my_package.task:MyTask"`` under ``[project.entry-points."evalscope_niah.tasks"]``), and the
package registers it when ``evalscope_niah.tasks`` is imported, so a user never has to remember an import.

One switch, ``EVALSCOPE_NIAH_LOAD_TASKS``: unset loads every entry point; a comma-separated list of entry-point
names loads only those; empty loads none (a broken plugin can be left out this way). Loading is idempotent: each
entry point once per process, and registering the same class again is a no-op."""

from __future__ import annotations

import os
import threading
from importlib.metadata import EntryPoint, entry_points

from .registry import register_task

__all__ = ['ENTRY_POINT_GROUP', 'LOAD_SWITCH', 'load_entry_point_tasks']

ENTRY_POINT_GROUP = 'evalscope_niah.tasks'
LOAD_SWITCH = 'EVALSCOPE_NIAH_LOAD_TASKS'

_LOADED: set[tuple[str, str]] = set()  # (name, value) of every entry point registered in this process
_LOCK = threading.Lock()


def _wanted(found: list[EntryPoint]) -> list[EntryPoint]:
    chosen = os.environ.get(LOAD_SWITCH)
    if chosen is None:
        return found
    names = {name.strip() for name in chosen.split(',') if name.strip()}
    return [entry for entry in found if entry.name in names]


def load_entry_point_tasks() -> tuple[str, ...]:
    """Register the task of every wanted entry point not registered yet; the task names registered now."""
    registered = []
    with _LOCK:
        for entry in _wanted(list(entry_points(group=ENTRY_POINT_GROUP))):
            if (entry.name, entry.value) in _LOADED:
                continue
            where = f'entry point {entry.name!r} ({entry.value}) of group {ENTRY_POINT_GROUP!r}'
            if entry.dist is not None:
                where += f' in {entry.dist.name}'
            try:
                task = entry.load()
                register_task(task)
            except Exception as error:
                raise RuntimeError(
                    f'{where} could not be registered: {error}. It must name a Task subclass '
                    f'("package.module:MyTask"); set {LOAD_SWITCH} to the entry points to load (empty: none) to '
                    'leave it out'
                ) from error
            _LOADED.add((entry.name, entry.value))
            registered.append(task.name)
    return tuple(registered)
