"""How EvalScope finds our adapter: a public name through its public API, and the built-in's name by a guarded
override.

``niah`` is registered with ``register_benchmark`` / ``register_evaluator`` alone, so it works on any EvalScope the
package supports. ``needle_haystack`` is a name EvalScope reserves for its built-in; taking it needs the registry's
internals, so that is confined to ``_override_builtin``, which checks what it relies on before touching it and
verifies the result after. When either check fails nothing is left half-registered and one warning says that the
built-in runs under ``needle_haystack`` and that ``--datasets niah`` is ours. ``EVALSCOPE_NIAH_OVERRIDE=0`` skips
the override.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import sys
import threading
from typing import Any

import evalscope
from evalscope.api.benchmark import BenchmarkMeta
from evalscope.api.metric import MetricSelector
from evalscope.api.registry import BENCHMARK_REGISTRY, EVALUATOR_REGISTRY, register_benchmark, register_evaluator
from evalscope.constants import Tags

from .. import __version__
from ..corpus_format import DATASET_ID
from ..escaping import inert_logger
from ..making.prompts import DEFAULT_SYSTEM_PROMPT, DEFAULT_USER_TEMPLATE
from ..params.subsets import DEFAULT_SUBSETS
from ..tasks.compose import check_dataset_args
from ..tasks.registry import without_plugins
from ..vocabulary import BENCHMARK_NAMES
from .adapter import NiahAdapter
from .evalscope_surface import BUILTIN_ADAPTER, REGISTRY_DICT, REGISTRY_LOCK, missing_hooks, resolve
from .evaluator import NiahEvaluator
from .invocation import refusal_ends_cli_run
from .metric_display import declare_metric_semantics
from .param_spec import extra_params_spec

__all__ = ['OVERRIDDEN_NAME', 'PUBLIC_NAME', 'build_meta', 'dataset_args_keys', 'register', 'resolves_to_ours']

logger = inert_logger(__name__)

OVERRIDDEN_NAME, PUBLIC_NAME = BENCHMARK_NAMES
OVERRIDE_VARIABLE = 'EVALSCOPE_NIAH_OVERRIDE'
# Part of EvalScope's cache identity: bump it whenever haystacks, prompts or scoring change, so a cached run of
# another version (or of the built-in, v1.1) is never mixed with ours.
EVALUATION_VERSION = 'v4.1'  # v4.1: a paste decided by evidence, verbose right answers pass, cut answers scored

_STATE_LOCK = threading.Lock()
_public_registered = False
_override_warned = False

DESCRIPTION = f"""
## Overview

Needle in a haystack by evalscope-niah {__version__}: a fact (the needle) is placed at a chosen depth of a long
document (the haystack) and the model is asked to retrieve it. Registered as `{PUBLIC_NAME}` and, replacing
EvalScope's built-in, as `{OVERRIDDEN_NAME}`.

## Notes

- `context_length` is the exact token count of the whole prompt the model reads (chat template included).
- Needles are placed at sentence boundaries; the achieved depth is recorded per sample.
- Scored by an LLM judge that sees only the question, the reference and the answer (Kamradt's 1/3/5/7/10 rubric
  mapped to 0..1), with rule scores (needle-fact recall, CDME Levenshtein) beside it.
- Heatmaps (PNG and interactive HTML) per subset are written to the report directory.
"""


class NiahBenchmarkMeta(BenchmarkMeta):
    """EvalScope's metadata; our dataset_args are checked before EvalScope merges them: it drops unknown keys and
    fails with an AttributeError on an extra_params that is not a dict, before our adapter exists."""

    def _update(self, args: dict) -> None:
        with refusal_ends_cli_run():
            check_dataset_args(args, allowed_keys=dataset_args_keys())
        # The spec of the tasks registered now: a task registered after this meta was built brings parameters that
        # EvalScope would refuse as unknown, and one unregistered since would still be offered.
        self.extra_params = extra_params_spec()
        super()._update(args)


def dataset_args_keys() -> set[str]:
    """The keys a run's dataset_args entry may hold: EvalScope's meta fields, and local_path (EvalScope drops the
    others without a word)."""
    return {field.name for field in dataclasses.fields(BenchmarkMeta)} | {'local_path'}


def build_meta(name: str = PUBLIC_NAME) -> BenchmarkMeta:
    return NiahBenchmarkMeta(
        name=name,
        pretty_name=f'Needle-in-a-Haystack (evalscope-niah {__version__})',
        description=DESCRIPTION,
        dataset_id=DATASET_ID,
        data_adapter=NiahAdapter,
        tags=[Tags.RETRIEVAL, Tags.LONG_CONTEXT],
        metric_list=['acc'],
        primary_metric=MetricSelector(name='accuracy', aggregation='mean', dimensions={'scope': 'overall'}),
        evaluation_version=EVALUATION_VERSION,
        subset_list=list(DEFAULT_SUBSETS),
        default_subset='english',
        eval_split='test',
        few_shot_mode='disabled',
        system_prompt=DEFAULT_SYSTEM_PROMPT,
        prompt_template=DEFAULT_USER_TEMPLATE,
        extra_params=extra_params_spec(),
    )


def register(*, override: bool | None = None) -> None:
    """Register ``niah`` (public API) and, unless disabled, take over ``needle_haystack``; idempotent.

    It runs inside ``import evalscope`` (``_autoload.py``), so it loads no task plugin: the spec and the metric
    declarations are those of the tasks registered now (the built-in ones), and a run's own ``_update`` brings a
    plugin's parameters when the run's lookups load it (``tasks/plugins.py``)."""
    with without_plugins():
        register_public()
        declare_metric_semantics((PUBLIC_NAME, OVERRIDDEN_NAME))
        if override is None:
            override = os.environ.get(OVERRIDE_VARIABLE, '1').strip().lower() not in ('0', 'false', 'no', 'off')
        if override:
            _override_builtin()


def register_public() -> None:
    """``niah`` through EvalScope's public decorators only (no private attribute of the registry)."""
    global _public_registered
    with _STATE_LOCK:
        if _public_registered:
            return
        try:
            register_benchmark(build_meta(PUBLIC_NAME))(NiahAdapter)
        except ValueError as exc:  # the name is taken: by us in another way is fine, by anyone else is not
            if not resolves_to_ours(PUBLIC_NAME):
                logger.warning('evalscope-niah: %s; --datasets %s is not ours in this process', exc, PUBLIC_NAME)
                return
        if PUBLIC_NAME not in EVALUATOR_REGISTRY:
            register_evaluator(PUBLIC_NAME)(NiahEvaluator)
        _public_registered = True


def resolves_to_ours(name: str) -> bool:
    meta = BENCHMARK_REGISTRY.get(name)
    return meta is not None and meta.data_adapter is NiahAdapter


def _override_builtin() -> None:
    """Write our meta under the built-in's name, or leave the registry as it was and warn once."""
    problem = _override_unsupported()
    if problem is None:
        with resolve(REGISTRY_LOCK):
            if dict.get(BENCHMARK_REGISTRY, OVERRIDDEN_NAME) is not None and resolves_to_ours(OVERRIDDEN_NAME):
                return
            # Imported once first: a later full registry scan finds it imported and never re-runs its
            # registration over ours.
            if BUILTIN_ADAPTER.module not in sys.modules:
                importlib.import_module(BUILTIN_ADAPTER.module)
            previous = dict.get(BENCHMARK_REGISTRY, OVERRIDDEN_NAME)
            dict.__setitem__(BENCHMARK_REGISTRY, OVERRIDDEN_NAME, build_meta(OVERRIDDEN_NAME))
            previous_evaluator = EVALUATOR_REGISTRY.get(OVERRIDDEN_NAME)
            EVALUATOR_REGISTRY[OVERRIDDEN_NAME] = NiahEvaluator
            if resolves_to_ours(OVERRIDDEN_NAME):
                return
            _restore(previous, previous_evaluator)
        problem = f'after the override {OVERRIDDEN_NAME!r} still resolves to another adapter'
    _warn_override(problem)


def _override_unsupported() -> str | None:
    """What the override relies on, checked before touching anything; None when all is there."""
    return '; '.join(missing_hooks((REGISTRY_DICT, REGISTRY_LOCK, BUILTIN_ADAPTER))) or None


def _restore(previous: Any, previous_evaluator: Any) -> None:
    if previous is None:
        dict.pop(BENCHMARK_REGISTRY, OVERRIDDEN_NAME, None)
    else:
        dict.__setitem__(BENCHMARK_REGISTRY, OVERRIDDEN_NAME, previous)
    if previous_evaluator is None:
        EVALUATOR_REGISTRY.pop(OVERRIDDEN_NAME, None)
    else:
        EVALUATOR_REGISTRY[OVERRIDDEN_NAME] = previous_evaluator


def _warn_override(problem: str) -> None:
    global _override_warned
    with _STATE_LOCK:
        if _override_warned:
            return
        _override_warned = True
    logger.warning(
        "evalscope-niah could not take over %r on EvalScope %s (%s): EvalScope's built-in runs under %r. "
        'Use --datasets %s for evalscope-niah.',
        OVERRIDDEN_NAME,
        getattr(evalscope, '__version__', '?'),
        problem,
        OVERRIDDEN_NAME,
        PUBLIC_NAME,
    )
