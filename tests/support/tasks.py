"""The EvalScope settings every end-to-end test starts from: ours against the test server, offline, rule or judge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalscope_niah.testing.openai_server import OpenAICompatServer

# The mock judges that grade by word overlap (openai_server.overlap_grader) cannot pass the judge check: they
# rate a negated or retracted needle high. Tests of what happens after the check (grading, faults, resume) turn it
# off with this; tests/integration/test_judge_check.py tests the check itself.
UNCHECKED_JUDGE = {'judge_check': 'off'}


def judge_block(server: OpenAICompatServer, model_id: str, **generation: Any) -> dict[str, Any]:
    """TaskConfig's ``judge`` for a judge model served by ``server``."""
    model: dict[str, Any] = {'model_id': model_id, 'api_url': server.base_url, 'api_key': 'x'}
    if generation:
        model['generation_config'] = generation
    return {'models': [model]}


def task_settings(
    server: OpenAICompatServer,
    corpus_dir: Path,
    work_dir: Path,
    *,
    model: str,
    extra: dict[str, Any],
    subsets: list[str] | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """``run_task`` settings for ``needle_haystack`` on ``corpus_dir``; rule scoring unless ``judge`` is given."""
    dataset: dict[str, Any] = {'local_path': str(corpus_dir), 'extra_params': extra}
    if subsets is not None:
        dataset['subset_list'] = subsets
    settings: dict[str, Any] = {
        'model': model,
        'api_url': server.base_url,
        'api_key': 'x',
        'eval_type': 'openai_api',
        'datasets': ['needle_haystack'],
        'dataset_args': {'needle_haystack': dataset},
        'judge': {'strategy': 'rule'},
        'work_dir': str(work_dir),
        'no_timestamp': True,
    }
    settings.update(overrides)
    return settings


def task_config(
    server: OpenAICompatServer, corpus_dir: Path, work_dir: Path, *, model: str, extra: dict[str, Any], **overrides: Any
) -> Any:
    """EvalScope's ``TaskConfig`` of :func:`task_settings` (same arguments)."""
    from evalscope import TaskConfig  # only the end-to-end tests need EvalScope

    return TaskConfig(**task_settings(server, corpus_dir, work_dir, model=model, extra=extra, **overrides))
