"""Tasks from other installed packages: each entry point of the ``evalscope_niah.tasks`` group names a Task
subclass (``my_task = "my_package.task:MyTask"`` under ``[project.entry-points."evalscope_niah.tasks"]``), and the
registry loads it the first time a task is looked up, so a user never has to remember an import.

Loaded the way simonw/llm loads its plugins, so that a plugin cannot take the host down:
- lazily, at the first lookup, not when ``evalscope_niah.tasks`` is imported: a plugin's own module imported first
  (its tests, say) imports our package without re-entering itself half-made;
- a plugin whose module is still being imported when a lookup happens is tried again at the next lookup;
- a plugin that fails (an import error, not a Task subclass, a name clash) is skipped, named in a warning, in
  ``failed_plugins()`` (``doctor`` lists them) and in the error of a run that asks for its task; everything else,
  EvalScope's other benchmarks included, goes on working.

One switch, ``EVALSCOPE_NIAH_LOAD_TASKS``: unset loads every entry point; a comma-separated list of entry-point
names loads only those; empty loads none. Loading is idempotent: each entry point once per process."""

from __future__ import annotations

import os
import sys
import threading
from importlib.metadata import EntryPoint, entry_points

from ..inert import inert_logger
from .registry import mark_unavailable, register_task

__all__ = ['ENTRY_POINT_GROUP', 'LOAD_SWITCH', 'failed_plugins', 'load_entry_point_tasks', 'plugin_tasks']

ENTRY_POINT_GROUP = 'evalscope_niah.tasks'
LOAD_SWITCH = 'EVALSCOPE_NIAH_LOAD_TASKS'

_DONE: set[tuple[str, str]] = set()  # (name, value) of every entry point registered or refused in this process
_FAILED: dict[str, str] = {}  # entry-point name -> why it was skipped
_REGISTERED: dict[str, str] = {}  # task name -> the entry point that brought it
_LOCK = threading.RLock()  # re-entrant: a plugin's import may itself look a task up
_loading = threading.local()

logger = inert_logger(__name__)


def _wanted(found: list[EntryPoint]) -> list[EntryPoint]:
    chosen = os.environ.get(LOAD_SWITCH)
    if chosen is None:
        return found
    names = {name.strip() for name in chosen.split(',') if name.strip()}
    return [entry for entry in found if entry.name in names]


def _still_importing(entry: EntryPoint) -> bool:
    """The entry point's module is being imported right now (its import looked a task up): try again later."""
    module = sys.modules.get(entry.module)
    return module is not None and bool(getattr(getattr(module, '__spec__', None), '_initializing', False))


def _where(entry: EntryPoint) -> str:
    where = f'entry point {entry.name!r} ({entry.value}) of group {ENTRY_POINT_GROUP!r}'
    return where if entry.dist is None else f'{where} in {entry.dist.name}'


def _load_one(entry: EntryPoint) -> str | None:
    """Register one entry point's task; its name, or None when it was skipped (and recorded as failed)."""
    try:
        task = entry.load()
        register_task(task)
    except Exception as error:
        why = (
            f'{_where(entry)} could not be registered: {error}. An entry point names a Task subclass '
            f'("package.module:MyTask"); set {LOAD_SWITCH} to the entry points to load (empty: none) to leave it out'
        )
        _FAILED[entry.name] = why
        mark_unavailable(entry.name, why)
        logger.warning('evalscope-niah skipped a task plugin: %s', why)
        return None
    return task.name


def load_entry_point_tasks() -> tuple[str, ...]:
    """Register the task of every wanted entry point not tried yet; the task names registered now."""
    if getattr(_loading, 'active', False):
        return ()  # a plugin's import looked a task up while we load it: the outer call finishes the job
    registered = []
    with _LOCK:
        _loading.active = True
        try:
            for entry in _wanted(list(entry_points(group=ENTRY_POINT_GROUP))):
                if (entry.name, entry.value) in _DONE or _still_importing(entry):
                    continue
                name = _load_one(entry)
                _DONE.add((entry.name, entry.value))
                if name is not None:
                    _REGISTERED[name] = _where(entry)
                    registered.append(name)
        finally:
            _loading.active = False
    return tuple(registered)


def failed_plugins() -> dict[str, str]:
    """Entry points skipped in this process, by name, with why (``doctor`` shows them)."""
    load_entry_point_tasks()
    with _LOCK:
        return dict(_FAILED)


def plugin_tasks() -> dict[str, str]:
    """Tasks registered from entry points, by task name, with the entry point that brought each (a plugin's own
    package tests it; this package's suites cover the tasks it ships)."""
    load_entry_point_tasks()
    with _LOCK:
        return dict(_REGISTERED)
