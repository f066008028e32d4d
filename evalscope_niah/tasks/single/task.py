"""The classic test: the subset's needle (or a needle-bank draw) and the question that asks for it; judged."""

from __future__ import annotations

from ...errors import NiahConfigError
from ...metadata import GridCell, SampleMeta
from ...params.run_params import NiahParams
from ...params.subsets import ResolvedSubset
from ...scoring import PromptText, RuleScore, needle_recall
from ...scoring.text import text_language
from ..base import NeedleChoice, PlanContext, Task, with_levenshtein
from ..guide import answer_format_guide
from .bank import BankNeedle, draw_needles, load_needle_bank, spread_over_grid
from .params import SingleParams
from .rules import single_needle_score

# What a subset of this task reads from the user: given with a needle bank, they would be ignored.
_USER_TEXTS = ('needles', 'retrieval_question', 'answer')


class SingleNeedle(Task):
    name = 'single'
    description = "the needle(s) and question of each subset (or a needle bank's draws), graded by the LLM judge"
    description_zh = '每个子集的针与问题（或针库抽出的针），由 LLM 裁判模型打分'
    judged = True
    params_model = SingleParams

    def asks_user_needles(self, *, keyword: str | None) -> bool:
        return True

    def check_params(self, params: NiahParams) -> None:
        """A needle bank draws single needles: refused with another task, and beside needles or a question it would
        replace."""
        options = params.task_params(SingleParams)
        if options.needle_bank is None:
            return
        if params.task != self.name:
            raise NiahConfigError(
                'needle_bank', f"draws single needles; task {params.task!r} brings its own needles (use task 'single')"
            )
        reason = f'needles come from needle_bank {options.needle_bank!r}' + (
            f' ({", ".join(changed)} given)' if (changed := options.changed_bank_options()) else ''
        )
        for field in _USER_TEXTS:
            if getattr(params, field) is not None:
                raise NiahConfigError(field, f'{reason}, so {field} would be ignored; give one or the other')
        for name, override in params.subsets.items():
            for field in (*_USER_TEXTS, 'keyword'):
                if getattr(override, field, None) is not None:
                    raise NiahConfigError(
                        f'subsets.{name}.{field}', f'{reason}, so it would be ignored; give one or the other'
                    )
        for name, override in params.subsets.items():
            if override.task is not None and override.task != self.name:
                raise NiahConfigError(f'subsets.{name}.task', "needle_bank draws single needles; use task 'single'")

    def draws_per_cell(self, params: NiahParams) -> int:
        return params.task_params(SingleParams).draws_per_cell()

    def draws(self, subset: ResolvedSubset, params: NiahParams) -> tuple[BankNeedle, ...]:
        """The needle-bank entries of the subset's language spread over the grid as inspect_evals spreads them: one
        per (run, length, position), in that order (none without a bank)."""
        options = params.task_params(SingleParams)
        if options.needle_bank is None:
            return ()
        drawn = draw_needles(
            load_needle_bank(options.needle_bank),
            language=subset.language,
            count=options.n_needles,
            sample_method=options.sample_method,
            fixed_index=options.fixed_index,
            seed=params.sampling_seed,
        )
        cells = len(params.context_length_grid()) * len(params.depth_percent_grid())
        return spread_over_grid(drawn, cells=cells, runs=options.n_runs)

    def sent_texts(self, params: NiahParams) -> tuple[list[tuple[str, str]], list[tuple[str, str]]] | None:
        """With a needle bank, every entry of the bank (any may be drawn)."""
        options = params.task_params(SingleParams)
        if options.needle_bank is None:
            return None
        bank = load_needle_bank(options.needle_bank)
        return [('needle_bank', entry.needle) for entry in bank], [('needle_bank', entry.question) for entry in bank]

    def corpus_needles(self, context: PlanContext) -> list[tuple[tuple[str, ...], str]]:
        if context.draws:
            # Draws repeat the same entries (fixed, or a bank smaller than the draws): check each distinct one once.
            return [((needle,), 'needle_bank') for needle in dict.fromkeys(entry.needle for entry in context.draws)]
        return [(context.subset.needles, f'subsets.{context.subset.name}.needles')]

    def choose(self, context: PlanContext, cell: GridCell, *, seed: int) -> NeedleChoice:
        if context.draws:
            entry: BankNeedle = context.draws[_spread_index(context.params, cell)]
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


def _spread_index(params: NiahParams, cell: GridCell) -> int:
    """The cell's place in the bank's spread: run (``cell.draw``) outer, then length, then position (inspect's
    needle_idx); a control cell takes its length's first position (it inserts nothing)."""
    lengths, depths = params.context_length_grid(), params.depth_percent_grid()
    position = 0 if cell.depth_percent is None else depths.index(cell.depth_percent)
    return (cell.draw * len(lengths) + lengths.index(cell.context_length)) * len(depths) + position
