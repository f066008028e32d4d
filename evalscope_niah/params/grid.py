"""The grid of a run: its context lengths, needle depths, repeats and needle-absent control cells; its two axes
spaced exactly as EvalScope's built-in spaces them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..errors import NiahConfigError
from .run_size import MAX_CONTEXT_LENGTH, MAX_GRID_AXIS


class GridParams(BaseModel):
    """The grid's parameters (part of ``NiahParams``, flat ``extra_params`` names)."""

    model_config = ConfigDict(extra='forbid', frozen=True)

    context_lengths_min: int = Field(1000, description='Smallest context length (tokens of the whole prompt).')
    context_lengths_max: int = Field(32000, description='Largest context length (tokens of the whole prompt).')
    context_lengths_num_intervals: int = Field(10, description='Number of context lengths from min to max.')
    context_lengths: list[int] | None = Field(
        None, description='Explicit context lengths in tokens; overrides the min/max/num_intervals range.'
    )
    document_depth_percent_min: float = Field(0, description='Smallest needle depth in percent (0 = start).')
    document_depth_percent_max: float = Field(100, description='Largest needle depth in percent (100 = end).')
    document_depth_percent_intervals: int = Field(10, description='Number of needle depths from min to max.')
    document_depth_percents: list[float] | None = Field(
        None, description='Explicit needle depths in percent; overrides the min/max/intervals range.'
    )
    document_depth_percent_interval_type: Literal['linear', 'sigmoid'] = Field(
        'linear', description="Depth spacing: 'linear' or 'sigmoid' (denser near the start and end, as Kamradt's)."
    )
    absent_control: bool = Field(
        False,
        description='Add one needle-absent control cell per context length: nothing inserted, the right answer is '
        'that the document does not say. Reported apart from accuracy (abstention and guess rates).',
    )
    num_repeats: int = Field(
        1,
        description='Haystacks per cell, each starting at a different point of the corpus (CDME '
        'num_repeats_per_file); the cell score is their mean, with a bootstrap confidence interval.',
    )

    @field_validator('context_lengths_min', 'context_lengths_max')
    @classmethod
    def _positive_length(cls, value: int) -> int:
        if not 1 <= value <= MAX_CONTEXT_LENGTH:
            raise ValueError(f'must be a positive number of tokens, at most {MAX_CONTEXT_LENGTH:,}')
        return value

    @field_validator(
        'context_lengths_num_intervals',
        'document_depth_percent_intervals',
        'num_repeats',
    )
    @classmethod
    def _at_least_one(cls, value: int) -> int:
        if not 1 <= value <= MAX_GRID_AXIS:
            raise ValueError(f'must be at least 1 (and at most {MAX_GRID_AXIS:,})')
        return value

    @field_validator('document_depth_percent_min', 'document_depth_percent_max')
    @classmethod
    def _percent(cls, value: float) -> float:
        if not 0 <= value <= 100:
            raise ValueError('must be between 0 and 100')
        return value

    @field_validator('context_lengths')
    @classmethod
    def _lengths(cls, value: list[int] | None) -> list[int] | None:
        if value is not None:
            if not value:
                raise ValueError('must hold at least one length (or be left out to use the range)')
            if len(value) > MAX_GRID_AXIS:
                raise ValueError(f'must hold at most {MAX_GRID_AXIS:,} lengths (got {len(value):,})')
            if any(not 1 <= length <= MAX_CONTEXT_LENGTH for length in value):
                raise ValueError(f'every length must be a positive number of tokens, at most {MAX_CONTEXT_LENGTH:,}')
        return value

    @field_validator('document_depth_percents')
    @classmethod
    def _depths(cls, value: list[float] | None) -> list[float] | None:
        if value is not None:
            if not value:
                raise ValueError('must hold at least one depth (or be left out to use the range)')
            if len(value) > MAX_GRID_AXIS:
                raise ValueError(f'must hold at most {MAX_GRID_AXIS:,} depths (got {len(value):,})')
            if any(not 0 <= depth <= 100 for depth in value):
                raise ValueError('every depth must be between 0 and 100')
        return value

    @model_validator(mode='after')
    def _grid_ranges(self) -> GridParams:
        if self.context_lengths is None and self.context_lengths_min > self.context_lengths_max:
            raise NiahConfigError(
                'context_lengths_min',
                f'{self.context_lengths_min} is larger than context_lengths_max ({self.context_lengths_max})',
            )
        if self.document_depth_percents is None and self.document_depth_percent_min > self.document_depth_percent_max:
            raise NiahConfigError(
                'document_depth_percent_min',
                f'{self.document_depth_percent_min} is larger than document_depth_percent_max '
                f'({self.document_depth_percent_max})',
            )
        return self

    def context_length_grid(self) -> list[int]:
        """Context lengths in tokens, ascending, without duplicates."""
        return context_length_axis(
            explicit=self.context_lengths,
            low=self.context_lengths_min,
            high=self.context_lengths_max,
            count=self.context_lengths_num_intervals,
        )

    def depth_percent_grid(self) -> list[float]:
        """Needle depths in percent, ascending, without duplicates."""
        return depth_axis(
            explicit=self.document_depth_percents,
            low=self.document_depth_percent_min,
            high=self.document_depth_percent_max,
            count=self.document_depth_percent_intervals,
            spacing=self.document_depth_percent_interval_type,
        )


# ---- the axes ----------------------------------------------------------------------------------------------------

DepthSpacing = Literal['linear', 'sigmoid']


def context_length_axis(*, explicit: Sequence[int] | None, low: int, high: int, count: int) -> list[int]:
    """Context lengths in tokens, ascending, without duplicates: ``explicit`` when given, else the rounded range."""
    if explicit is not None:
        return sorted(set(explicit))
    return sorted(set(linspace_rounded(low, high, count)))


def depth_axis(
    *, explicit: Sequence[float] | None, low: float, high: float, count: int, spacing: DepthSpacing
) -> list[float]:
    """Needle depths in percent, ascending, without duplicates: ``explicit`` when given, else the spaced range."""
    if explicit is not None:
        return sorted({float(depth) for depth in explicit})
    if spacing == 'sigmoid':
        points = [low + (high - low) * i / (count - 1) for i in range(count)] if count > 1 else [low]
        return sorted({kamradt_logistic(x) for x in points})
    return sorted({float(value) for value in linspace_rounded(low, high, count)})


def linspace_rounded(low: float, high: float, count: int) -> list[int]:
    """Exactly ``np.round(np.linspace(low, high, count))`` as the built-in computes it."""
    # i * step + low, the last value set to high, rounded half to even; a different formula rounds differently at
    # float ties.
    if count == 1:
        return [round(low)]
    step = (high - low) / (count - 1)
    return [round(i * step + low) for i in range(count - 1)] + [round(high)]


def kamradt_logistic(x: float, *, scale: float = 100, midpoint: float = 50, steepness: float = 0.1) -> float:
    # Kamradt's sigmoid spacing keeps the ends exact and squeezes the middle. His logistic falls as x rises
    # (L * sigmoid(-k (x - x0))): over a range not centred on 50 (10..60) its depths lie mostly above 50, and so
    # do ours.
    if x in (0, 100):
        return float(x)
    return round(scale / (1 + math.exp(steepness * (x - midpoint))), 3)
