"""Several facts about one invented key (RULER's multi-value task), with distractor facts about other keys placed
in the same haystack (RULER's multi-key task); scored exactly per value, never judged."""

from __future__ import annotations

from dataclasses import dataclass

from ..kit import GridCell, NeedleChoice, PlanContext, ReportedValue, RuleScore, RuleTarget, SampleData, Task
from .facts import distractor_facts, multi_retrieval_set
from .params import MultiRetrievalParams
from .rules import multi_retrieval_score


@dataclass(frozen=True)
class MultiRetrievalData(SampleData):
    # Values of the facts placed to mislead: an answer that gives them is wrong.
    distractor_values: tuple[str, ...] = ()


class MultiRetrieval(Task):
    name = 'multi_retrieval'
    description = (
        'num_needles distinct facts about one key among distractor facts about other keys, and one question asking '
        'for all of them; score = recall x precision of the values'
    )
    description_zh = (
        '关于同一个键的 num_needles 条不同事实，混在关于其他键的干扰事实之中，一个问题问全部，得分 = 召回率 × 精确率'
    )
    params_model = MultiRetrievalParams
    # The share of the values given that are the key's.
    reported_values = (ReportedValue('precision', 'Precision', measure='precision'),)
    partial_credit = True  # each value found is a share of the score; their order is free

    def choose(self, context: PlanContext, cell: GridCell, *, seed: int) -> NeedleChoice:
        options = context.options(MultiRetrievalParams)
        facts = multi_retrieval_set(language=context.language, count=options.num_needles, seed=seed)
        distractors = distractor_facts(
            language=context.language,
            count=options.distractor_count(),
            seed=seed,
            exclude_values=facts.values,
            name=facts.key,
        )
        return NeedleChoice(
            needles=facts.needles,
            question=facts.question,
            reference_answer=facts.reference,
            answer_keys=facts.values,
            distractors=tuple(item.needle for item in distractors),
            data=MultiRetrievalData(distractor_values=tuple(item.value for item in distractors)),
        )

    def check(self, answer: str, target: RuleTarget) -> RuleScore:
        return multi_retrieval_score(
            answer,
            values=target.answer_keys,
            distractor_values=target.data(MultiRetrievalData).distractor_values,
            reference=target.reference,
            needles=target.needles,
            question=target.question,
            language=target.language,
            prompt=target.prompt,
        )
