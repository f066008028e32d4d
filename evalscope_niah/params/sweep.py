"""How the grid is swept: every sample of it (the default), or an adaptive sweep that spends where the score changes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import NiahConfigError
from ..vocabulary import SERVER_TOKENIZER, SweepMode


class SweepParams(BaseModel):
    """Sweep parameters (part of ``NiahParams``, flat ``extra_params`` names)."""

    model_config = ConfigDict(extra='forbid', frozen=True)

    sweep: SweepMode = Field(
        'grid',
        description="'grid': every sample of the grid. 'adaptive': rounds of samples chosen from the scores so far, "
        'walking up the lengths from the shortest: each length is sent samples until its pass or fail is settled at '
        'sweep_confidence (a few where the answers are clear, more near effective_length_threshold), and the sweep '
        'stops at the first length that fails, when errors leave a length undecided, or when the budget is spent. '
        'A length it has not sent never counts as passed. Cells it did not send are reported as not tested (see the '
        'adaptive sweep page).',
        json_schema_extra={
            'description_zh': "'grid'：发送网格的每个样本。'adaptive'：按已有得分分轮挑选样本，从最短长度起逐个向上："
            '每个长度发送样本，直到其通过与否以 sweep_confidence 的置信度判定（答案明确时少发，接近 '
            'effective_length_threshold 时多发）；遇到第一个未通过的长度、错误使某长度无法判定或预算用尽时停止。'
            '未发送的长度绝不算作通过。未发送的单元格报告为“未测试”（见自适应扫描一页）。'
        },
    )
    sweep_budget_prompts: int | None = Field(
        None,
        description="Adaptive sweep: most prompts it may send, a whole number from 1 (None: up to the whole grid's).",
        json_schema_extra={
            'description_zh': '自适应扫描：最多发送的提示数，为不小于 1 的整数（None：至多整个网格的提示数）。'
        },
    )
    sweep_budget_tokens: int | None = Field(
        None,
        description="Adaptive sweep: most prompt tokens it may send, counted as the samples' context lengths; at "
        "least one prompt of the shortest length (None: up to the whole grid's).",
        json_schema_extra={
            'description_zh': '自适应扫描：最多发送的提示 token 数，按各样本的上下文长度计，至少为最短长度的一个提示'
            '（None：至多整个网格的 token 数）。'
        },
    )
    sweep_confidence: float = Field(
        0.95,
        description='Adaptive sweep: the confidence that every length up to the effective length is judged as the '
        "full grid would judge it (each length's samples, an exact hypergeometric test); a length whose samples are "
        'all sent is decided by its mean.',
        json_schema_extra={
            'description_zh': '自适应扫描：有效长度及其以下每个长度的判定与完整网格一致的置信度（每个长度按其样本做'
            '精确超几何检验）；样本全部发送过的长度按其均值判定。'
        },
    )

    @field_validator('sweep_budget_prompts', 'sweep_budget_tokens', mode='before')
    @classmethod
    def _not_a_bool(cls, value: Any) -> Any:
        # A bool is an int to pydantic: 'sweep_budget_prompts: true' would run as a budget of one prompt.
        if isinstance(value, bool):
            raise ValueError('must be a whole number, not true or false (or None for no budget beyond the grid)')
        return value

    @field_validator('sweep_budget_prompts', 'sweep_budget_tokens')
    @classmethod
    def _budget(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError('must be a positive number (or None for no budget beyond the grid)')
        return value

    @field_validator('sweep_confidence')
    @classmethod
    def _confidence(cls, value: float) -> float:
        if not 0.5 < value < 1:
            raise ValueError('must be between 0.5 and 1 (both excluded), e.g. 0.95')
        return value


BUDGETS = ('sweep_budget_prompts', 'sweep_budget_tokens')


def check_budget_fits(budget_tokens: int | None, *, shortest_length: int, tokenizer: str) -> None:
    """Refuse a token budget below the cheapest sample (one prompt of the shortest length): the sweep could send
    nothing, and would end with no summary."""
    if budget_tokens is not None and budget_tokens < shortest_length:
        raise NiahConfigError(
            'sweep_budget_tokens',
            f'{budget_tokens:,} is below the cheapest sample: {_cheapest(shortest_length, tokenizer)}; allowed: at '
            f'least {shortest_length:,}, or None (no budget beyond the grid)',
        )


def refuse_bool_budget(name: str, value: bool, *, shortest_length: int, tokenizer: str) -> None:
    """A budget given as true or false (a bool is an int to pydantic: 'true' would run as a budget of 1)."""
    allowed = (
        f'a whole number of prompts, at least 1 (the cheapest sample: {_cheapest(shortest_length, tokenizer)})'
        if name == 'sweep_budget_prompts'
        else f'a whole number of tokens, at least the cheapest sample: {_cheapest(shortest_length, tokenizer)}'
    )
    raise NiahConfigError(name, f'{str(value).lower()} is not a budget; allowed: {allowed}, or None (no budget)')


def _cheapest(shortest_length: int, tokenizer: str) -> str:
    counted_by = "the model server's tokenizer" if tokenizer == SERVER_TOKENIZER else tokenizer
    return f'one prompt of the shortest context length, {shortest_length:,} tokens of {counted_by}'
