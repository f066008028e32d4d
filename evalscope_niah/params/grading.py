"""How answers are graded and reported: the judge check, the effective-length rule, scores on the heatmap."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..vocabulary import EffectiveLengthMode


class ScoringParams(BaseModel):
    """Grading and reporting parameters (part of ``NiahParams``, flat ``extra_params`` names)."""

    model_config = ConfigDict(extra='forbid', frozen=True)

    judge_check: Literal['stop', 'fallback', 'off'] = Field(
        'stop',
        description="Before the model runs, the judge grades calibration answers built from each subset's needle. "
        "'stop': a judge that misgrades them stops the run; 'fallback': the run is scored by rule (labelled as "
        "such); 'off': no check.",
    )
    effective_length_threshold: float = Field(
        0.85, description='Score a context length must reach to count as effective (0.85 as RULER uses).'
    )
    effective_length_mode: EffectiveLengthMode = Field(
        'absolute',
        description="'absolute': mean score >= threshold; 'relative': >= threshold x the shortest length's score "
        '(as NoLiMa).',
    )
    show_score: bool = Field(False, description='Write each cell score on the heatmap images.')

    @field_validator('effective_length_threshold')
    @classmethod
    def _threshold(cls, value: float) -> float:
        if not 0 < value <= 1:
            raise ValueError('must be in (0, 1]')
        return value
