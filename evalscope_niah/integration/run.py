"""Running EvalScope from our commands: its own CLI, or one task from plain settings (the demo's)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from .evalscope_surface import CLI_RUN_CMD, resolve
from .registration import register

__all__ = ['run_evalscope_cli', 'run_task_settings']


def run_evalscope_cli(argv: Sequence[str]) -> int:
    """EvalScope's own CLI after registering our adapter, so every `evalscope eval` flag works unchanged."""
    register()
    run_cmd = resolve(CLI_RUN_CMD)  # imported only here: its argument parsers are only needed here
    saved = sys.argv
    sys.argv = ['evalscope', *argv]
    try:
        run_cmd()
    finally:
        sys.argv = saved
    return 0


def run_task_settings(settings: Mapping[str, Any]) -> Any:
    """``run_task(TaskConfig(**settings))`` with our adapter registered."""
    register()
    from evalscope import TaskConfig, run_task

    return run_task(TaskConfig(**settings))
