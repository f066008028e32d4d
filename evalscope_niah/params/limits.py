"""The bounds a user may raise: corpus repeats to fill a length, runs larger than the sample limit, a reply's size."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..serving.reply_bounds import DEFAULT_MAX_REPLY_BYTES, check_max_reply_bytes
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
    max_reply_bytes: int = Field(
        DEFAULT_MAX_REPLY_BYTES,
        description='Most bytes of one reply (model or judge) read before it is refused unparsed as a server fault '
        '(retried, then recorded as an error, never scored). Raise it for long streamed answers or logprobs.',
    )

    @field_validator('max_reply_bytes', mode='before')
    @classmethod
    def _reply_bytes(cls, value: object) -> int:
        return check_max_reply_bytes(value)

    @field_validator('max_corpus_repeats')
    @classmethod
    def _repeats_cap(cls, value: int) -> int:
        if value < 1:
            raise ValueError('must be at least 1 (1: the corpus must hold the longest context without repeating)')
        return value
