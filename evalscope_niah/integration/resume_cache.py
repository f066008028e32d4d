"""Where a resume's cached predictions are (EvalScope's cache layout), checked against this run's samples before
any model request (resume_match.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from evalscope.api.evaluator import CacheManager
from evalscope.utils.io_utils import OutputsStructure

from ..making.prompts import PromptSpec
from ..making.resume_match import (
    cached_input_changes,
    check_cached_inputs,
    haystack_changes,
    read_cached_rows,
    spot_checked_index,
)
from ..metadata import SampleMeta
from ..torn_lines import set_aside_torn_line

__all__ = ['refuse_mixed_inputs', 'set_aside_torn_rows']


def _cache(task_config: Any, benchmark: str) -> CacheManager:
    # Read-only: the layout EvalScope's evaluator will read, without creating its folders.
    return CacheManager(OutputsStructure(task_config.work_dir, is_make=False), task_config.model_id, benchmark)


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
