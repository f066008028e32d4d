"""inspect_evals ``niah``'s names in inspect's meaning, read from its code (``inspect_evals/niah``): its grid names
expanded the way its dataset generation expands them, and the tokenizer its lengths are counted in.

- ``n_contexts=1`` is ``max_context`` alone; otherwise ``n_contexts`` lengths from ``min_context`` to ``max_context``,
  each ``round(min + i * step)`` (Python's rounding), duplicates dropped. Defaults 10000, 120000, 15.
- ``n_positions`` needle positions between ``start_buffer`` and ``end_buffer``: one is the middle of that span, more
  are evenly spaced from its start to its end (the depth percents here are of that span). Default 15.
- lengths are counted with tiktoken: the model's own encoding for an OpenAI model, else gpt-3.5-turbo's
  (cl100k_base); here ``tiktoken:cl100k_base`` unless ``tokenizer_path`` is given.
- ``n_needles``, ``sample_method``, ``fixed_index``, ``n_runs`` keep their names; the single task's needle bank
  spreads them over the cells as inspect does (``tasks/single/bank.py``).
"""

from __future__ import annotations

from typing import Any

from ..errors import NiahConfigError
from .run_size import MAX_CONTEXT_LENGTH, MAX_GRID_AXIS

TOOL = "inspect_evals' niah"
GRID_NAMES = ('min_context', 'max_context', 'n_contexts', 'n_positions')
BANK_NAMES = ('n_needles', 'sample_method', 'fixed_index', 'n_runs')
# inspect's defaults of its needle options, the same as the single task's here.
BANK_DEFAULTS = {'n_needles': 1, 'sample_method': 'fixed', 'fixed_index': 0, 'n_runs': 1}
# inspect's own task defaults (niah() in niah.py).
DEFAULTS = {'min_context': 10000, 'max_context': 120000, 'n_contexts': 15, 'n_positions': 15}
# What inspect counts tokens with when the model is not an OpenAI one (get_model_or_default: gpt-3.5-turbo).
TOKENIZER = 'tiktoken:cl100k_base'


def expand(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with inspect's grid names replaced by the explicit lengths and depths inspect would test."""
    given = [name for name in GRID_NAMES if values.get(name) is not None]
    if not given:
        return values
    out = {name: value for name, value in values.items() if name not in GRID_NAMES}
    grid = {name: _count(name, values[name]) if name in given else DEFAULTS[name] for name in GRID_NAMES}
    out['context_lengths'] = context_lengths(grid['min_context'], grid['max_context'], grid['n_contexts'])
    out['document_depth_percents'] = depth_percents(grid['n_positions'])
    if values.get('tokenizer_path') is None:
        out['tokenizer_path'] = TOKENIZER
    return out


def context_lengths(low: int, high: int, count: int) -> list[int]:
    """inspect's lengths (generate_context_lengths): ``max_context`` alone for one, else the rounded even range."""
    if count == 1:
        return [high]
    if low > high:
        raise NiahConfigError('min_context', f'{low} is larger than max_context ({high}) ({TOOL})')
    step = (high - low) / (count - 1)
    return sorted({round(low + i * step) for i in range(count)})


def depth_percents(count: int) -> list[float]:
    """inspect's positions as percents of the span between the buffers: the middle for one, else evenly spaced
    from its start (0) to its end (100), unrounded (inspect rounds the token index, which the haystack does)."""
    if count == 1:
        return [50.0]
    return [100 * i / (count - 1) for i in range(count)]


def _count(name: str, value: Any) -> int:
    high = MAX_GRID_AXIS if name in ('n_contexts', 'n_positions') else MAX_CONTEXT_LENGTH
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise NiahConfigError(name, f'must be a whole number, at least 1 and at most {high:,} ({TOOL}) (got {value!r})')
    return value
