"""The multi_retrieval task's own parameters (flat extra_params names)."""

from __future__ import annotations

from pydantic import Field, field_validator

from ...errors import NiahConfigError
from ..kit import TaskParams
from .facts import MAX_DISTRACTORS, MAX_MULTI_VALUES

# Distractor facts per needle when `distractors` is not set: an answer that lists every magic number it saw then
# gets at most recall 1 x precision 1/4.
DISTRACTORS_PER_NEEDLE = 3


class MultiRetrievalParams(TaskParams):
    num_needles: int = Field(3, description=f"Facts per sample for task 'multi_retrieval' (1-{MAX_MULTI_VALUES}).")
    distractors: int | None = Field(
        None,
        description="Task 'multi_retrieval': distractor facts of the same form about other keys placed in the "
        f'haystack (RULER multi-key); None = {DISTRACTORS_PER_NEEDLE} per needle, 0 = none (the task before v4).',
    )

    @field_validator('num_needles')
    @classmethod
    def _needle_count(cls, value: int) -> int:
        if not 1 <= value <= MAX_MULTI_VALUES:
            raise ValueError(f'must be between 1 and {MAX_MULTI_VALUES}')
        return value

    @field_validator('distractors')
    @classmethod
    def _distractor_count(cls, value: int | None) -> int | None:
        if value is not None and not 0 <= value <= MAX_DISTRACTORS:
            raise NiahConfigError('distractors', f'must be between 0 and {MAX_DISTRACTORS}, got {value}')
        return value

    def distractor_count(self) -> int:
        """Distractor facts per sample: as given, else DISTRACTORS_PER_NEEDLE per needle."""
        return self.distractors if self.distractors is not None else DISTRACTORS_PER_NEEDLE * self.num_needles
