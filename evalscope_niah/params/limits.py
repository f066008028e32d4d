"""The bounds a user may raise: corpus repeats to fill a length, and runs larger than the sample limit."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .run_size import DEFAULT_MAX_CORPUS_REPEATS, MAX_SAMPLES_HARD_LIMIT, MAX_SAMPLES_PER_RUN


class LimitsParams(BaseModel):
    """Run-size parameters (part of ``NiahParams``, flat ``extra_params`` names)."""

    model_config = ConfigDict(extra='forbid', frozen=True)

    max_corpus_repeats: int = Field(
        DEFAULT_MAX_CORPUS_REPEATS,
        description='Most times a corpus may be repeated to fill the longest context length; a run needing more is '
        'refused (use a longer corpus or shorter lengths, or raise this).',
    )
    allow_large_grid: bool = Field(
        False,
        description=f'Allow more than {MAX_SAMPLES_PER_RUN:,} samples per run (grid cells x subsets); at most '
        f'{MAX_SAMPLES_HARD_LIMIT:,} even then.',
    )

    @field_validator('max_corpus_repeats')
    @classmethod
    def _repeats_cap(cls, value: int) -> int:
        if value < 1:
            raise ValueError('must be at least 1 (1: the corpus must hold the longest context without repeating)')
        return value
