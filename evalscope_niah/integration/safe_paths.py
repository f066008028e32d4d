"""The model id EvalScope builds its paths from, made one safe folder name before it builds any.

EvalScope joins ``TaskConfig.model_id`` into ``predictions/<id>/``, ``reviews/<id>/`` and ``reports/<id>/`` as it
is: ``--model-id ../../x`` put every file of the run outside the work dir, and predictions and reviews into one
file (both folders' ``../..`` is the same place). The adapter is made before the evaluator reads the id: it replaces
the id by `safe_names.safe_name` of it there, once per TaskConfig (a run of both benchmark names makes two
adapters of one TaskConfig), and keeps the user's id as data for the report.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from ..safe_names import safe_name

__all__ = ['claim_safe_model_id', 'real_model_id']

# id(TaskConfig) -> (a weak reference to it, the user's model id). The weak reference tells a live TaskConfig from
# a new one that reuses a dead one's id; TaskConfig (pydantic) takes no attribute of ours.
_REAL_IDS: dict[int, tuple[weakref.ref, str]] = {}
_LOCK = threading.Lock()


def claim_safe_model_id(task_config: Any) -> str | None:
    """Set ``task_config.model_id`` to its safe folder name (once) and return the user's id; None without one."""
    if task_config is None or not getattr(task_config, 'model_id', None):
        return None
    with _LOCK:
        real = real_model_id(task_config)
        if real is not None:
            return real
        real = str(task_config.model_id)
        key = id(task_config)
        _REAL_IDS[key] = (weakref.ref(task_config, lambda _ref: _REAL_IDS.pop(key, None)), real)
        task_config.model_id = safe_name(real)
        return real


def real_model_id(task_config: Any) -> str | None:
    """The id the user gave ``task_config`` before `claim_safe_model_id` replaced it; None when not claimed."""
    entry = _REAL_IDS.get(id(task_config))
    if entry is None or entry[0]() is not task_config:
        return None
    return entry[1]
