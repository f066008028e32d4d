"""RULER's needle-in-a-haystack family as one task driven by RULER's arguments (``params.py``); its eight
synthetic.yaml entries are presets (``presets.py``), not classes. Scored exactly by rule, never judged."""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass

from ...params.run_params import NiahParams
from ...params.subsets import ResolvedSubset
from ..kit import (
    GeneratedHaystack,
    GridCell,
    NeedleChoice,
    PlanContext,
    ReportedValue,
    RuleScore,
    RuleTarget,
    SampleData,
    Task,
    task_params,
)
from .params import RulerNiahParams, RulerSpec
from .picks import RULER_DEPTHS, needle, needle_haystack, noise_haystack, pick_distinct, question
from .rules import ruler_niah_score

# Generated haystack lines per token the prompts need: every line of either kind is well over 10 tokens.
_TOKENS_PER_LINE = 10


@dataclass(frozen=True)
class RulerNiahData(SampleData):
    value_type: str = 'numbers'  # RULER's type_needle_v: what a stated value looks like
    keys: tuple[str, ...] = ()  # the keys asked about, in the question's order


class RulerNiah(Task):
    name = 'ruler_niah'
    description = (
        "RULER's NIAH family from its own arguments (type_haystack, type_needle_k/v, num_needle_k/v/q) or a "
        'ruler_preset naming one of its eight synthetic.yaml entries; score = recall x precision of the asked '
        "values, with RULER's string_match_all reported beside it"
    )
    description_zh = (
        'RULER 的 NIAH 系列，由它自己的参数（type_haystack、type_needle_k/v、num_needle_k/v/q）或 ruler_preset '
        '（synthetic.yaml 的八个条目之一）给出；得分 = 所问值的召回率 × 精确率，并同时报告 RULER 的 string_match_all'
    )
    params_model = RulerNiahParams
    reported_values = (
        ReportedValue('precision', 'Precision', measure='precision'),
        ReportedValue('ruler_match', "RULER's string_match_all", measure='recall'),
    )
    partial_credit = True  # RULER scores the share of the asked values an answer holds, in any order

    def haystack_text(self, subset: ResolvedSubset, params: NiahParams, *, tokens: int) -> GeneratedHaystack | None:
        spec = task_params(params, RulerNiahParams).spec()
        lines = tokens // _TOKENS_PER_LINE + 64
        if spec.type_haystack == 'noise':
            return GeneratedHaystack('ruler:noise', noise_haystack(lines))
        if spec.type_haystack == 'needle':
            seed = zlib.crc32(f'{params.sampling_seed}|{subset.name}|ruler-needle-haystack'.encode())
            text = needle_haystack(lines, type_needle_k=spec.type_needle_k, type_needle_v=spec.type_needle_v, seed=seed)
            # one needle a line, as RULER's: the inserted ones too
            name = f'ruler:needle:{spec.type_needle_k}:{spec.type_needle_v}'
            return GeneratedHaystack(name, text, needle_separator='\n')
        return None  # essay: the subset's own corpus

    def choose(self, context: PlanContext, cell: GridCell, *, seed: int) -> NeedleChoice:
        spec = context.options(RulerNiahParams).spec()
        rng = random.Random(seed)
        haystack = context.corpus_text
        keys = pick_distinct(spec.type_needle_k, spec.num_needle_k, rng, avoid=lambda key: key in haystack)
        flat = pick_distinct(
            spec.type_needle_v,
            spec.num_needle_k * spec.num_needle_v,
            rng,
            avoid=lambda value: value in haystack or value in keys,
        )
        values = [flat[index * spec.num_needle_v : (index + 1) * spec.num_needle_v] for index in range(len(keys))]
        asked = rng.sample(range(len(keys)), spec.num_needle_q)  # in RULER's order: the question lists them so
        others = [index for index in range(len(keys)) if index not in asked]
        answers = [value for index in asked for value in values[index]]
        depths = _depths(spec, rng, first=cell.depth_percent if cell.depth_percent is not None else 0.0)
        return NeedleChoice(
            needles=tuple(needle(spec.type_needle_v, keys[i], value) for i in asked for value in values[i]),
            question=question(spec.type_needle_v, [keys[i] for i in asked], values_asked=len(answers)),
            reference_answer=', '.join(answers),
            answer_keys=tuple(answers),
            needle_depths=depths[: len(answers)],
            distractors=tuple(needle(spec.type_needle_v, keys[i], value) for i in others for value in values[i]),
            distractor_depths=depths[len(answers) :] or None,
            data=RulerNiahData(value_type=spec.type_needle_v, keys=tuple(keys[i] for i in asked)),
        )

    def check(self, answer: str, target: RuleTarget) -> RuleScore:
        data = target.data(RulerNiahData)
        return ruler_niah_score(
            answer,
            values=target.answer_keys,
            value_type=data.value_type,
            keys=data.keys,
            reference=target.reference,
            needles=target.needles,
            question=target.question,
            prompt=target.prompt,
        )


def _depths(spec: RulerSpec, rng: random.Random, *, first: float) -> tuple[float, ...]:
    """One depth per needle: the cell's for the first asked one (the heatmap's depth), RULER's 40 depths picked
    without replacement for the rest (with replacement past 39)."""
    rest = spec.num_needle_k * spec.num_needle_v - 1
    pool = [depth for depth in RULER_DEPTHS if depth != round(first)]
    picked = rng.sample(pool, rest) if rest <= len(pool) else rng.choices(pool, k=rest)
    return (float(first), *(float(depth) for depth in picked))
