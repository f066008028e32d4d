"""Tasks by name. The registry and its lock are declared here, at the top, so the one place that decides which
tasks exist is visible; registering is idempotent for the same class and refuses a second class under a name.

One way to register: the call ``register_task(MyTask)`` (not a decorator), once the class is defined; a task in
another installed package is found through the ``evalscope_niah.tasks`` entry-point group (``tasks/plugins.py``).
What it is given is checked first, and each refusal names the call to use and what is allowed.

Lookups of a task registered here are a dict access. The plugin loader runs only when a lookup needs a task that
is not registered, or the list of every task (and it reads the installed entry points once per process). Inside
``without_plugins()`` lookups see no plugin's task and load none: EvalScope's registration, which runs inside
``import evalscope``, and the docs generator (the docs list the tasks this package ships)."""

from __future__ import annotations

import contextlib
import inspect
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from ..errors import NiahConfigError
from ..params.run_params import ALIASES, NiahParams, TaskParams
from .base import ReportedValue, Task

__all__ = [
    'deferring_registration',
    'get_task',
    'mark_unavailable',
    'register_plugin_task',
    'register_task',
    'set_task_loader',
    'task_names',
    'unavailable_reason',
    'unregister_task',
    'without_plugins',
]

_TASKS: dict[str, Task] = {}
_UNAVAILABLE: dict[str, str] = {}  # a task name that could not be registered (a broken plugin) -> why
_FROM_PLUGINS: set[str] = set()  # the names in _TASKS that an entry point brought
_LOCK = threading.Lock()
# Called, outside the lock, before a lookup the registered tasks cannot answer (an unknown name, the list of every
# task): the plugin loader (tasks/plugins.py), installed by the package's __init__ so that this module imports
# nothing that imports it back.
_loader: Callable[[], object] | None = None
# True inside without_plugins(): lookups see no plugin's task and never load one.
_NO_PLUGINS: ContextVar[bool] = ContextVar('evalscope_niah_without_plugins', default=False)
# Set in the thread importing a plugin: its own register_task calls are left to the loader, which registers what
# the entry point names, so two plugins claiming one name are both refused instead of the first import winning.
_DEFERRING = threading.local()

# The call a refusal points at: what a correct registration looks like.
_USAGE = (
    'register_task(MyTask) takes a Task subclass (not an instance) with a name, '
    "e.g. class MyTask(Task): name = 'my_task'; reported_values = (ReportedValue('found', 'Found'),)"
)


def register_task(cls: type[Task]) -> None:
    """Make ``cls.name`` selectable as ``task`` and its parameters valid ``extra_params`` names. Call it once the
    class is defined: ``register_task(MyTask)``."""
    _check_shape(cls)
    # Every parameter needs a default: a run of another task never gives it.
    cls.params_model()
    if getattr(_DEFERRING, 'active', False):
        return  # a plugin's module registering itself at import: the loader registers its entry point's class
    with _LOCK:
        current = _TASKS.get(cls.name)
        if current is not None and type(current) is not cls:
            raise ValueError(
                f'task {cls.name!r} is already registered by {type(current).__qualname__}; give {cls.__qualname__} '
                f'a name none of {", ".join(_TASKS)} has'
            )
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


def _check_shape(cls: Any) -> None:
    """What ``register_task`` is given, before anything is registered: one TypeError naming the call to use."""
    if isinstance(cls, Task):
        raise TypeError(f'register_task got an instance of {type(cls).__qualname__}; pass the class: {_USAGE}')
    if not (inspect.isclass(cls) and issubclass(cls, Task)):
        raise TypeError(f'register_task got {cls!r}; {_USAGE}')
    # check is the rule a task defines; a task overriding rule_score itself (older plugins) needs none.
    rule_missing = cls.check is Task.check and cls.rule_score is Task.rule_score
    if inspect.isabstract(cls) or rule_missing:
        missing = ', '.join(sorted({*cls.__abstractmethods__, *(['check'] if rule_missing else [])}))
        raise TypeError(
            f'task class {cls.__qualname__} does not define {missing}; a task defines choose (its needles and '
            'question) and check (its rule: check(answer, target) -> RuleScore)'
        )
    name = getattr(cls, 'name', None)
    if not isinstance(name, str) or not name.isidentifier() or not name.islower():
        raise TypeError(
            f"task class {cls.__qualname__} needs a name: a lowercase identifier such as name = 'my_task' "
            f'(got {name!r}); it is what users write as the task parameter'
        )
    values = cls.reported_values
    if not isinstance(values, tuple) or not all(isinstance(value, ReportedValue) for value in values):
        raise TypeError(
            f'task {name!r}: reported_values must be a tuple of ReportedValue, e.g. '
            f"reported_values = (ReportedValue('code_found', 'Code found'),) (got {values!r}); ReportedValue "
            "names the value, labels it for a report and says what it measures: 'score', 'recall', 'precision' "
            "or 'error_rate'"
        )
    if not (inspect.isclass(cls.params_model) and issubclass(cls.params_model, TaskParams)):
        raise TypeError(
            f'task {name!r}: params_model must be a TaskParams subclass (class MyParams(TaskParams): '
            f'my_option: int = Field(3, description=...)), got {cls.params_model!r}'
        )


def unregister_task(name: str) -> None:
    """Remove a task (tests register temporary ones; the loader removes a plugin's task another plugin claims too)."""
    with _LOCK:
        _TASKS.pop(name, None)
        _FROM_PLUGINS.discard(name)


def set_task_loader(loader: Callable[[], object]) -> None:
    """What brings tasks registered elsewhere (entry points) before a lookup the registered tasks cannot answer; it
    must be idempotent and cheap once done."""
    global _loader
    _loader = loader


def mark_unavailable(name: str, why: str) -> None:
    """A task that could not be registered: a run that asks for it is told why, not only that it is unknown."""
    with _LOCK:
        _UNAVAILABLE[name] = why


def register_plugin_task(cls: type[Task]) -> None:
    """``register_task`` for the plugin loader: the task is marked as an entry point's (``without_plugins`` hides
    it)."""
    register_task(cls)
    with _LOCK:
        _FROM_PLUGINS.add(cls.name)


def unavailable_reason(name: str) -> str | None:
    """Why ``name`` is not a task although a plugin meant it to be (it failed to load, or two claim it); None when
    nothing says so. Loads the plugins first, as a lookup of an unknown name does."""
    _load()
    with _LOCK:
        return _UNAVAILABLE.get(name)


@contextlib.contextmanager
def without_plugins() -> Iterator[None]:
    """Lookups inside see the tasks registered in this process by ``register_task`` (the built-in ones, a test's)
    and no plugin's, and load none: EvalScope's registration runs inside ``import evalscope``, where a plugin's
    import must never run, and the docs list the tasks this package ships whatever else is installed."""
    token = _NO_PLUGINS.set(True)
    try:
        yield
    finally:
        _NO_PLUGINS.reset(token)


@contextlib.contextmanager
def deferring_registration() -> Iterator[None]:
    """In the thread importing a plugin: ``register_task`` checks what it is given but registers nothing (the
    loader registers the class the entry point names, once it knows no other plugin claims its name)."""
    _DEFERRING.active = True
    try:
        yield
    finally:
        _DEFERRING.active = False


def _load() -> None:
    if _loader is not None and not _NO_PLUGINS.get():
        _loader()


def _visible(name: str) -> bool:
    return not (_NO_PLUGINS.get() and name in _FROM_PLUGINS)


def task_names() -> tuple[str, ...]:
    """Every selectable task, built-in ones first in registration order (loads the plugins: a list is complete)."""
    _load()
    with _LOCK:
        return tuple(name for name in _TASKS if _visible(name))


def get_task(name: str) -> Task:
    """The task named ``name``; a registered one is a dict access, an unknown name loads the plugins first."""
    with _LOCK:
        task = _TASKS.get(name) if _visible(name) else None
    if task is not None:
        return task
    _load()
    with _LOCK:
        task = _TASKS.get(name) if _visible(name) else None
        why = _UNAVAILABLE.get(name) if _visible(name) else None
    if task is not None:
        return task
    if why is not None:
        raise NiahConfigError('task', f'task {name!r} is not available: {why}')
    raise NiahConfigError('task', f'unknown task {name!r}; choose one of {", ".join(task_names())}')
