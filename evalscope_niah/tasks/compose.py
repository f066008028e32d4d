"""The flat ``extra_params`` users write: the run's model (``params.run_params.NiahParams``) composed with each
registered task's own ``TaskParams`` model, so a task's parameters live in its folder while user-facing names stay
flat. It lives in ``tasks/``, not ``params/``, because composing needs the registered tasks, and ``params/`` sits
below ``tasks/`` (the tasks read the run's parameters).

``parse_params`` validates them all and runs the checks that need to know the tasks; ``parameters`` lists every
name with its field, default and owner, for EvalScope's spec (``integration/param_spec.py``) and for messages.

Limits (each refused with one NiahConfigError naming the parameter):

- subset names (``subsets`` keys, ``subset_list``, ``--subset``): ASCII letters, digits, ``.``, ``_`` and ``-``, not
  starting with ``.``, at most 64 characters; ``subset_list`` is a list of distinct names, never a string.
- context lengths (``context_lengths``, ``context_lengths_min/max`` and their aliases): 1 to 10,000,000 tokens.
- the corpus is repeated at most ``max_corpus_repeats`` times (default 20) to fill the longest context length.
- at most 10,000 samples per run (grid cells x subsets) unless ``allow_large_grid: true``; 1,000,000 even then;
  each grid axis (lengths, depths, num_repeats, n_needles, n_runs) at most 10,000 values.
- values that would be ignored are refused: ``needles`` / ``retrieval_question`` (top level or per subset) with a
  needle bank or with a task that brings its own needles; a task's own parameter (``num_needles``, ``diff``, ...)
  while no subset runs that task; an alias and its canonical name with different values; two tools' names in one
  config (``params/peer_names.py``);
  benchmark parameters placed in ``dataset_args`` beside ``extra_params`` instead of under it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from ..errors import NiahConfigError, quoted
from ..params.needlebench_names import check_needlebench_forms
from ..params.peer_names import resolve as resolve_peer_names
from ..params.prompt_safety import check_sendable_values
from ..params.run_params import ALIASES, NiahParams, TaskParams
from ..params.subsets import check_subset_list
from ..params.sweep import BUDGETS, refuse_bool_budget
from ..vocabulary import BENCHMARK_NAMES
from .base import Task, task_params
from .registry import get_task, task_names, unavailable_reason
from .ruler_niah.names import RULER_ONLY, ruler_task_hint
from .single.hooks import asks_user_needles, check_run_params, needles_per_cell

__all__ = [
    'Parameter',
    'check_dataset_args',
    'dataset_entry',
    'effective_length_mode',
    'parameter_value',
    'parameters',
    'parse_params',
]


@dataclasses.dataclass(frozen=True)
class Parameter:
    """One flat ``extra_params`` name: its pydantic field, its default, what it does and the task that declares it
    (None: the run's own)."""

    name: str
    field: FieldInfo
    default: Any
    description: str
    owner: str | None = None


def parameters() -> dict[str, Parameter]:
    """Every parameter, the run's first, then each registered task's in registration order."""
    run_defaults = NiahParams()
    found = {
        name: Parameter(name, field, getattr(run_defaults, name), field.description or '')
        for name, field in NiahParams.model_fields.items()
    }
    # The run model knows no task, so the list of tasks in the description of `task` is written here.
    tasks = '; '.join(f"'{name}': {get_task(name).description}" for name in task_names())
    found['task'] = dataclasses.replace(found['task'], description=f'{tasks}.')
    for name in task_names():
        model = get_task(name).params_model
        defaults = model()
        for field_name, field in model.model_fields.items():
            found[field_name] = Parameter(
                field_name, field, getattr(defaults, field_name), field.description or '', owner=name
            )
    return found


def parse_params(extra_params: Any, *, user_given: Any = None) -> NiahParams:
    """Validate user ``extra_params``; every problem becomes one NiahConfigError naming the parameter.

    ``user_given``: the dict the user wrote, when ``extra_params`` is a merged view that also holds every default
    (EvalScope's ``self.extra_params``). Only the user's own keys are validated then, so a conflict the user wrote
    (``n_contexts: 3`` with ``context_lengths_num_intervals: 10``) is refused even where one side equals a default,
    and an alias never conflicts with a default the user did not write.
    """
    if user_given is not None:
        extra_params = user_given
    if extra_params is None:
        extra_params = {}
    if not isinstance(extra_params, Mapping):
        raise NiahConfigError(
            'extra_params',
            f'must be a mapping of parameter names to values, e.g. {{"context_lengths": [1000, 4000]}} '
            f'(got {type(extra_params).__name__} {quoted(extra_params)})',
        )
    # Other tools' names in their own meaning (and a mix of tools refused), before any name is checked.
    values = resolve_peer_names(extra_params)
    known = parameters()
    check_needlebench_forms(values)
    _check_names(values, known)
    # Before anything encodes the values (EvalScope hashes the config as UTF-8 before our samples exist).
    check_sendable_values(values)
    run_values = {name: value for name, value in values.items() if known[name].owner is None}
    _refuse_bool_budgets(run_values)
    params = _validated(NiahParams, run_values)
    task_models = []
    for name in task_names():
        task = get_task(name)
        own = {field: value for field, value in values.items() if known[field].owner == name}
        task_models.append((task, _validated(task.params_model, own)))
    params = params.with_task_params(model for _, model in task_models if model != type(model)())
    _check_tasks(params, task_models)
    tasks = params.tasks_in_run()
    return params.with_needles_per_cell(max(needles_per_cell(get_task(task), params) for task in tasks))


def _refuse_bool_budgets(run_values: dict[str, Any]) -> None:
    """A sweep budget given as true or false, refused naming the cheapest sample of the grid the rest describes."""
    for name in BUDGETS:
        if isinstance(run_values.get(name), bool):
            rest = _validated(NiahParams, {key: value for key, value in run_values.items() if key not in BUDGETS})
            refuse_bool_budget(
                name,
                run_values[name],
                shortest_length=min(rest.context_length_grid()),
                tokenizer=rest.tokenizer_path,
            )


# The keys of an OpenCompass CDME dataset dict that are not benchmark parameters here, and what to write instead.
OPENCOMPASS_ONLY: dict[str, str] = {
    'abbr': 'is the name OpenCompass gives each cell dataset; here cells are named by the grid, so leave it out',
    'type': 'is an OpenCompass dataset class; here the benchmark is needle_haystack in datasets, so leave it out',
    'path': "is OpenCompass' data folder; put it in dataset_args as local_path (file_list names lie inside it)",
    'reader_cfg': "is an OpenCompass config object; prompt and answer columns are the benchmark's own, leave it out",
    'infer_cfg': 'is an OpenCompass config object; set prompt_template / system_prompt in dataset_args and the '
    'answer budget in generation_config (max_tokens), and leave it out',
    'eval_cfg': 'is an OpenCompass config object; scoring is set by the task config (judge: {strategy: rule} for '
    'rule scores only), so leave it out',
}

# Every other tool's names that are not parameters here, each with what to write instead.
FOREIGN_ONLY: dict[str, str] = {**OPENCOMPASS_ONLY, **RULER_ONLY}


def _check_names(values: Mapping[str, Any], known: Mapping[str, Parameter]) -> None:
    """Every name a parameter: an OpenCompass-only key is refused with what to write instead."""
    unknown = sorted(str(name) for name in values if name not in known)
    if not unknown:
        return
    task = values.get('task')
    if isinstance(task, str) and unavailable_reason(task):  # its parameters are unknown because its plugin failed
        raise NiahConfigError('task', _unknown_task(task, task_names()))
    foreign = [name for name in unknown if name in FOREIGN_ONLY]
    if foreign:
        raise NiahConfigError(foreign[0], FOREIGN_ONLY[foreign[0]])
    raise NiahConfigError(unknown[0], f'unknown parameter; allowed parameters are: {", ".join(known)}')


def parameter_value(params: NiahParams, name: str) -> Any:
    """The value of any flat parameter, the run's own or a task's."""
    found = parameters().get(name)
    if found is None:
        raise NiahConfigError(name, 'unknown parameter')
    if found.owner is None:
        return getattr(params, name)
    return getattr(task_params(params, get_task(found.owner).params_model), name)


def effective_length_mode(params: NiahParams) -> str:
    """The effective-length mode of this run: as given, else the task's own default (associative: relative)."""
    if 'effective_length_mode' in params.model_fields_set:
        return params.effective_length_mode
    return get_task(params.task).effective_length_mode or params.effective_length_mode


def dataset_entry(dataset_args: Any) -> Any:
    """The benchmark's own entry of ``--dataset-args``, in either form the commands take: keyed as EvalScope's
    ``dataset_args`` (``{'needle_haystack': {...}}`` or ``{'niah': {...}}``; other benchmarks' entries are theirs)
    or plain (``{'local_path': ..., 'extra_params': {...}}``). ``preview``, ``doctor`` and ``eval`` all read it here.
    """
    if not isinstance(dataset_args, Mapping):
        return dataset_args  # check_dataset_args says what is wrong with it
    keyed = [name for name in BENCHMARK_NAMES if name in dataset_args]
    if not keyed:
        return dict(dataset_args)
    entries = [dataset_args[name] for name in keyed]
    if any(entry != entries[0] for entry in entries[1:]):
        raise NiahConfigError(
            'dataset_args',
            f'gives {" and ".join(repr(name) for name in keyed)} different settings; a check reads one, so give '
            f'one of them (both names run the same benchmark)',
        )
    return entries[0]


def check_dataset_args(dataset_args: Any, *, allowed_keys: Collection[str] | None = None) -> None:
    """Refuse ``dataset_args['needle_haystack']`` shapes that would fail deep inside EvalScope or be dropped silently.

    Benchmark parameters belong under ``extra_params``; ``extra_params`` must be a mapping; ``subset_list`` a list of
    safe names. ``allowed_keys``, when given, are the only other keys accepted (EvalScope ignores unknown ones).
    """
    if not isinstance(dataset_args, Mapping):
        raise NiahConfigError(
            'dataset_args',
            f"the needle_haystack entry must be a mapping such as {{'extra_params': {{...}}}} (got "
            f'{type(dataset_args).__name__} {quoted(dataset_args)})',
        )
    known = parameters()
    for key in dataset_args:
        if key in known or key in ALIASES:
            raise NiahConfigError(
                key,
                f"is a benchmark parameter: put it under extra_params, e.g. dataset_args={{'needle_haystack': "
                f"{{'extra_params': {{{key!r}: ...}}}}}}",
            )
    if allowed_keys is not None:
        unknown = sorted(str(key) for key in dataset_args if key not in allowed_keys)
        if unknown:
            raise NiahConfigError(
                'dataset_args', f'unknown key {unknown[0]!r}; allowed: {", ".join(sorted(allowed_keys))}'
            )
    extra_params = dataset_args.get('extra_params')
    if extra_params is not None and not isinstance(extra_params, Mapping):
        parse_params(extra_params)  # raises the one extra_params error
    if isinstance(extra_params, Mapping):  # before EvalScope's KeyError, which would not say what to write instead
        _check_names(extra_params, known)
    if dataset_args.get('subset_list') is not None:
        check_subset_list(dataset_args['subset_list'])


# ---- checks that need the tasks ------------------------------------------------------------------------------------


def _validated(model: type[BaseModel], values: dict[str, Any]) -> Any:
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        location = '.'.join(str(part) for part in first['loc']) or 'extra_params'
        message = first['msg'].removeprefix('Value error, ')
        # A value given under another tool's name is reported under that name, the one the user wrote.
        given = [name for name, canonical in ALIASES.items() if canonical == location and values.get(name) is not None]
        if given and values.get(location) is None:
            location, message = given[0], f'{message} ({given[0]} is the alias of {location})'
        # A CDME dict copied into a subset brings run-wide names: say where they go.
        key = str(first['loc'][-1]) if first['loc'] else ''
        if first['type'] == 'extra_forbidden' and first['loc'][0] == 'subsets':
            if key in OPENCOMPASS_ONLY:
                raise NiahConfigError(location, OPENCOMPASS_ONLY[key]) from None
            if key in parameters():
                message = 'applies to the whole run: put it at the top level of extra_params, not in a subset'
        raise NiahConfigError(location, f'{message} (got {first.get("input")!r})') from None


def _check_tasks(params: NiahParams, task_models: Sequence[tuple[Task, TaskParams]]) -> None:
    """Known task names, each task's own checks (a needle bank only where the task picks from one), and nothing
    given that would be ignored."""
    names = task_names()
    if params.task not in names:
        raise NiahConfigError('task', _unknown_task(params.task, names))
    for name, override in params.subsets.items():
        if override.task is not None and override.task not in names:
            raise NiahConfigError(f'subsets.{name}.task', _unknown_task(override.task, names))
    for task, _ in task_models:
        check_run_params(task, params)
    _nothing_ignored(params, task_models)
    _check_user_chains(params)


def _unknown_task(task: str, names: Sequence[str]) -> str:
    why = unavailable_reason(task)  # a plugin meant it: its reason, not only the list of tasks
    if why is not None:
        return f'task {task!r} is not available: {why}'
    hint = ruler_task_hint(task)  # a RULER task name says what to write for it
    return f'must be {_choices(names)} (got {task!r})' + (f'; {hint}' if hint else '')


def _nothing_ignored(params: NiahParams, task_models: Sequence[tuple[Task, TaskParams]]) -> None:
    """Refuse values the chosen task or needle source would silently replace."""
    for field in ('needles', 'retrieval_question', 'answer'):
        if getattr(params, field) is None:
            continue
        # Top-level values reach the subsets of task 'single' (or of a keyword chain) that do not bring their own.
        used = _reads_needles(params.task, params.keyword) or any(
            _reads_needles(params.task_of(override), override.keyword or params.keyword)
            and getattr(override, field) is None
            for override in params.subsets.values()
        )
        if not used:
            raise NiahConfigError(field, _ignored_needles(params.task, field))
    for name, override in params.subsets.items():
        task = params.task_of(override)
        for field in ('needles', 'retrieval_question', 'answer', 'keyword'):
            if getattr(override, field, None) is None:
                continue
            if not _reads_needles(task, override.keyword or params.keyword):
                raise NiahConfigError(f'subsets.{name}.{field}', _ignored_needles(task, field))
    # model_fields_set holds what the user gave (aliases resolved): a default is never "given".
    tasks = params.tasks_in_run()
    for task, model in task_models:
        defaults = type(model)()
        for field in type(model).model_fields:
            given = field in model.model_fields_set and getattr(model, field) != getattr(defaults, field)
            if given and task.name not in tasks:
                raise NiahConfigError(
                    field, f'only applies to task {task.name!r} (tasks here: {sorted(tasks)}), so it would be ignored'
                )


def _reads_needles(task: str, keyword: str | None) -> bool:
    """Whether a subset of ``task`` asks about the user's needles: task 'single', or a chain task given a keyword."""
    return asks_user_needles(get_task(task), keyword=keyword)


def _ignored_needles(task: str, field: str) -> str:
    if get_task(task).uses_user_chain:
        return (
            f"task {task!r} brings its own needles and question unless keyword (CDME's: the word of your last "
            f"link that answers) makes yours a chain, so {field} would be ignored; give keyword, or use task 'single'"
        )
    if field == 'keyword':
        return f'applies to a reasoning chain of your needles; task {task!r} would ignore it (leave task out)'
    return f"task {task!r} brings its own needles and question, so {field} would be ignored; use task 'single'"


def _check_user_chains(params: NiahParams) -> None:
    """A top-level keyword needs a task that reads it (each subset's chain is checked when it is resolved)."""
    if params.keyword is None:
        return
    tasks = params.tasks_in_run()
    if not any(get_task(task).uses_user_chain for task in tasks):
        raise NiahConfigError('keyword', _ignored_needles(params.task, 'keyword'))


def _choices(names: tuple[str, ...]) -> str:
    quoted_names = [repr(name) for name in names]
    return quoted_names[0] if len(quoted_names) == 1 else f'{", ".join(quoted_names[:-1])} or {quoted_names[-1]}'
