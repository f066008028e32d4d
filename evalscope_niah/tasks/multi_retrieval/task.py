"""Several facts about one invented key (RULER's multi-value task), with distractor facts about other keys placed
in the same haystack (RULER's multi-key task); scored exactly per value, never judged."""

from __future__ import annotations

from ...metadata import GridCell, SampleMeta
from ...scoring import PromptText, RuleScore
from ..base import NeedleChoice, PlanContext, Task, with_levenshtein
from .facts import distractor_facts, multi_retrieval_set
from .rules import multi_retrieval_score

# Distractor facts per needle when `distractors` is not set: an answer that lists every magic number it saw then
# gets at most recall 1 x precision 1/4.
DISTRACTORS_PER_NEEDLE = 3


class MultiRetrieval(Task):
    name = 'multi_retrieval'
    description = (
        'num_needles distinct facts about one key among distractor facts about other keys, and one question asking '
        'for all of them; score = recall x precision of the values'
    )
    own_parameters = ('num_needles', 'distractors')

    def choose(self, context: PlanContext, cell: GridCell, *, seed: int) -> NeedleChoice:
        params = context.params
        facts = multi_retrieval_set(language=context.language, count=params.num_needles, seed=seed)
        count = params.distractors if params.distractors is not None else DISTRACTORS_PER_NEEDLE * params.num_needles
        distractors = distractor_facts(
            language=context.language, count=count, seed=seed, exclude_values=facts.values, name=facts.key
        )
        return NeedleChoice(
            needles=facts.needles,
            question=facts.question,
            reference_answer=facts.reference,
            answer_keys=facts.values,
            distractors=tuple(item.needle for item in distractors),
            distractor_values=tuple(item.value for item in distractors),
        )

    def rule_score(self, answer: str, meta: SampleMeta, *, prompt: PromptText | None = None) -> RuleScore:
        rule = multi_retrieval_score(
            answer,
            values=meta.answer_keys,
            distractor_values=meta.distractor_values,
            reference=meta.reference_answer,
            needles=meta.needles,
            question=meta.question,
            language=meta.language,
            prompt=prompt,
        )
        return with_levenshtein(rule, answer, meta)
