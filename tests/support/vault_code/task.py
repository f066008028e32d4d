"""The vault-code task: an invented six-digit code of the vault on one floor (its parameter, ``vault_floor``), picked
from this folder's ``vault.json``; judged, with a hint for the judge, scored by rule as a single needle whose key is
the code, and one value of its own in every result (``code_found``: the code appears in the answer)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, field_validator

from evalscope_niah.tasks.kit import (
    GridCell,
    NeedleChoice,
    PlanContext,
    ReportedValue,
    RuleScore,
    RuleTarget,
    SampleData,
    SampleMeta,
    Task,
    TaskParams,
    single_needle_score,
)

VAULT = json.loads(Path(__file__).with_name('vault.json').read_text(encoding='utf-8'))


class VaultParams(TaskParams):
    vault_floor: int = Field(
        3,
        description="Task 'vault_code': the floor whose vault code is asked (1-99).",
        json_schema_extra={'description_zh': "任务 'vault_code'：问的是哪一层金库的密码（1-99）。"},
    )

    @field_validator('vault_floor')
    @classmethod
    def _floor(cls, value: int) -> int:
        if not 1 <= value <= 99:
            raise ValueError('must be a floor between 1 and 99')
        return value


@dataclass(frozen=True)
class VaultData(SampleData):
    floor: int = 0


class VaultCode(Task):
    name = 'vault_code'
    description = "the code of one floor's vault, judged with a hint"
    description_zh = '某一层金库的密码，评审时附带提示'
    judged = True
    params_model = VaultParams
    reported_values = (ReportedValue('code_found', 'Code found'),)

    def choose(self, context: PlanContext, cell: GridCell, *, seed: int) -> NeedleChoice:
        floor = context.options(VaultParams).vault_floor
        code = VAULT['codes'][seed % len(VAULT['codes'])]
        text = VAULT[context.language]
        needle = text['needle'].format(floor=floor, code=code)
        return NeedleChoice(
            needles=(needle,),
            question=text['question'].format(floor=floor),
            reference_answer=needle,
            answer_keys=(code,),
            data=VaultData(floor=floor),
        )

    def check(self, answer: str, target: RuleTarget) -> RuleScore:
        # The code stated plainly, by the single-needle ladder (a negated, hedged, listed or pasted code fails);
        # code_found reports its mere presence beside that verdict.
        found = float(re.search(rf'(?<!\d){target.key}(?!\d)', answer) is not None)
        rule = single_needle_score(
            answer,
            needles=target.needles,
            question=target.question,
            language=target.language,
            answer_keys=target.answer_keys,
            reference=target.reference,
            prompt=target.prompt,
        )
        return rule.reporting(code_found=found)

    def judge_hint(self, meta: SampleMeta) -> str | None:
        return VAULT[meta.language]['hint'].format(floor=VaultData.of(meta).floor)
