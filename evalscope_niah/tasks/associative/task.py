"""One-hop associative retrieval (NoLiMa's idea, our own English and Chinese pairs): the needle states a fact about
a character and the question reaches it only through common knowledge, sharing no word with the needle.

The answer is the character's name. A literal search for the question's words finds nothing in the haystack (the
hop's target is checked absent from the corpus); ``associative_distractor`` adds a sentence that does share them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...escaping import inert_logger
from ..kit import (
    RULE_PASS_THRESHOLD,
    GridCell,
    NeedleChoice,
    PlanContext,
    RuleScore,
    RuleTarget,
    SampleData,
    SampleMeta,
    Task,
    one_candidate_score,
)
from .pairs import check_corpus, literal_distractor, names, pick_pairs
from .params import AssociativeParams

logger = inert_logger(__name__)


@dataclass(frozen=True)
class AssociativeData(SampleData):
    candidates: tuple[str, ...] = ()  # every character name of the language: naming several of them is hedging
    judge_hint: str = ''  # the needle and its hop, so the judge can tell the picked name is reached by the link


class Associative(Task):
    name = 'associative'
    description = (
        'a fact about a character reached through one hop of common knowledge (question and needle share no word); '
        "the answer is the character's name"
    )
    description_zh = '关于某个角色的事实，需要借助一步常识才能由问题联想到（问题与针没有共同词语），答案是角色的名字'
    judged = True
    params_model = AssociativeParams
    # NoLiMa's measure: a length is effective while the score holds 85% of the shortest length's.
    effective_length_mode = 'relative'

    def corpus_needles(self, context: PlanContext) -> list[tuple[tuple[str, ...], str]]:
        # Names and hop targets found in the corpus are left out of the picks; say which, once per subset.
        for message in check_corpus(context.corpus_text, language=context.language).messages():
            logger.warning('needle_haystack subset %r: %s', context.subset.name, message)
        return []

    def choose(self, context: PlanContext, cell: GridCell, *, seed: int) -> NeedleChoice:
        params = context.params
        depths = params.depth_percent_grid()
        # The same pairs at every length of a depth (a row compares lengths on the same facts); repeats of a cell
        # take different pairs, and the depths of a grid walk the set.
        position = depths.index(cell.depth_percent) if cell.depth_percent in depths else len(depths)
        picked = pick_pairs(
            language=context.language,
            seed=params.sampling_seed,
            count=params.num_repeats,
            cell=position,
            corpus_text=context.corpus_text,
        )
        pair, name = picked[cell.repeat]
        distractors: tuple[str, ...] = ()
        distractor_depths: tuple[float, ...] | None = None
        if context.options(AssociativeParams).associative_distractor:
            distractors = (literal_distractor(pair, language=context.language),)
            depth = cell.depth_percent if cell.depth_percent is not None else 0.0
            distractor_depths = ((depth + 50.0) % 100.0,)  # as far from the needle as the haystack allows
        return NeedleChoice(
            needles=(pair.needle_for(name),),
            question=pair.question,
            reference_answer=name,
            answer_keys=(name,),
            distractors=distractors,
            distractor_depths=distractor_depths,
            data=AssociativeData(
                candidates=names(context.language), judge_hint=f'{pair.needle_for(name)} (link: {pair.hop})'
            ),
        )

    def check(self, answer: str, target: RuleTarget) -> RuleScore:
        # The picked name asserted once, not negated, and no other character name beside it.
        rule = one_candidate_score(
            answer,
            keyword=target.answer_keys[0],
            candidates=target.data(AssociativeData).candidates,
            language=target.language,
            # The needle as reference: an answer that restates it (cue words such as 'actually' included) is fine.
            reference=' '.join(target.needles) or target.reference,
            needles=target.needles,
            question=target.question,
            prompt=target.prompt,
        )
        return rule.reporting(rule_recall=1.0 if rule.accuracy >= RULE_PASS_THRESHOLD else 0.0)

    def judge_hint(self, meta: SampleMeta) -> str | None:
        return AssociativeData.of(meta).judge_hint or None
