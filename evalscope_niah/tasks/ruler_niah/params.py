"""The ruler_niah task's own parameters: RULER's niah arguments under RULER's names, and a preset naming one of its
synthetic.yaml entries. Each value RULER allows and we do not is refused naming RULER and what to write."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field, model_validator

from ...errors import NiahConfigError
from ..kit import TaskParams
from .presets import HAYSTACK_TYPES, NEEDLE_TYPES, RULER_DEFAULTS, preset, preset_names

# Needles per sample beyond which a prompt is mostly needles; RULER's own entries use at most 4.
MAX_NEEDLES_PER_KIND = 64
MAX_NEEDLES = 256
_TYPE_PARAMS = {'type_haystack': HAYSTACK_TYPES, 'type_needle_k': NEEDLE_TYPES, 'type_needle_v': NEEDLE_TYPES}
_COUNT_PARAMS = ('num_needle_k', 'num_needle_v', 'num_needle_q')


@dataclass(frozen=True)
class RulerSpec:
    """One RULER niah variant, every argument decided (``num_needle_k`` already max(k, q), as RULER sets it)."""

    type_haystack: str
    type_needle_k: str
    type_needle_v: str
    num_needle_k: int
    num_needle_v: int
    num_needle_q: int


def _ruler(description: str, zh: str) -> Any:
    return Field(
        None,
        description=f"Task 'ruler_niah': RULER's {description}",
        json_schema_extra={'description_zh': f"任务 'ruler_niah'：RULER 的 {zh}"},
    )


class RulerNiahParams(TaskParams):
    ruler_preset: str | None = Field(
        None,
        description="Task 'ruler_niah': one of RULER's synthetic.yaml niah entries by name (niah_single_1..3, "
        'niah_multikey_1..3, niah_multivalue, niah_multiquery; ruler_niah_multikey_2 is the same); RULER arguments '
        "given beside it replace the entry's. None: RULER's defaults (niah_single_2).",
        json_schema_extra={
            'description_zh': "任务 'ruler_niah'：按名称选 RULER synthetic.yaml 的一个 niah 条目（niah_single_1..3、"
            'niah_multikey_1..3、niah_multivalue、niah_multiquery；写成 ruler_niah_multikey_2 亦同）；同时给出的 RULER '
            '参数替换该条目的值。None：RULER 的默认值（niah_single_2）。'
        },
    )
    type_haystack: str | None = _ruler(
        'type_haystack: noise (repeated noise sentences), essay (the corpus) or needle (lines of needles about other '
        'keys).',
        'type_haystack：noise（重复的噪声句子）、essay（语料）或 needle（关于其他键的针，一行一条）。',
    )
    type_needle_k: str | None = _ruler(
        'type_needle_k: the keys, words, numbers (7 digits) or uuids.',
        'type_needle_k：键的类型，words、numbers（7 位数字）或 uuids。',
    )
    type_needle_v: str | None = _ruler(
        'type_needle_v: the values, words, numbers (7 digits) or uuids.',
        'type_needle_v：值的类型，words、numbers（7 位数字）或 uuids。',
    )
    num_needle_k: int | None = _ruler(
        'num_needle_k: keys with a needle in the haystack (at least num_needle_q).',
        'num_needle_k：在文本中放针的键数（至少为 num_needle_q）。',
    )
    num_needle_v: int | None = _ruler('num_needle_v: values (needles) per key.', 'num_needle_v：每个键的值（针）数。')
    num_needle_q: int | None = _ruler(
        'num_needle_q: keys asked about in one question.', 'num_needle_q：一个问题所问的键数。'
    )

    @model_validator(mode='after')
    def _check(self) -> RulerNiahParams:
        if self.ruler_preset is not None and preset(self.ruler_preset) is None:
            raise NiahConfigError(
                'ruler_preset',
                f"{self.ruler_preset!r} is not one of RULER's niah entries; write one of {', '.join(preset_names())} "
                "(RULER's other synthetic tasks, vt, cwe, fwe and qa, are not needle retrieval and have no preset)",
            )
        for name, allowed in _TYPE_PARAMS.items():
            value = getattr(self, name)
            if value is not None and value not in allowed:
                raise NiahConfigError(
                    name,
                    f'RULER argument {name}={value!r} is not one RULER niah has; write one of {", ".join(allowed)}',
                )
        for name in _COUNT_PARAMS:
            value = getattr(self, name)
            if value is not None and not 1 <= value <= MAX_NEEDLES_PER_KIND:
                raise NiahConfigError(name, f'RULER argument {name} must be between 1 and {MAX_NEEDLES_PER_KIND}')
        spec = self.spec()
        if spec.num_needle_k * spec.num_needle_v > MAX_NEEDLES:
            raise NiahConfigError(
                'num_needle_v',
                f'num_needle_k x num_needle_v = {spec.num_needle_k * spec.num_needle_v} needles per sample; at most '
                f'{MAX_NEEDLES}',
            )
        return self

    def spec(self) -> RulerSpec:
        """The variant: the preset's arguments (or RULER's defaults), each replaced by the one given."""
        base = dict((preset(self.ruler_preset) if self.ruler_preset else None) or RULER_DEFAULTS)
        names = (*_TYPE_PARAMS, *_COUNT_PARAMS)
        given = {name: getattr(self, name) for name in names if getattr(self, name) is not None}
        values: dict[str, Any] = {**base, **given}
        values['num_needle_k'] = max(values['num_needle_k'], values['num_needle_q'])  # as RULER's niah.py does
        return RulerSpec(**values)
