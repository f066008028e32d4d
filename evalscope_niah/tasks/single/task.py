"""The classic test: the subset's needle (or a needle-bank pick) and the question that asks for it; judged."""

from __future__ import annotations

from pathlib import Path

from ...errors import NiahConfigError
from ...params.needlebench_names import pick_per_repeat
from ...params.run_params import NiahParams
from ...params.subsets import ResolvedSubset
from ...safe_files import contained_file
from ..answer_format import answer_format_guide
from ..kit import (
    GridCell,
    NeedleChoice,
    PlanContext,
    RuleScore,
    RuleTarget,
    SampleMeta,
    Task,
    needle_recall,
    single_needle_score,
    task_params,
    text_language,
)
from .bank import BankNeedle, language_entries, load_needle_bank, pick_needles, spread_over_grid
from .hooks import several_answer_keys
from .key_facts import derived_keys
from .params import SingleParams

# What a subset of this task reads from the user: given with a needle bank, they would be ignored.
_USER_TEXTS = ('needles', 'retrieval_question', 'answer')


class SingleNeedle(Task):
    name = 'single'
    description = "the needle(s) and question of each subset (or a needle bank's picks), graded by the LLM judge"
    description_zh = '每个子集的针与问题（或针库抽出的针），由 LLM 裁判模型打分'
    judged = True
    params_model = SingleParams

    def asks_user_needles(self, *, keyword: str | None) -> bool:
        return True

    def check_params(self, params: NiahParams) -> None:
        """A needle bank picks single needles: refused with another task, and beside needles or a question it would
        replace."""
        options = task_params(params, SingleParams)
        if options.needle_bank is None:
            return
        if params.task != self.name:
            raise NiahConfigError(
                'needle_bank', f"picks single needles; task {params.task!r} brings its own needles (use task 'single')"
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
                raise NiahConfigError(f'subsets.{name}.task', "needle_bank picks single needles; use task 'single'")

    def needles_per_cell(self, params: NiahParams) -> int:
        return task_params(params, SingleParams).needles_per_cell()

    def picks(self, subset: ResolvedSubset, params: NiahParams) -> tuple[BankNeedle, ...]:
        """The needle-bank entries of the subset's language spread over the grid as inspect_evals spreads them: one
        per (run, length, position), in that order (none without a bank)."""
        options = task_params(params, SingleParams)
        if options.needle_bank is None:
            return ()
        if options.needle_file_name is not None:  # NeedleBench v2: one needle a repeat, picked as it picks
            entries = language_entries(load_needle_bank(options.needle_bank), subset.language)
            return pick_per_repeat(entries, params.num_repeats)
        picked = pick_needles(
            load_needle_bank(options.needle_bank),
            language=subset.language,
            count=options.n_needles,
            sample_method=options.sample_method,
            fixed_index=options.fixed_index,
            seed=params.sampling_seed,
        )
        cells = len(params.context_length_grid()) * len(params.depth_percent_grid())
        return spread_over_grid(picked, cells=cells, runs=options.n_runs)

    def calibration_values(self, meta: SampleMeta) -> tuple[str, ...]:
        """Several needles without a short answer (and no key fact derived): the answer is every needle, as the
        rule's needle recall scores it; with one key fact per needle, every key."""
        if len(meta.needles) > 1 and not meta.answer_keys:
            return tuple(needle.strip() for needle in meta.needles)
        return several_answer_keys(meta)

    def with_corpus_folder(self, params: NiahParams, folder: Path) -> NiahParams:
        """NeedleBench's needle_file_name names a file beside its corpus files, as file_list does."""
        options = task_params(params, SingleParams)
        name = options.needle_file_name
        if name is None or Path(name).expanduser().is_absolute():  # a path the user gave: read where it points
            return params
        # Inside the corpus folder, as corpus files are: no '..', no symlink pointing out, a regular file.
        path = contained_file(folder, name, param='needle_file_name', where=f'needle file {name!r}')
        return params.replacing_task_params(options.model_copy(update={'needle_bank': str(path)}))

    def sent_texts(self, params: NiahParams) -> tuple[list[tuple[str, str]], list[tuple[str, str]]] | None:
        """With a needle bank, every entry of the bank (any may be picked)."""
        options = task_params(params, SingleParams)
        if options.needle_bank is None:
            return None
        bank = load_needle_bank(options.needle_bank)
        return [('needle_bank', entry.needle) for entry in bank], [('needle_bank', entry.question) for entry in bank]

    def corpus_needles(self, context: PlanContext) -> list[tuple[tuple[str, ...], str]]:
        if context.picks:
            # Picks repeat the same entries (fixed, or a bank smaller than the picks): check each distinct one once.
            return [((needle,), 'needle_bank') for needle in dict.fromkeys(entry.needle for entry in context.picks)]
        return [(context.subset.needles, f'subsets.{context.subset.name}.needles')]

    def choose(self, context: PlanContext, cell: GridCell, *, seed: int) -> NeedleChoice:
        if context.picks:
            per_repeat = task_params(context.params, SingleParams).needle_file_name is not None
            entry: BankNeedle = context.picks[cell.repeat if per_repeat else _spread_index(context.params, cell)]
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
        # Needles the user wrote without an answer (EvalScope's parameters have none): each needle's key fact is
        # derived from it and the question, as the default needle's is given. Only the rule looks for it: the guide
        # stays generic, so a derivation never changes what the model is sent.
        keys = (
            (subset.answer,)
            if subset.answer
            else derived_keys(subset.needles, subset.retrieval_question, language=language)
        )
        return NeedleChoice(
            needles=tuple(subset.needles),
            question=subset.retrieval_question,
            reference_answer=subset.reference_answer,
            answer_keys=keys,
            guide=answer_format_guide(needle=subset.needles[0], answer=subset.answer, language=language),
        )

    def check(self, answer: str, target: RuleTarget) -> RuleScore:
        rule = single_needle_score(
            answer,
            needles=target.needles,
            question=target.question,
            language=target.language,
            answer_keys=target.answer_keys,
            reference=target.reference,
            prompt=target.prompt,
            # Several keys of several needles are one fact each, all asked for (derived_keys); one needle's keys
            # are alternatives.
            all_keys=len(target.needles) > 1 and len(target.answer_keys) > 1,
        )
        # Fact recall stays beside the verdict: the share of the needle's content words the answer holds. Length is
        # no evidence of a paste (a verbose right answer has full recall); a pasted answer's recall is capped at its
        # rule score, so judge-rule agreement compares like with like.
        recall = needle_recall(
            answer, needles=target.needles, question=target.question, language=target.language, penalise_length=False
        )
        if {'paste', 'long'} & set(rule.flags):
            recall = min(recall, rule.accuracy)
        return rule.reporting(rule_recall=recall)


def _spread_index(params: NiahParams, cell: GridCell) -> int:
    """The cell's place in the bank's spread: run (``cell.pick``) outer, then length, then position (inspect's
    needle_idx); a control cell takes its length's first position (it inserts nothing)."""
    lengths, depths = params.context_length_grid(), params.depth_percent_grid()
    position = 0 if cell.depth_percent is None else depths.index(cell.depth_percent)
    return (cell.pick * len(lengths) + lengths.index(cell.context_length)) * len(depths) + position
