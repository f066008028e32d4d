"""Other tools' names (inspect_evals niah, Kamradt's tester, OpenCompass CDME): accepted as fields and resolved
once, here, before any field is checked: each tool's names in that tool's meaning (``peer_names``), then CDME's
one-to-one names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import NiahConfigError
from .cdme_names import KEYWORD_TASK, alias_value
from .peer_names import resolve

# OpenCompass CDME's names for our parameters, one to one (inspect's and Kamradt's expand in peer_names).
ALIASES: dict[str, str] = {
    'num_repeats_per_file': 'num_repeats',
    'tokenizer_model': 'tokenizer_path',
    'needle': 'needles',
    'length': 'context_lengths',
    'depth': 'document_depth_percents',
}


class AliasParams(BaseModel):
    """Other tools' names (part of ``NiahParams``, flat ``extra_params`` names)."""

    model_config = ConfigDict(extra='forbid', frozen=True)

    min_context: int | None = Field(
        None, description="inspect_evals' smallest context length (its default 10000 when n_contexts > 1 needs it)."
    )
    max_context: int | None = Field(
        None, description="inspect_evals' largest context length; n_contexts: 1 tests this length alone."
    )
    n_contexts: int | None = Field(
        None,
        description="inspect_evals' number of lengths, round(min + i * step) from min_context to max_context "
        '(default 15); inspect_evals names count tokens with tiktoken cl100k_base unless tokenizer_path is given.',
    )
    n_positions: int | None = Field(
        None,
        description="inspect_evals' needle positions between start_buffer and end_buffer: one is the middle, more "
        'are evenly spaced from start to end (default 15).',
    )
    num_repeats_per_file: int | None = Field(None, description='OpenCompass CDME alias of num_repeats.')
    tokenizer_model: str | None = Field(
        None,
        description="OpenCompass CDME: an OpenAI model name such as 'gpt-4', counted with tiktoken offline "
        '(sets tokenizer_path).',
    )
    needle: str | None = Field(
        None,
        description='OpenCompass CDME: one needle sentence, the same as needles [needle]; written with a line break '
        "around it ('\\n...\\n') it is inserted on a line of its own, as CDME does (in needles too).",
    )
    length: int | None = Field(None, description='OpenCompass CDME: one context length (context_lengths [length]).')
    depth: float | None = Field(
        None, description='OpenCompass CDME: one needle depth in percent (document_depth_percents [depth]).'
    )

    @model_validator(mode='before')
    @classmethod
    def _resolve_aliases(cls, values: Any) -> Any:
        if not isinstance(values, Mapping):
            return values
        values = resolve(values)
        for alias, canonical in ALIASES.items():
            if values.get(alias) is None:
                continue
            value = values[alias]
            value = alias_value(alias, canonical, value)
            if values.get(canonical) is not None and values[canonical] != value:
                raise NiahConfigError(
                    alias,
                    f'is another name for {canonical}; give one of them, not both ({values[canonical]!r} vs {value!r})',
                )
            values[canonical] = value
        # A CDME multi-needle dict has no task: its keyword says the needles are a reasoning chain.
        if values.get('keyword') is not None and values.get('task') is None:
            values['task'] = KEYWORD_TASK
        return values
