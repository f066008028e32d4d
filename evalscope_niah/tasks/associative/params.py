"""The associative task's own parameters (flat extra_params names)."""

from __future__ import annotations

from pydantic import Field

from ..kit import TaskParams


class AssociativeParams(TaskParams):
    associative_distractor: bool = Field(
        False,
        description="Task 'associative': also place a sentence that shares the question's words but does not answer "
        'it, away from the needle (NoLiMa-Hard).',
    )
