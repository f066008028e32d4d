"""The single task's own parameters: where its needles come from (the subset's, or a needle bank picked as
inspect_evals' niah picks), as flat extra_params names."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ...errors import NiahConfigError
from ...params.run_size import MAX_GRID_AXIS
from ..kit import TaskParams

# Bank-picking options of inspect_evals: changing any of them means the needles come from a needle bank.
BANK_OPTIONS = ('n_needles', 'sample_method', 'fixed_index', 'n_runs')


class SingleParams(TaskParams):
    needle_bank: str | None = Field(
        None,
        description="Pick needles from a needle bank: 'builtin' (fictional facts, English and Chinese, shipped) or "
        'a path to a JSONL/JSON file of {needle, question, answer, language}. None uses the subset needles, '
        'unless n_needles, sample_method, fixed_index or n_runs is given (then builtin).',
    )
    needle_file_name: str | None = Field(
        None,
        description='OpenCompass NeedleBench v2: its needle file (records of needle, retrieval_question, arg1, arg2, '
        'gold_standard_answer, language), read from the corpus folder unless a path is given; one needle a repeat, '
        'picked as NeedleBench picks (the needle_bank it sets).',
    )
    n_needles: int = Field(
        1,
        description='inspect_evals: needles picked from the bank, spread over the cells as inspect spreads them (cut '
        'or cycled to one per cell, lengths outer, positions inner); each cell is one sample per run.',
    )
    sample_method: Literal['fixed', 'sequential', 'random'] = Field(
        'fixed', description="inspect_evals: how bank needles are picked: 'fixed', 'sequential' or 'random'."
    )
    fixed_index: int = Field(0, description="inspect_evals: bank index for 'fixed' (start index for 'sequential').")
    n_runs: int = Field(
        1,
        description="inspect_evals: repeats of the whole grid; each run gives the cells the previous run's needles "
        'shifted on by one cell.',
    )

    @model_validator(mode='before')
    @classmethod
    def _bank_when_picking(cls, values: Any) -> Any:
        if not isinstance(values, Mapping):
            return values
        values = dict(values)
        file_name = values.get('needle_file_name')
        if file_name is not None:  # NeedleBench's needle file is a needle bank picked its way
            if values.get('needle_bank') not in (None, file_name):
                raise NiahConfigError(
                    'needle_file_name', "is NeedleBench's name for the needle bank; give it or needle_bank, not both"
                )
            if _changed(values.get):
                raise NiahConfigError(
                    'needle_file_name',
                    f'picks one needle a repeat as NeedleBench does, so {", ".join(_changed(values.get))} would be '
                    'ignored; give needle_bank to pick with them instead',
                )
            values['needle_bank'] = file_name
        # EvalScope passes every default along, so only a changed bank option can mean "use the bank".
        if values.get('needle_bank') is None and _changed(values.get):
            values['needle_bank'] = 'builtin'
        return values

    @field_validator('n_needles', 'n_runs')
    @classmethod
    def _at_least_one(cls, value: int) -> int:
        if not 1 <= value <= MAX_GRID_AXIS:
            raise ValueError(f'must be at least 1 (and at most {MAX_GRID_AXIS:,})')
        return value

    @field_validator('fixed_index')
    @classmethod
    def _not_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError('must be 0 or more')
        return value

    @field_validator('needle_bank', 'needle_file_name')
    @classmethod
    def _bank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be 'builtin' or a path to a needle bank file")
        return value

    def needles_per_cell(self) -> int:
        """Samples per cell: one per run with a needle bank (inspect spreads its n_needles over the cells), else one."""
        return self.n_runs if self.needle_bank is not None else 1

    def changed_bank_options(self) -> list[str]:
        """The bank options given away from their defaults (what switched the bank on, for messages)."""
        return _changed(lambda name: getattr(self, name))


def _changed(value: Callable[[str], Any]) -> list[str]:
    """The bank options whose value is given away from its default (None: not given)."""
    return [name for name in BANK_OPTIONS if value(name) not in (None, SingleParams.model_fields[name].default)]
