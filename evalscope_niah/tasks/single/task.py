"""The classic test: the subset's needle (or a needle-bank draw) and the question that asks for it; judged."""

from __future__ import annotations

from ...metadata import GridCell, SampleMeta
from ...scoring import PromptText, RuleScore, needle_recall
from ...scoring.text import text_language
from ..base import NeedleChoice, PlanContext, Task, with_levenshtein
from ..guide import answer_format_guide
from .rules import single_needle_score


class SingleNeedle(Task):
    name = 'single'
    description = "the needle(s) and question of each subset (or a needle bank's draws), graded by the LLM judge"
    judged = True
    uses_subset_needles = True
    accepts_bank = True

    def corpus_needles(self, context: PlanContext) -> list[tuple[tuple[str, ...], str]]:
        if context.bank:
            # Draws repeat the same entries (fixed, or a bank smaller than the draws): check each distinct one once.
            return [((needle,), 'needle_bank') for needle in dict.fromkeys(entry.needle for entry in context.bank)]
        return [(context.subset.needles, f'subsets.{context.subset.name}.needles')]

    def choose(self, context: PlanContext, cell: GridCell, *, seed: int) -> NeedleChoice:
        if context.bank:
            entry = context.bank[cell.draw]
            language = text_language(entry.needle, entry.question, default=context.language)
            return NeedleChoice(
                needles=(entry.needle,),
                question=entry.question,
                reference_answer=entry.needle,
                answer_keys=(entry.answer,),
                guide=answer_format_guide(needle=entry.needle, answer=entry.answer, language=language),
            )
        subset = context.subset
        # The guide is written in the needle's language, not the subset's (EvalScope's documented example sets an
        # English needle and question for the chinese subset too).
        language = text_language(*subset.needles, subset.retrieval_question, default=context.language)
        return NeedleChoice(
            needles=tuple(subset.needles),
            question=subset.retrieval_question,
            reference_answer=subset.reference_answer,
            answer_keys=(subset.answer,) if subset.answer else (),
            guide=answer_format_guide(needle=subset.needles[0], answer=subset.answer, language=language),
        )

    def rule_score(self, answer: str, meta: SampleMeta, *, prompt: PromptText | None = None) -> RuleScore:
        rule = single_needle_score(
            answer,
            needles=meta.needles,
            question=meta.question,
            language=meta.language,
            answer_keys=meta.answer_keys,
            reference=meta.reference_answer,
            prompt=prompt,
        )
        # Fact recall stays beside the verdict: the share of the needle's content words the answer holds. Length is
        # no evidence of a paste (a verbose right answer has full recall); a pasted answer's recall is capped at its
        # rule score, so judge-rule agreement compares like with like.
        recall = needle_recall(
            answer, needles=meta.needles, question=meta.question, language=meta.language, penalise_length=False
        )
        if {'paste', 'long'} & set(rule.flags):
            recall = min(recall, rule.accuracy)
        return with_levenshtein(rule, answer, meta, rule_recall=recall)
