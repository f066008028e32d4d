"""Running EvalScope from our commands: its own CLI, or one task from plain settings (the demo's)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ..vocabulary import BENCHMARK_NAMES
from .evalscope_surface import CLI_RUN_CMD, resolve
from .registration import dataset_args_keys, register

__all__ = ['keyed_dataset_args', 'run_evalscope_cli', 'run_task_settings']


def run_evalscope_cli(argv: Sequence[str]) -> int:
    """EvalScope's own CLI after registering our adapter, so every `evalscope eval` flag works unchanged."""
    register()
    run_cmd = resolve(CLI_RUN_CMD)  # imported only here: its argument parsers are only needed here
    saved = sys.argv
    sys.argv = ['evalscope', *keyed_dataset_args(argv)]
    try:
        run_cmd()
    finally:
        sys.argv = saved
    return 0


def keyed_dataset_args(argv: Sequence[str]) -> list[str]:
    """``argv`` with a plain ``--dataset-args`` (our entry alone, as ``preview`` and ``doctor`` take it) keyed under
    each of our names in ``--datasets``, the form EvalScope reads; the keyed form and anything else pass unchanged
    (EvalScope, then ``NiahBenchmarkMeta._update``, say what is wrong with them)."""
    argv = list(argv)
    found = _option_value(argv, '--dataset-args')
    if found is None:
        return argv
    index, text = found
    try:
        value = json.loads(text)
    except ValueError:
        return argv
    names = [name for name in _datasets(argv) if name in BENCHMARK_NAMES]
    plain = isinstance(value, dict) and value and set(value) <= dataset_args_keys()
    if not plain or not names:
        return argv
    keyed = json.dumps({name: value for name in names}, ensure_ascii=False)
    argv[index] = keyed if argv[index] == text else f'--dataset-args={keyed}'
    return argv


def _option_value(argv: list[str], option: str) -> tuple[int, str] | None:
    """Where the value of ``option`` sits in ``argv`` (``--opt VALUE`` or ``--opt=VALUE``) and the value."""
    for index, arg in enumerate(argv):
        if arg == option and index + 1 < len(argv):
            return index + 1, argv[index + 1]
        if arg.startswith(f'{option}='):
            return index, arg.partition('=')[2]
    return None


def _datasets(argv: list[str]) -> list[str]:
    """The names after ``--datasets`` (EvalScope's nargs='+'), up to the next option."""
    for index, arg in enumerate(argv):
        if arg.startswith('--datasets='):
            return [arg.partition('=')[2]]
        if arg == '--datasets':
            names = []
            for name in argv[index + 1 :]:
                if name.startswith('-'):
                    break
                names.append(name)
            return names
    return []


def run_task_settings(settings: Mapping[str, Any]) -> Any:
    """``run_task(TaskConfig(**settings))`` with our adapter registered."""
    register()
    from evalscope import TaskConfig, run_task

    return run_task(TaskConfig(**settings))
