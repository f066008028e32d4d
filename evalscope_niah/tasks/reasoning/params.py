"""The reasoning task's own parameters (flat extra_params names, as CDME's)."""

from __future__ import annotations

from pydantic import Field, field_validator

from ..kit import TaskParams


class ReasoningParams(TaskParams):
    diff: float = Field(
        25, description="Task 'reasoning': depth increment in percent of each following link (as CDME's diff)."
    )
    shuffle_links: bool = Field(False, description="Task 'reasoning': insert the links in a shuffled order.")

    @field_validator('diff')
    @classmethod
    def _diff(cls, value: float) -> float:
        if not 0 <= value <= 100:
            raise ValueError('must be between 0 and 100 (percent of the haystack)')
        return value
