"""Several facts about one invented key (RULER's multi-value task); scored exactly per value, never judged."""

from __future__ import annotations

from ..metadata import GridCell, SampleMeta
from ..needles import multi_retrieval_set
from ..scoring import levenshtein_score, multi_retrieval_scores
from .base import NeedleChoice, PlanContext, RuleScore, Task


class MultiRetrieval(Task):
    name = 'multi_retrieval'
    description = 'num_needles distinct facts and one question asking for all, scored per needle (recall, precision)'

    def choose(self, context: PlanContext, cell: GridCell, *, seed: int) -> NeedleChoice:
        facts = multi_retrieval_set(language=context.language, count=context.params.num_needles, seed=seed)
        return NeedleChoice(
            needles=facts.needles,
            question=facts.question,
            reference_answer=facts.reference,
            answer_keys=facts.values,
        )

    def rule_score(self, answer: str, meta: SampleMeta) -> RuleScore:
        scores = multi_retrieval_scores(answer, values=meta.answer_keys)
        return RuleScore(
            values={
                'acc': scores.f1,
                'rule_recall': scores.recall,
                'precision': scores.precision,
                'levenshtein': levenshtein_score(answer, meta.reference_answer),
            },
            explanation=f'values found {scores.recall:.2f} (recall), precision {scores.precision:.2f}',
        )
