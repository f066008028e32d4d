"""EvalScope's private and unstable surface that evalscope-niah relies on, listed in one place.

EvalScope documents benchmarks written against ``DefaultDataAdapter``'s public methods; everything below is either a
private name or an internal module, and may change in any minor release. Each entry says why we need it and what
happens without it (the public fallback). The integration code takes the names it reaches by string from here;
:func:`missing_hooks` resolves every entry against the installed EvalScope, and the contract test
(tests/integration/test_evalscope_surface.py) fails naming each one that is gone.

The tested EvalScope range is the package's own requirement (pyproject.toml), read from the installed distribution's
metadata, so it is written once.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    'BUILTIN_ADAPTER',
    'CACHED_SCORES',
    'CACHE_MANAGER',
    'CLI_RUN_CMD',
    'COLLECT_WORK_ITEMS',
    'COMMIT_REVIEW_RERUNS',
    'HOOKS',
    'JUDGE_CONFIG',
    'META_UPDATE',
    'METRIC_ENTRY',
    'METRIC_OVERRIDES',
    'ON_GENERATE_REPORT_END',
    'ON_INFERENCE',
    'PERSIST_RESULT',
    'PREDICT_SAMPLE',
    'PROCESS_WORK_ITEM',
    'REGISTRY_DICT',
    'REGISTRY_LOCK',
    'RUN_POOL',
    'SEMANTICS_CACHE',
    'TASK_CONFIG',
    'WORK_ITEMS',
    'WORK_ITEM_SAMPLE',
    'WORK_ITEM_TASK_STATE',
    'Hook',
    'hook_problem',
    'missing_hooks',
    'resolve',
    'tested_evalscope_range',
]

DISTRIBUTION = 'evalscope-niah'

HookKind = Literal['callable', 'attribute', 'instance attribute', 'lock', 'dict', 'module']


@dataclass(frozen=True)
class Hook:
    """One name of EvalScope's that we rely on.

    ``module`` is imported and ``path`` followed attribute by attribute ('' for the module itself). An ``instance
    attribute`` is one that an ``__init__`` along the class's MRO assigns, or a dataclass field. ``called_in``
    ("module" or "module:Qualname") is where EvalScope must still call it: a hook we override that EvalScope no longer
    calls is as gone as a missing one.
    """

    module: str
    path: str
    kind: HookKind
    why: str
    fallback: str
    called_in: str | None = None

    @property
    def name(self) -> str:
        return f'{self.module}.{self.path}' if self.path else self.module

    @property
    def attribute(self) -> str:
        """The last name of the path: what the integration code writes (``_lock``, ``_on_inference``)."""
        return self.path.rpartition('.')[2]


_ADAPTERS = 'evalscope.api.benchmark.adapters.default_data_adapter'
_EVALUATOR = 'evalscope.evaluator.evaluator'

ON_INFERENCE = Hook(
    _ADAPTERS,
    'DefaultDataAdapter._on_inference',
    'callable',
    why='one call per sample: our prompt is built from the planned haystack and the reply checked for a cut budget',
    fallback='none public: run_inference would have to rebuild the TaskState EvalScope builds around this call',
    called_in=f'{_ADAPTERS}:DefaultDataAdapter',
)
ON_GENERATE_REPORT_END = Hook(
    _ADAPTERS,
    'DefaultDataAdapter._on_generate_report_end',
    'callable',
    why='writes our result files, heatmaps and report semantics into the report directory once the report exists',
    fallback='finalize(), which also runs, but only without the report directory on a run that failed early',
    called_in=f'{_ADAPTERS}:DefaultDataAdapter',
)
TASK_CONFIG = Hook(
    _ADAPTERS,
    'DefaultDataAdapter._task_config',
    'instance attribute',
    why="the run's TaskConfig: our extra_params, model_length, agent_config and ignore_errors",
    fallback='none: the adapter sees only the merged BenchmarkMeta, which drops what it does not know',
)
JUDGE_CONFIG = Hook(
    _ADAPTERS,
    'DefaultDataAdapter._judge_config',
    'attribute',
    why='whether judge models are configured, so a judged run without one fails before any model request',
    fallback='init_llm_judges(), which builds the judges (and may call them) to find out',
)
META_UPDATE = Hook(
    'evalscope.api.benchmark',
    'BenchmarkMeta._update',
    'callable',
    why='dataset_args are checked before EvalScope merges them (it drops unknown keys, fails on a non-dict)',
    fallback='the adapter checks extra_params after the merge: unknown keys are then silently lost',
    called_in='evalscope.api.registry',
)
COLLECT_WORK_ITEMS = Hook(
    _EVALUATOR,
    'DefaultEvaluator._collect_work_items',
    'callable',
    why='orders the requests so a prefix-caching server reuses the most, publishes review files at once, and '
    "hands the run's plan to the live pages (reporting/live.py)",
    fallback='request_order grid (EvalScope order), reviews of a killed run are re-judged on resume, and no live '
    'pages or progress lines',
    called_in=f'{_EVALUATOR}:DefaultEvaluator',
)
WORK_ITEMS = Hook(
    _EVALUATOR,
    '_PoolContext.work_items',
    'instance attribute',
    why='the list _collect_work_items returns; reordered in place',
    fallback='as for DefaultEvaluator._collect_work_items',
)
WORK_ITEM_SAMPLE = Hook(
    _EVALUATOR,
    '_WorkItem.sample',
    'instance attribute',
    why="a work item's sample (None for a review of a cached prediction), read to order the requests",
    fallback='as for DefaultEvaluator._collect_work_items',
)
RUN_POOL = Hook(
    _EVALUATOR,
    'DefaultEvaluator._run_pool',
    'callable',
    why="sweep: 'adaptive' runs it once per round, on the samples the round chose (eval_batch_size at a time)",
    fallback="no adaptive sweep: sweep: 'grid' sends every sample",
    called_in=f'{_EVALUATOR}:DefaultEvaluator',
)
CACHED_SCORES = Hook(
    _EVALUATOR,
    '_PoolContext.cached_scores_by_subset',
    'instance attribute',
    why='the scores a resumed run loads from its cache: finished cells on the live pages from the start; the '
    'adaptive sweep reads the cached scores of the samples a round chose, and keeps only those',
    fallback='as for DefaultEvaluator._collect_work_items (and no adaptive sweep)',
)
WORK_ITEM_TASK_STATE = Hook(
    _EVALUATOR,
    '_WorkItem.task_state',
    'instance attribute',
    why="a review-only work item's cached prediction: the adaptive sweep finds its sample id there",
    fallback='as for DefaultEvaluator._run_pool',
)
PREDICT_SAMPLE = Hook(
    _EVALUATOR,
    'DefaultEvaluator._predict_sample',
    'callable',
    why='the model is built on its first use: the whole-request deadline and the reply size cap '
    '(interrupt.install_deadline) go on its client here, before the first request',
    fallback="httpx's per-read timeout only: a server that drips bytes holds a request (and Ctrl-C) for minutes, "
    'and a reply of any size is read and parsed whole',
    called_in=f'{_EVALUATOR}:DefaultEvaluator',
)
PROCESS_WORK_ITEM = Hook(
    _EVALUATOR,
    'DefaultEvaluator._process_work_item',
    'callable',
    why='the prediction row is written here, in a worker: a full disk stops the run with one line naming the file',
    fallback="EvalScope's handling: each row it cannot save is a logged traceback and, with ignore_errors, an error",
    called_in=f'{_EVALUATOR}:DefaultEvaluator',
)
PERSIST_RESULT = Hook(
    _EVALUATOR,
    'DefaultEvaluator._persist_result',
    'callable',
    why='the review row is written here, in the main thread: a full disk stops the run with one line naming the '
    'file, and the live pages follow the finished sample',
    fallback="as for DefaultEvaluator._process_work_item, and live pages that stay pending until the run's end",
    called_in=f'{_EVALUATOR}:DefaultEvaluator',
)
CACHE_MANAGER = Hook(
    _EVALUATOR,
    'DefaultEvaluator.cache_manager',
    'instance attribute',
    why="the evaluator's cache, whose review files a fresh run publishes at once",
    fallback='reviews are published when the run ends, as EvalScope does',
)
COMMIT_REVIEW_RERUNS = Hook(
    'evalscope.api.evaluator.cache',
    'CacheManager.commit_review_reruns',
    'callable',
    why='publishes the review files, so each review of a run killed later is found by --use-cache',
    fallback='reviews are published when the run ends: a killed run re-judges them on resume',
    called_in=f'{_EVALUATOR}:DefaultEvaluator',
)
REGISTRY_LOCK = Hook(
    'evalscope.api.registry',
    'BENCHMARK_REGISTRY._lock',
    'lock',
    why='held while our meta replaces the built-in under needle_haystack, so no registry scan interleaves',
    fallback='no override: needle_haystack stays the built-in and --datasets niah runs ours (public API only)',
)
REGISTRY_DICT = Hook(
    'evalscope.api.registry',
    'BENCHMARK_REGISTRY',
    'dict',
    why="written with dict.__setitem__ under needle_haystack: the registry's own setter refuses a taken name",
    fallback='as for BENCHMARK_REGISTRY._lock',
)
BUILTIN_ADAPTER = Hook(
    'evalscope.benchmarks.needle_haystack.needle_haystack_adapter',
    '',
    'module',
    why='imported before the override, so a later full registry scan finds it imported and never re-registers it',
    fallback='as for BENCHMARK_REGISTRY._lock',
)
METRIC_OVERRIDES = Hook(
    'evalscope.metrics.semantics.catalog',
    'BENCHMARK_METRIC_OVERRIDES',
    'dict',
    why='declares the units and display names of the metrics we add, so reports show them right',
    fallback='EvalScope shows our extra metrics with its defaults (no units, generic names)',
)
METRIC_ENTRY = Hook(
    'evalscope.metrics.semantics.entry',
    'MetricEntry',
    'callable',
    why='the entry type of BENCHMARK_METRIC_OVERRIDES',
    fallback='as for BENCHMARK_METRIC_OVERRIDES',
)
SEMANTICS_CACHE = Hook(
    'evalscope.metrics.semantics.resolver',
    'get_semantics_resolver.cache_clear',
    'callable',
    why='the resolver is cached: cleared so the entries declared after its first use are seen',
    fallback='as for BENCHMARK_METRIC_OVERRIDES',
)
CLI_RUN_CMD = Hook(
    'evalscope.cli.cli',
    'run_cmd',
    'callable',
    why="`evalscope-niah eval` runs EvalScope's own command line after registering ours",
    fallback='evalscope eval (the .pth hook registers ours), or run_task from Python',
)

#: Every hook, in the order the integration code meets them.
HOOKS: tuple[Hook, ...] = (
    META_UPDATE,
    TASK_CONFIG,
    JUDGE_CONFIG,
    ON_INFERENCE,
    ON_GENERATE_REPORT_END,
    COLLECT_WORK_ITEMS,
    WORK_ITEMS,
    WORK_ITEM_SAMPLE,
    RUN_POOL,
    CACHED_SCORES,
    WORK_ITEM_TASK_STATE,
    CACHE_MANAGER,
    COMMIT_REVIEW_RERUNS,
    PREDICT_SAMPLE,
    PROCESS_WORK_ITEM,
    PERSIST_RESULT,
    REGISTRY_LOCK,
    REGISTRY_DICT,
    BUILTIN_ADAPTER,
    METRIC_OVERRIDES,
    METRIC_ENTRY,
    SEMANTICS_CACHE,
    CLI_RUN_CMD,
)


def tested_evalscope_range() -> str | None:
    """The EvalScope versions this package is tested with (``>=1.14.1,<1.15``), from the installed distribution's
    requirement; None when the package runs from a source tree that was never installed."""
    try:
        requirements = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for requirement in requirements:
        match = re.fullmatch(r'evalscope\s*\(?\s*([<>=!~][^;()]*?)\s*\)?', requirement.strip())
        if match:  # lower bound first, as it is written in pyproject.toml
            return ','.join(sorted((part.strip() for part in match.group(1).split(',')), reverse=True))
    return None


def resolve(hook: Hook) -> Any:
    """The object a module-level hook names (imported now); ImportError or AttributeError when it is gone."""
    target: Any = importlib.import_module(hook.module)
    for name in hook.path.split('.') if hook.path else []:
        target = getattr(target, name)
    return target


def missing_hooks(hooks: Iterable[Hook] = HOOKS) -> list[str]:
    """One line per hook the installed EvalScope no longer has (or no longer calls); empty when all are there."""
    return [f'{hook.name}: {problem}' for hook in hooks if (problem := hook_problem(hook)) is not None]


def hook_problem(hook: Hook) -> str | None:
    """What is wrong with one hook on the installed EvalScope, or None."""
    try:
        target = importlib.import_module(hook.module)
    except ImportError as exc:
        return f'module {hook.module} cannot be imported ({exc})'
    names = hook.path.split('.') if hook.path else []
    last = len(names) - 1
    for index, name in enumerate(names):
        if hook.kind == 'instance attribute' and index == last:
            if not _instance_attribute(target, name):
                return f'neither {names[index - 1]} nor a base class assigns or declares {name}'
            break
        if not hasattr(target, name):
            return f'{".".join(names[:index]) or hook.module} has no attribute {name}'
        target = getattr(target, name)
    shape = _shape_problem(hook.kind, target)
    if shape is not None:
        return shape
    if hook.called_in is not None and not _is_called(hook.attribute, hook.called_in):
        return f'{hook.called_in} no longer calls {hook.attribute}'
    return None


def _shape_problem(kind: HookKind, target: object) -> str | None:
    if kind == 'callable' and not callable(target):
        return 'is no longer callable'
    if kind == 'lock' and not (hasattr(target, '__enter__') and hasattr(target, '__exit__')):
        return 'is no longer a lock (no context manager)'
    if kind == 'dict' and not isinstance(target, dict):
        return f'is no longer a dict (a {type(target).__name__})'
    return None


def _instance_attribute(cls: object, name: str) -> bool:
    assigned = re.compile(rf'\bself\.{re.escape(name)}\s*(?::[^=]*)?=(?!=)')
    for klass in getattr(cls, '__mro__', ()):
        if name in getattr(klass, '__annotations__', {}) or name in vars(klass):
            return True
        init = vars(klass).get('__init__')
        if init is not None and assigned.search(_source(init)):
            return True
    return False


def _is_called(attribute: str, where: str) -> bool:
    module_name, _, qualname = where.partition(':')
    target: object = importlib.import_module(module_name)
    for name in qualname.split('.') if qualname else []:
        target = getattr(target, name, None)
    return target is not None and re.search(rf'\.{re.escape(attribute)}\(', _source(target)) is not None


def _source(target: object) -> str:
    try:
        return inspect.getsource(target)  # type: ignore[arg-type]
    except (OSError, TypeError):  # no source shipped: nothing to read, reported as not found
        return ''
