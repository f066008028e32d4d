"""Before any request: the lengths of the grid checked against the window of the model under test (its server's
window, or the user's model_length), with the answer budget added."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..making.tokenization import SERVER_TOKENIZER
from ..making.window_fit import check_window, served_counter
from ..serving.endpoint import probe_context_window

if TYPE_CHECKING:
    from evalscope.config import TaskConfig

    from ..params.run_params import NiahParams

__all__ = ['check_model_window', 'check_window_of', 'model_endpoint']


def model_endpoint(config: TaskConfig | None, *, model_id: str | None) -> dict[str, str | None]:
    """The model under test's server: what tokenizer_path 'server' counts with and the window is asked of.
    ``model_id``: the user's id (``RunPlan.model_id``), not the safe folder name ``config.model_id`` now holds."""
    if config is None or not config.api_url:
        return {}
    return {'api_url': config.api_url, 'model': model_id or config.model, 'api_key': config.api_key}


def check_model_window(
    config: TaskConfig | None, params: NiahParams, endpoint: dict[str, str | None], samplers: list[Any]
) -> None:
    """Refuse, before any request, lengths whose prompt plus the answer budget the model cannot read: its window
    comes from the user's model_length, else from the server (vLLM /v1/models, llama.cpp /props); prompts are
    counted by the server's tokenizer where it has a tokenize API (``window``)."""
    budget = (config.generation_config.max_tokens if config and config.generation_config else None) or 0
    model_length = getattr(config, 'model_length', None) if config is not None else None
    check_window_of(params, endpoint, samplers, model_length=model_length, budget=budget)


def check_window_of(
    params: NiahParams,
    endpoint: Mapping[str, str | None],
    samplers: list[Any],
    *,
    model_length: int | None,
    budget: int,
) -> tuple[int, str] | None:
    """``check_model_window`` from plain values (``doctor`` has no TaskConfig); returns the window checked against
    and where it came from, None when neither model_length nor the server gives one (nothing was checked)."""
    window, source = model_length, 'model_length'
    if not window and endpoint.get('api_url'):
        window = probe_context_window(endpoint['api_url'], model=endpoint['model'], api_key=endpoint['api_key'])
        source = 'its server says so'
    if not window or not samplers:
        return None  # the endpoint does not say: run as before
    count = None
    if endpoint.get('api_url') and params.tokenizer_path != SERVER_TOKENIZER:  # 'server': ours are its
        count = served_counter(
            samplers, api_url=endpoint['api_url'], model=endpoint['model'], api_key=endpoint['api_key']
        )
    check_window(
        [cell for _, cells in samplers for cell in cells],
        window=window,
        budget=budget,
        count=count,
        tokenizer_name=samplers[0][0].tokenizer.name,
        source=source,
    )
    return window, source
