"""A chain of linked needles (OpenCompass CDME): only together do they answer the question.

The answer must assert exactly one candidate, not negated (a list of the chain's names or a pasted context fails);
CDME's own keyword score is reported beside it for comparability."""

from __future__ import annotations

import random

from ...scoring import keyword_score
from ..answer_format import answer_format_guide
from ..kit import GridCell, NeedleChoice, PlanContext, RuleScore, RuleTarget, Task
from .chains import Chain, pick_chain, reasoning_chains
from .params import ReasoningParams
from .rules import chain_answer_score


class ReasoningChain(Task):
    name = 'reasoning'
    description = 'a chain of linked needles (OpenCompass CDME) placed diff percent apart; one candidate must be named'
    description_zh = '相隔 diff 百分点放置的一串相互关联的针（OpenCompass CDME 的推理链），答案必须只指出一个候选'
    params_model = ReasoningParams
    uses_user_chain = True

    def corpus_needles(self, context: PlanContext) -> list[tuple[tuple[str, ...], str]]:
        if context.subset.keyword is not None:
            return [(context.subset.needles, f'subsets.{context.subset.name}.needles')]
        return [(chain.needles, 'task') for chain in reasoning_chains(context.language)]

    def choose(self, context: PlanContext, cell: GridCell, *, seed: int) -> NeedleChoice:
        options = context.options(ReasoningParams)
        chain = _user_chain(context) or pick_chain(context.language, index=cell.repeat)
        needles = chain.needles
        if options.shuffle_links:
            order = list(needles)
            random.Random(seed).shuffle(order)
            needles = tuple(order)
        depth = cell.depth_percent if cell.depth_percent is not None else 0.0
        return NeedleChoice(
            needles=needles,
            question=chain.question,
            reference_answer=chain.reference,
            answer_keys=(chain.answer,),
            needle_depths=tuple(min(100.0, depth + number * options.diff) for number in range(len(needles))),
            guide=answer_format_guide(needle=chain.needles[-1], answer=chain.answer, language=context.language),
        )

    def check(self, answer: str, target: RuleTarget) -> RuleScore:
        rule = chain_answer_score(
            answer,
            needles=target.needles,
            keyword=target.key,
            reference=target.reference,
            language=target.language,
            question=target.question,
            prompt=target.prompt,
        )
        keyword = keyword_score(answer, keyword=target.key, reference=target.reference)
        return rule.reporting(rule_recall=1.0 if keyword == 1.0 else 0.0, keyword=keyword)


def _user_chain(context: PlanContext) -> Chain | None:
    """The subset's own chain (CDME's needles, keyword, answer and question), when it gives a keyword."""
    subset = context.subset
    if subset.keyword is None:
        return None
    return Chain(
        id=f'user-{subset.name}',
        language=subset.language,
        needles=subset.needles,
        question=subset.retrieval_question,
        answer=subset.keyword,
        # CDME compares the reply with its answer; without one the links are the reference.
        reference=subset.answer or subset.reference_answer,
    )
