"""How samples are made: the tokenizer that measures lengths, where needles may go, the seed of every random
choice and the answer-format guide."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class PlacementParams(BaseModel):
    """Sample-making parameters (part of ``NiahParams``, flat ``extra_params`` names)."""

    model_config = ConfigDict(extra='forbid', frozen=True)

    tokenizer_path: str = Field(
        'Qwen/Qwen3-0.6B',
        description="Tokenizer that measures lengths: a model id, a local directory, 'tiktoken:<encoding>', or "
        "'server' (the served model's own tokenizer: vLLM's or llama.cpp's /tokenize with its chat template, so "
        "lengths are the model's own tokens).",
    )
    sampling_seed: int = Field(0, description='Seed of every random choice (random needle picks, magic numbers).')
    start_buffer: int = Field(0, description='Tokens at the top of the haystack where no needle is placed.')
    end_buffer: int = Field(0, description='Tokens at the bottom of the haystack where no needle is placed.')
    length_buffer: int = Field(
        0, description='Tokens of each context length left free (CDME length_buffer): the prompt is this much shorter.'
    )
    guide: bool = Field(
        False,
        description="Append an answer-format hint to the question, as CDME's questions do; a question that already "
        "asks a format gets CDME's think-first hint before that request instead.",
    )

    @field_validator('start_buffer', 'end_buffer', 'length_buffer')
    @classmethod
    def _not_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError('must be 0 or more')
        return value

    @field_validator('tokenizer_path')
    @classmethod
    def _non_blank_tokenizer(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError('must not be empty')
        return value
