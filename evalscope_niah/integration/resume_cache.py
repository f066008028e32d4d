"""Where a resume's cached predictions are (EvalScope's cache layout), checked against this run's samples before
any model request (resume_match.py)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from evalscope.api.evaluator import CacheManager
from evalscope.utils.io_utils import OutputsStructure

from ..errors import NiahConfigError, quoted
from ..making.prompts import PromptSpec
from ..making.resume_match import (
    cached_input_changes,
    check_cached_inputs,
    haystack_changes,
    read_cached_rows,
    spot_checked_index,
)
from ..metadata import SampleMeta
from ..safe_files import read_bounded, regular_file
from ..torn_lines import set_aside_torn_line

__all__ = ['refuse_mixed_inputs', 'refuse_old_folder_name', 'refuse_other_model_id', 'set_aside_torn_rows']

# Largest config snapshot or report read to name a cached run's model id: both are a few KB.
_MAX_SNAPSHOT_BYTES = 4 * 1024 * 1024


def _cache(task_config: Any, benchmark: str) -> CacheManager:
    # Read-only: the layout EvalScope's evaluator will read, without creating its folders.
    return CacheManager(OutputsStructure(task_config.work_dir, is_make=False), task_config.model_id, benchmark)


def refuse_old_folder_name(task_config: Any, model_id: str | None) -> None:
    """With --use-cache: NiahConfigError('use_cache') when the work dir's cache is under the model id as given
    (written before ids became safe folder names, safe_paths.py) and none is under its folder name: the resume would
    silently recompute every sample. The error says what to rename."""
    if task_config is None or not task_config.use_cache or not model_id or model_id == task_config.model_id:
        return
    outputs = OutputsStructure(task_config.work_dir, is_make=False)
    kinds = (outputs.predictions_dir, outputs.reviews_dir, outputs.reports_dir)
    # Exact names only: a case-blind disk would also find another id's folder, and listdir holds no '..' or 'a/b'.
    old = [os.path.join(kind, model_id) for kind in kinds if os.path.isdir(kind) and model_id in os.listdir(kind)]
    if not old or os.path.isdir(os.path.join(outputs.predictions_dir, task_config.model_id)):
        return
    raise NiahConfigError(
        'use_cache',
        f'the cache of {task_config.work_dir} is in folders named {quoted(model_id)}, from before model ids became '
        f'safe folder names; rename each to {task_config.model_id!r} to resume it ({", ".join(old)}), or run fresh',
    )


def refuse_other_model_id(task_config: Any, model_id: str | None, benchmark: str) -> None:
    """With --use-cache (not --rerun-review): NiahConfigError('use_cache') when the work dir holds a run of another
    model id. The id is part of EvalScope's cache identity, so the resume stopped with a traceback naming two
    sha256 fingerprints and not the id. Called before EvalScope checks the identity (the adapter is made first)."""
    if task_config is None or not task_config.use_cache or task_config.rerun_review or not model_id:
        return
    snapshot = Path(task_config.work_dir) / 'configs' / 'task_config.yaml'
    previous = _snapshot_value(snapshot, 'model_id')
    if not isinstance(previous, str) or previous == task_config.model_id:
        return
    # The snapshot holds the folder name; the report beside it keeps the id as the user gave it.
    report = Path(task_config.work_dir) / 'reports' / previous / f'{benchmark}.json'
    then = _json_value(report, 'model_name') if '/' not in previous and '..' not in previous else None
    then = then if isinstance(then, str) else previous
    raise NiahConfigError(
        'use_cache',
        f'{task_config.work_dir} holds a run of model id {quoted(then)}, not {quoted(model_id)}: a resume goes on '
        f'with the same model. Resume with --model-id {quoted(then)} (model_id in Python; its NFC and NFD spellings '
        'are one id), or run in a new work dir',
    )


def _snapshot_value(path: Path, key: str) -> Any:
    try:
        data = yaml.safe_load(_small_file(path) or b'')
    except (OSError, NiahConfigError, yaml.YAMLError, UnicodeDecodeError):
        return None  # EvalScope reads it next and says what is wrong with it
    return data.get(key) if isinstance(data, dict) else None


def _json_value(path: Path, key: str) -> Any:
    try:
        data = json.loads(_small_file(path) or b'null')
    except (OSError, NiahConfigError, ValueError, RecursionError):
        return None
    return data.get(key) if isinstance(data, dict) else None


def _small_file(path: Path) -> bytes | None:
    """The bytes of ``path`` read as corpus files are (a regular file, bounded), or None when there is none."""
    if not path.is_file():
        return None
    where = str(path)
    checked = regular_file(path, param='use_cache', where=where)
    return read_bounded(checked, limit=_MAX_SNAPSHOT_BYTES, param='use_cache', where=where)


def set_aside_torn_rows(task_config: Any, benchmark: str, subsets: Iterable[str]) -> list[str]:
    """With --use-cache: each prediction and review file this run resumes from made whole before EvalScope reads
    (and appends to) it; a line torn by a kill goes aside into '<file>.torn-<n>' (torn_lines.py), so its one sample
    is asked for again and every whole line is kept. Returns the files the torn lines went to."""
    if task_config is None or not task_config.use_cache:
        return []
    cache = _cache(task_config, benchmark)
    paths = [
        path
        for subset in subsets
        for path in (cache.get_prediction_cache_path(subset), cache.get_review_cache_path(subset))
    ]
    return [str(aside) for path in paths if (aside := set_aside_torn_line(path)) is not None]


def refuse_mixed_inputs(
    task_config: Any, benchmark: str, datasets: Mapping[str, Any], samplers: Mapping[str, Any], prompt: PromptSpec
) -> None:
    """With --use-cache (also with --rerun-review, which reuses the predictions too): NiahConfigError('use_cache')
    when a cached prediction was made from other inputs than the sample EvalScope will pair it with."""
    if task_config is None or not task_config.use_cache:
        return
    cache = _cache(task_config, benchmark)
    changes = []
    for subset, dataset in datasets.items():
        sampler = samplers[subset]
        built_from = {
            'corpus_file': sampler.subset.corpus_file,
            'corpus_sha256': sampler.corpus.sha256,
            'tokenizer': sampler.tokenizer.name,
        }
        # EvalScope pairs a cached row with the sample at its position (ModelResult.to_task_state).
        expected = {
            index: SampleMeta.from_dict(dataset[index].metadata).with_build(**built_from)
            for index in range(len(dataset))
        }
        rows = read_cached_rows(cache.get_prediction_cache_path(subset))
        found = cached_input_changes(subset, expected, rows, prompt)
        index = spot_checked_index(expected, rows, found)
        if index is not None:
            built = sampler.build(sampler.plan(expected[index].cell))
            found += haystack_changes(subset, index, rows[index], built.user_prompt)
        changes += found
    check_cached_inputs(changes, cache_dir=task_config.work_dir, rerun_review=bool(task_config.rerun_review))
