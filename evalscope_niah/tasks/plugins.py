"""Tasks from other installed packages: each entry point of the ``evalscope_niah.tasks`` group names a Task
subclass (``my_task = "my_package.task:MyTask"`` under ``[project.entry-points."evalscope_niah.tasks"]``), and the
registry loads them when a lookup needs them, so a user never has to remember an import.

A plugin's import is foreign code running in our host, so it is loaded late, once, and contained:

- **late**: only when a lookup needs a task that is not registered, or the list of every task (a run's parameters,
  ``doctor``, ``preview``). Never inside ``import evalscope``: EvalScope's registration looks tasks up inside
  ``registry.without_plugins()``, so a plugin that exits, hangs or prints cannot reach EvalScope or its other
  benchmarks. A plugin's own module imported first (its tests) imports our package without re-entering itself.
- **once**: the installed entry points are read once per process (reading them scans every installed
  distribution: ~50 ms each time); ``load_entry_point_tasks(rescan=True)`` reads them again (``doctor``, tests).
  A plugin whose module is still being imported when a lookup happens is tried again at the next lookup.
- **contained**: each import runs in a daemon thread that the loader waits on for at most
  ``EVALSCOPE_NIAH_PLUGIN_TIMEOUT`` seconds, with ``sys.stdout`` and ``sys.stderr`` captured, and any
  BaseException it raises (``SystemExit``, ``KeyboardInterrupt`` raised by the import, errors) caught and named.
- **unambiguous**: two entry points whose classes claim one task name are both refused, each naming the other; a
  run with the rule of whichever was found first would mean something else on another machine.

A plugin whose import hung is remembered in the cache directory (``hung_plugins.py``): later processes refuse it at
once instead of waiting again, until its package changes version or they allow it more seconds.

A plugin that is refused (an import that fails, exits or hangs; not a Task subclass; a name taken) is skipped,
named in a warning, in ``plugin_report()`` (``doctor`` lists it) and in the error of a run that asks for its task;
everything else goes on working.

One switch, ``EVALSCOPE_NIAH_LOAD_TASKS``: unset loads every entry point; a comma-separated list of entry-point
names loads only those; empty loads none."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import io
import os
import sys
import threading
from collections.abc import Callable
from importlib.metadata import EntryPoint

from ..errors import NiahConfigError
from ..escaping import inert_logger
from .base import Task
from .hung_plugins import HungKey, earlier_hang, forget_hang, remember_hang
from .registry import (
    deferring_registration,
    get_task,
    mark_unavailable,
    register_plugin_task,
    unregister_task,
    without_plugins,
)

__all__ = [
    'ENTRY_POINT_GROUP',
    'IMPORT_TIMEOUT_SWITCH',
    'LOAD_SWITCH',
    'PluginRecord',
    'failed_plugins',
    'load_entry_point_tasks',
    'plugin_report',
    'plugin_tasks',
]

ENTRY_POINT_GROUP = 'evalscope_niah.tasks'
LOAD_SWITCH = 'EVALSCOPE_NIAH_LOAD_TASKS'
IMPORT_TIMEOUT_SWITCH = 'EVALSCOPE_NIAH_PLUGIN_TIMEOUT'
# Long enough for a plugin that imports a deep-learning framework on a cold disk; a hang costs it once per process.
DEFAULT_IMPORT_TIMEOUT_S = 60.0
_SHOWN_OUTPUT_CHARS = 200  # of what a plugin printed at import, shown in its record


@dataclasses.dataclass(frozen=True)
class PluginRecord:
    """One entry point and what became of it: the task it registered, or why it was refused."""

    entry_point: str  # the entry point's name
    target: str  # its value, 'package.module:Class'
    distribution: str | None  # the installed package that declares it
    task: str | None = None  # the task name it registered (None: refused)
    problem: str | None = None  # why it was refused
    printed: str = ''  # what its import wrote to stdout or stderr (captured, never shown there)

    @property
    def label(self) -> str:
        """The entry point as ``doctor`` names it: its name and the package declaring it."""
        return self.entry_point if self.distribution is None else f'{self.entry_point} ({self.distribution})'

    @property
    def where(self) -> str:
        where = f'entry point {self.entry_point!r} ({self.target}) of group {ENTRY_POINT_GROUP!r}'
        return where if self.distribution is None else f'{where} in {self.distribution}'


_LOCK = threading.RLock()  # re-entrant: registering a plugin's task may look tasks up
_found: list[EntryPoint] | None = None  # the entry points read once per process (None: not read yet)
_records: dict[tuple[str | None, str, str], PluginRecord] = {}  # (distribution, name, value) -> what became of it
_settled = False  # every wanted entry point tried: a lookup needs nothing more from this module
_importing = threading.local()  # set in a thread importing a plugin: its lookups must not load plugins again

logger = inert_logger(__name__)


def _key(entry: EntryPoint) -> tuple[str | None, str, str]:
    return (entry.dist.name if entry.dist is not None else None, entry.name, entry.value)


def _record(entry: EntryPoint, **fields: object) -> PluginRecord:
    return PluginRecord(entry.name, entry.value, entry.dist.name if entry.dist is not None else None, **fields)


def _wanted(found: list[EntryPoint]) -> list[EntryPoint]:
    chosen = os.environ.get(LOAD_SWITCH)
    if chosen is None:
        return found
    names = {name.strip() for name in chosen.split(',') if name.strip()}
    return [entry for entry in found if entry.name in names]


def _import_timeout() -> float:
    given = os.environ.get(IMPORT_TIMEOUT_SWITCH)
    if given is None or not given.strip():
        return DEFAULT_IMPORT_TIMEOUT_S
    try:
        seconds = float(given)
    except ValueError:
        seconds = float('nan')
    if not 0 < seconds <= 3600:  # NaN fails too
        raise NiahConfigError(
            IMPORT_TIMEOUT_SWITCH,
            f'must be the seconds a task plugin may take to import, more than 0 and at most 3600 (got {given!r})',
        )
    return seconds


def _still_importing(entry: EntryPoint) -> bool:
    """The entry point's module is being imported right now (its import looked a task up): try again later."""
    module = sys.modules.get(entry.module)
    return module is not None and bool(getattr(getattr(module, '__spec__', None), '_initializing', False))


def _contained_import(entry: EntryPoint, timeout: float) -> tuple[object, str | None, str, bool]:
    """(what the entry point names, why it could not be imported or None, what its import printed, whether it
    timed out).

    Bounded by a daemon thread and a join timeout, not by a probe in a subprocess: a probe costs an interpreter
    start on every run and still leaves the real import unbounded (a plugin that hangs now and then passes the probe
    and hangs the host after it). The join really bounds the host's wait. What remains after a timeout: the thread
    goes on in the background, holding its module half-imported; it cannot be killed, but as a daemon it never
    keeps the process alive, and the plugin stays refused for the rest of the process."""
    outcome: dict[str, object] = {}

    def run() -> None:
        _importing.active = True
        try:
            with deferring_registration():
                outcome['value'] = entry.load()
        except BaseException as error:  # SystemExit or KeyboardInterrupt of the plugin, never of the host
            outcome['error'] = error

    captured_out, captured_err = io.StringIO(), io.StringIO()
    thread = threading.Thread(target=run, name=f'evalscope-niah plugin {entry.name}', daemon=True)
    # Swapped for the whole process while we wait: this thread only waits, and stdout may be a JSONL stream.
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = captured_out, captured_err
    try:
        thread.start()
        thread.join(timeout)
    finally:
        sys.stdout, sys.stderr = saved
    printed = (captured_out.getvalue() + captured_err.getvalue()).strip()
    if thread.is_alive():
        why = (
            f'its import did not finish within {timeout:g} s (it may hang; {IMPORT_TIMEOUT_SWITCH} sets the seconds '
            'allowed); it goes on in a background thread this process cannot stop'
        )
        return None, why, printed, True
    error = outcome.get('error')
    if error is not None:
        kind = type(error).__name__
        said = str(error)
        if isinstance(error, SystemExit):
            return None, f'its import called sys.exit({error.code!r}) (SystemExit)', printed, False
        return None, f'its import raised {kind}' + (f': {said}' if said else ''), printed, False
    return outcome.get('value'), None, printed, False


def _hung_key(entry: EntryPoint) -> HungKey | None:
    """What a hang of this entry point is remembered by (None: no installed package to name, so not remembered)."""
    if entry.dist is None:
        return None
    return (entry.dist.name, entry.dist.version or '', entry.name, entry.value)


def _claimed_name(value: object) -> str | None:
    name = getattr(value, 'name', None)
    return name if isinstance(value, type) and issubclass(value, Task) and isinstance(name, str) else None


def _refuse(entry: EntryPoint, why: str, printed: str, task: str | None = None) -> None:
    record = _record(entry, printed=printed)
    why = (
        f'{record.where} could not be registered: {why}. An entry point names a Task subclass '
        f'("package.module:MyTask"); set {LOAD_SWITCH} to the entry points to load (empty: none) to leave it out'
    )
    _records[_key(entry)] = dataclasses.replace(record, problem=why)
    for name in {entry.name, *([task] if task else [])}:
        mark_unavailable(name, why)
    logger.warning('evalscope-niah skipped a task plugin: %s', why)


def _load_pending(pending: list[EntryPoint]) -> tuple[str, ...]:
    """Import each pending entry point (contained), refuse every name two classes claim, register the rest."""
    timeout = _import_timeout()
    imported: list[tuple[EntryPoint, object, str]] = []
    for entry in pending:
        hung = _hung_key(entry)
        earlier = earlier_hang(hung, timeout) if hung is not None else None
        if earlier is not None:  # a hang costs one run its timeout, not every run
            again = f'it is tried again once its package changes version or {IMPORT_TIMEOUT_SWITCH} allows more seconds'
            _refuse(entry, f'{earlier}; {again}', '')
            continue
        value, problem, printed, timed_out = _contained_import(entry, timeout)
        if problem is not None:
            if timed_out and hung is not None:
                remember_hang(hung, timeout)
            _refuse(entry, problem, printed)
        else:
            if hung is not None:
                forget_hang(hung)
            imported.append((entry, value, printed))
    clashing = _clashes(imported)
    registered = []
    for entry, value, printed in imported:
        name = _claimed_name(value)
        if name in clashing:
            _refuse(entry, clashing[name](entry), printed, task=name)
            continue
        try:
            register_plugin_task(value)  # type: ignore[arg-type]  # register_task checks what it is given
        except (TypeError, ValueError) as error:
            _refuse(entry, str(error), printed, task=name)
            continue
        _records[_key(entry)] = _record(entry, task=name, printed=printed)
        registered.append(name)
    return tuple(registered)


def _clashes(imported: list[tuple[EntryPoint, object, str]]) -> dict[str, Callable[[EntryPoint], str]]:
    """Task names claimed by two classes or more (among these imports and the plugins registered before), each with
    the refusal of one claimant naming the others. A plugin registered before is unregistered and refused here."""
    claims: dict[str, dict[tuple[str | None, str, str], tuple[EntryPoint, object]]] = {}
    for entry, value, _ in imported:
        name = _claimed_name(value)
        if name is not None:
            claims.setdefault(name, {})[_key(entry)] = (entry, value)
    for entry in _found or ():
        earlier = _records.get(_key(entry))
        if earlier is not None and earlier.task in claims:
            claims[earlier.task][_key(entry)] = (entry, type(get_task(earlier.task)))
    clashing: dict[str, Callable[[EntryPoint], str]] = {}
    for name, claimants in claims.items():
        if len({id(value) for _, value in claimants.values()}) < 2:
            continue  # one class (two entry points may name the same one): no ambiguity

        def why(entry: EntryPoint, name: str = name, claimants: dict = claimants) -> str:
            others = '; '.join(_record(other).where for key, (other, _) in claimants.items() if key != _key(entry))
            return f'task name {name!r} is claimed by another installed plugin too ({others}); both are refused'

        clashing[name] = why
        for key, (entry, _) in claimants.items():
            if key in _records:  # registered before this load: it no longer stands
                unregister_task(name)
                _refuse(entry, why(entry), _records[key].printed, task=name)
        if _registered_class(name) in {value for _, value in claimants.values()}:
            unregister_task(name)  # by a claimant's own module, imported first (its tests) and registering itself
    return clashing


def _registered_class(name: str) -> type | None:
    """The class registered under ``name`` now, looked up without loading plugins (we are loading them)."""
    with without_plugins():
        try:
            return type(get_task(name))
        except NiahConfigError:
            return None


def load_entry_point_tasks(*, rescan: bool = False) -> tuple[str, ...]:
    """Register the task of every wanted entry point not tried yet; the task names registered now. The entry points
    are read the first time (and again with ``rescan``: ``doctor``, tests); after that a call is a flag check."""
    global _found, _settled
    if (_settled and not rescan) or getattr(_importing, 'active', False):
        return ()  # done; or a plugin's import looked a task up while we load it: the outer call finishes the job
    with _LOCK:
        if _found is None or rescan:
            _found = list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
        wanted = [entry for entry in _wanted(_found) if _key(entry) not in _records]
        pending = [entry for entry in wanted if not _still_importing(entry)]
        registered = _load_pending(pending) if pending else ()
        _settled = len(pending) == len(wanted)
    return registered


def plugin_report(*, rescan: bool = False) -> tuple[PluginRecord, ...]:
    """What became of every entry point tried in this process: the task each registered, or why it was refused."""
    load_entry_point_tasks(rescan=rescan)
    with _LOCK:
        return tuple(_records.values())


def failed_plugins() -> dict[str, str]:
    """Entry points refused in this process, by label (name and package), with why (``doctor`` shows them)."""
    return {record.label: record.problem for record in plugin_report() if record.problem is not None}


def plugin_tasks() -> dict[str, str]:
    """Tasks registered from entry points, by task name, with the entry point that brought each (a plugin's own
    package tests it; this package's suites cover the tasks it ships)."""
    return {record.task: record.where for record in plugin_report() if record.task is not None}
