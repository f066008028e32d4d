"""Parameters x corpora -> needle-in-a-haystack samples, built lazily, dimensions kept as data."""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import NiahConfigError
from ..escaping import inert_logger
from ..languages import PROSE_SENTENCE_END_RULE, text_language
from ..metadata import GridCell, SampleMeta
from ..params.prompt_safety import check_no_delimiters, check_sendable, template_tag_names, warn_judge_instructions
from ..params.run_params import NiahParams
from ..params.subsets import ResolvedSubset
from ..tasks import ABSENT_REFERENCE, get_task
from ..tasks.answer_format import guided_question
from ..tasks.base import PlanContext
from ..tasks.single.hooks import corpus_folder_params, picks_for_subset, sent_texts
from .corpus import Corpus, corpus_folder, generated_corpus, load_corpus
from .haystack import (
    Haystack,
    HaystackBuilder,
    PromptFrame,
    RepeatedCorpus,
    find_needle_in_corpus,
    has_sentence_boundary,
    minimum_context_length,
    needle_separators,
    needle_text,
    next_sentence_start,
    prompt_frame,
    spread_depths,
)
from .prompts import PromptSpec, chat_messages
from .repeated_corpus import check_corpus_repeats
from .tokenization import Tokenizer, load_tokenizer, shared_counter, token_index

logger = inert_logger(__name__)

__all__ = [
    'GridCell',
    'NeedleSample',
    'SamplePlan',
    'SubsetSampler',
    'cells_within_limit',
    'iter_plans',
    'iter_samples',
    'subset_samplers',
]


class _ForwardsToMeta:
    """A plan or sample reads as its metadata (plan.question, sample.context_length): one set of field names."""

    meta: SampleMeta

    def __getattr__(self, name: str):
        if name == 'meta':  # not yet set (copy, unpickling): never recurse
            raise AttributeError(name)
        return getattr(self.meta, name)


@dataclass(frozen=True)
class SamplePlan(_ForwardsToMeta):
    """Everything about a sample except its haystack: cheap, so a whole grid of plans costs nothing to hold."""

    meta: SampleMeta  # needles in insertion order (none for a control cell); question as asked, guide included
    # One target depth per inserted text (needles, then distractors); None spreads the needles from the cell depth.
    needle_depths: tuple[float, ...] | None
    prefix_tokens: int  # tokens every prompt of this subset and start shares before the haystack
    distractors: tuple[str, ...] = ()  # placed in the haystack beside the needles, never asked about

    @property
    def inserted(self) -> tuple[str, ...]:
        return self.meta.needles + self.distractors


@dataclass(frozen=True)
class NeedleSample(_ForwardsToMeta):
    """A built sample: its metadata with what the build measured, and the prompt."""

    meta: SampleMeta
    system_prompt: str
    user_prompt: str

    def messages(self) -> list[dict[str, str]]:
        return chat_messages(self.system_prompt, self.user_prompt)

    def to_record(self) -> dict:
        record = self.meta.to_dict()
        record['messages'] = self.messages()
        return record


class SubsetSampler:
    """Plans and builds the samples of one subset; corpus tokens are indexed only as far as the lengths need."""

    def __init__(
        self,
        *,
        subset: ResolvedSubset,
        corpus: Corpus,
        tokenizer: Tokenizer,
        prompt: PromptSpec,
        max_context_length: int,
        params: NiahParams | None = None,
    ) -> None:
        params = params or NiahParams()
        _refuse_corpus_without_sentences(corpus, subset)
        self.subset = subset
        self.corpus = corpus
        self.tokenizer = tokenizer
        self.prompt = prompt
        self.params = params
        self.task = get_task(subset.task)
        # What the task picks for this subset (a needle bank's entries), once: every cell plans from the same picks.
        self.context = PlanContext(
            subset=subset, params=params, picks=picks_for_subset(self.task, subset, params), corpus_text=corpus.text
        )
        for needles, param in self.task.corpus_needles(self.context):
            occurring = find_needle_in_corpus(corpus.text, needles)
            if occurring is not None:
                raise NiahConfigError(
                    param,
                    f'the needle {occurring!r} already occurs in {subset.corpus_file}; a model could answer without '
                    'retrieving the inserted needle. Choose a needle that is not in the corpus',
                )
        self._counter = shared_counter(tokenizer)
        self._span_tokens = _indexed_span(num_repeats=params.num_repeats, max_context_length=max_context_length)
        if self._span_tokens >= _ANNOUNCED_SPAN_TOKENS:
            # The one pre-run step that can take seconds on a cold cache (about 1 s per 100k tokens, one core).
            logger.info(
                'needle_haystack: counting up to %d tokens of %s with %s (cached for later runs)',
                self._span_tokens,
                subset.corpus_file,
                tokenizer.name,
            )
        index = token_index(tokenizer, corpus.text, text_sha256=corpus.sha256, min_tokens=self._span_tokens)
        check_corpus_repeats(  # index.total_tokens is a lower bound when only a prefix is indexed
            subset=subset,
            corpus_tokens=index.total_tokens,
            max_context_length=max_context_length,
            max_corpus_repeats=params.max_corpus_repeats,
        )
        self._corpus = RepeatedCorpus(corpus.text, index)
        self._starts = [self._start_token(repeat) for repeat in range(params.num_repeats)]
        self._builders: dict[tuple[tuple[str, ...], str], HaystackBuilder] = {}
        self._frames: dict[str, PromptFrame] = {}
        self._prefix_tokens = self._counter(self._frame(subset.retrieval_question).prefix)

    @property
    def grid_cells(self) -> list[GridCell]:
        """Every cell of this subset, in generation order (EvalScope's --limit picks from them)."""
        return self.params.cells([self.subset.name])

    # ---- needles per task ------------------------------------------------------------------------------------

    def plan(self, cell: GridCell) -> SamplePlan:
        subset, params = self.subset, self.params
        depth = cell.depth_percent if cell.depth_percent is not None else 0.0
        choice = self.task.choose(self.context, cell, seed=self._seed(cell))
        # The needle's and question's own language (an English needle in the chinese subset is English): the guide,
        # the control's reference, the rules and the judge check follow it; the haystack keeps the subset's.
        language = text_language(*choice.needles, choice.question, default=subset.language)
        needles, needle_depths, question, reference = (
            choice.needles,
            choice.needle_depths,
            choice.question,
            choice.reference_answer,
        )
        guide = choice.guide
        if params.guide and guide:
            question = guided_question(question, guide, language=language)
        distractors = choice.distractors
        if distractors:
            # Explicit depths for every inserted text: the needles' own (or spread from the cell depth), then the
            # distractors' (or evenly over the haystack).
            count = len(distractors)
            needle_depths = tuple(needle_depths or spread_depths(depth, len(needles))) + tuple(
                choice.distractor_depths or ((index + 0.5) * 100 / count for index in range(count))
            )
        if cell.control:
            needles, needle_depths, reference, distractors = (), None, ABSENT_REFERENCE[language], ()
        target = cell.context_length - params.length_buffer
        if cell.control:
            # No needle: it shares text with the others up to where its haystack ends and the template suffix starts.
            frame = self._frame(question)
            divergence = target - (frame.empty_tokens - self._prefix_tokens)
        else:
            first = min(needle_depths) if needle_depths else depth
            haystack = target - self._prefix_tokens
            usable = max(0, haystack - params.start_buffer - params.end_buffer)
            divergence = self._prefix_tokens + params.start_buffer + round(usable * first / 100)
        meta = SampleMeta(
            subset=cell.subset,
            language=language,
            task=subset.task,
            context_length=cell.context_length,
            depth_percent=cell.depth_percent,
            repeat=cell.repeat,
            pick=cell.pick,
            needles=tuple(needles),
            question=question,
            reference_answer=reference,
            answer_keys=tuple(choice.answer_keys),
            start_token=self._starts[cell.repeat],
            divergence_token=divergence,
            task_data=choice.data.to_json() if choice.data is not None else {},
        )
        return SamplePlan(
            meta=meta, needle_depths=needle_depths, prefix_tokens=self._prefix_tokens, distractors=tuple(distractors)
        )

    def _seed(self, cell: GridCell) -> int:
        # Stable across processes and platforms (hash() is salted): a rerun picks the same numbers and links. The
        # length is left out: a depth asks the same facts at every length, so a change along a row is the length's
        # doing, and the shortest usable length of the grid is known exactly (see check_lengths).
        text = f'{self.params.sampling_seed}|{cell.subset}|{cell.depth_percent}|{cell.repeat}|{cell.pick}'
        return zlib.crc32(text.encode())

    def _start_token(self, repeat: int) -> int:
        """Repeat r starts r/R of the way into the corpus, or into the indexed span of a longer corpus (by tokens,
        whatever the cache holds), at the next sentence start."""
        if repeat == 0:
            return 0
        text, repeats = self._corpus.text, self.params.num_repeats
        if self._corpus.complete and self._corpus.copy_tokens <= self._span_tokens:
            position = repeat * len(text) // repeats
        else:
            position = self._corpus.position_of_token(repeat * self._span_tokens // repeats)
        position = next_sentence_start(text, position, self.subset.language)
        return self._corpus.tokens_before(self._corpus.snap(position))

    # ---- haystacks -------------------------------------------------------------------------------------------

    def _frame(self, question: str) -> PromptFrame:
        frame = self._frames.get(question)
        if frame is None:
            frame = self._frames[question] = prompt_frame(
                self.tokenizer, self.prompt, question=question, count=self._counter
            )
        return frame

    def builder(self, needles: tuple[str, ...], question: str) -> HaystackBuilder:
        key = (needles, question)
        builder = self._builders.get(key)
        if builder is None:
            if len(self._builders) >= _MAX_BUILDERS:  # multi-retrieval needles differ per sample
                self._builders.pop(next(iter(self._builders)))
            builder = HaystackBuilder(
                corpus=self._corpus,
                tokenizer=self.tokenizer,
                frame=self._frame(question),
                needles=needles,
                language=self.subset.language,
                counter=self._counter,
                start_buffer=self.params.start_buffer,
                end_buffer=self.params.end_buffer,
                own_line=self.subset.own_line_needles,
                needle_separator=self.corpus.needle_separator,
            )
            self._builders[key] = builder
        return builder

    def check_lengths(self, cells: Sequence[GridCell]) -> None:
        """Fail before any model call when a cell's length cannot hold its prompt.

        Needles and question may differ per cell (picked facts, chains per repeat, bank picks spread over lengths as
        inspect_evals spreads them), so the longest need over the cells is the shortest length at which every one
        of them builds.
        """
        needs: dict[tuple[tuple[str, ...], str], int] = {}
        for cell in cells:
            plan = self.plan(cell)
            key = (plan.inserted, plan.question)
            if key not in needs:
                needs[key] = self.minimum_length(plan.inserted, plan.question)
        shortest = self.params.length_buffer + max(needs.values())
        too_short = sorted({cell.context_length for cell in cells if cell.context_length < shortest})
        if too_short:
            buffers = [name for name in ('start_buffer', 'end_buffer', 'length_buffer') if getattr(self.params, name)]
            raise NiahConfigError(
                buffers[0] if buffers else 'context_lengths',
                f'{too_short} tokens cannot hold the prompt template, question and needles of subset '
                f'{self.subset.name!r} plus a haystack'
                + (f' and {", ".join(buffers)}' if buffers else '')
                + f'; the shortest usable length is {shortest}',
            )

    def minimum_length(self, needles: tuple[str, ...], question: str) -> int:
        """What ``HaystackBuilder.minimum_length`` gives for these needles, without making a builder."""
        own_line = self.subset.own_line_needles
        separator = needle_separators(self.subset.language, first=self.corpus.needle_separator)[0]
        needle_tokens = sum(
            self._counter(needle_text(needle, self.subset.language, own_line=needle in own_line, separator=separator))
            for needle in needles
        )
        return minimum_context_length(
            frame=self._frame(question),
            needle_tokens=needle_tokens,
            start_buffer=self.params.start_buffer,
            end_buffer=self.params.end_buffer,
        )

    def sample(self, cell: GridCell) -> NeedleSample:
        return self.build(self.plan(cell))

    def build(self, plan: SamplePlan) -> NeedleSample:
        return self.build_with_haystack(plan)[0]

    def build_with_haystack(self, plan: SamplePlan) -> tuple[NeedleSample, HaystackBuilder, Haystack]:
        # The builder and haystack too: record_lines serializes the context from them.
        cell, subset = plan.cell, self.subset
        builder = self.builder(plan.inserted, plan.question)
        haystack = builder.build(
            context_length=cell.context_length - self.params.length_buffer,
            depth_percent=cell.depth_percent if cell.depth_percent is not None else 0.0,
            start_token=plan.start_token,
            needle_depths=plan.needle_depths,
        )
        if haystack.insertions:
            corpus = self._corpus
            earliest = min(haystack.insertions, key=lambda item: item.position)
            first = corpus.snap(earliest.position)
            # A needle that ends the document follows a cut that may split a word, whose last token may then differ.
            cut_word = 1 if earliest.at_end else 0
            divergence = plan.prefix_tokens + max(
                0, corpus.tokens_before(first) - corpus.tokens_before(haystack.start) - cut_word
            )
        else:
            divergence = plan.prefix_tokens + haystack.haystack_tokens
        achieved = haystack.achieved_depth_percents
        if plan.distractors:  # depths of the needles only, in corpus order
            decoys = {text.strip() for text in plan.distractors}
            achieved = tuple(
                depth
                for depth, item in zip(achieved, haystack.insertions, strict=True)
                if item.text.strip() not in decoys
            )
        meta = plan.meta.with_build(
            achieved_depth_percent=achieved[0] if achieved else None,
            achieved_depth_percents=achieved,
            prompt_tokens=haystack.prompt_tokens,
            haystack_tokens=haystack.haystack_tokens,
            divergence_token=divergence,
            corpus_file=subset.corpus_file,
            corpus_sha256=self.corpus.sha256,
            tokenizer=self.tokenizer.name,
        )
        user_prompt = self.prompt.user_message(context=haystack.context, question=plan.question)
        sample = NeedleSample(meta=meta, system_prompt=self.prompt.system_prompt, user_prompt=user_prompt)
        return sample, builder, haystack


_MAX_BUILDERS = 64
# Corpus spans at least this long are announced before they are tokenized.
_ANNOUNCED_SPAN_TOKENS = 200_000
_REPEAT_SPAN_TOKENS = 262144  # ~1 MB of English: a few MB of index, a few seconds to tokenize


def _refuse_corpus_without_sentences(corpus: Corpus, subset: ResolvedSubset) -> None:
    if not has_sentence_boundary(corpus.text, subset.language):
        # Needles would silently fall back to word starts (or, in Chinese, anywhere): refuse the corpus instead.
        raise NiahConfigError(
            subset.corpus_param,
            f'corpus file {subset.corpus_file!r} of subset {subset.name!r} has no sentence boundary, so no '
            f'needle can be placed at a sentence start. For language {subset.language!r} a sentence ends with '
            f'{PROSE_SENTENCE_END_RULE[subset.language]}. Use running prose with sentence punctuation, or set '
            f'subsets.{subset.name}.language if the file is in another language',
        )


def cells_within_limit(cells: list[GridCell], limit: int | float | None, *, shuffle: bool = False) -> list[GridCell]:
    """The cells EvalScope will run under ``--limit``: the first N (an int), or that share (a float below 1). With
    shuffle EvalScope picks any, so every cell must be checkable."""
    if shuffle or limit is None:
        return cells
    count = int(limit) if isinstance(limit, int) or limit >= 1 else max(1, int(len(cells) * limit))
    return cells[:count]


def subset_samplers(
    params: NiahParams,
    *,
    corpus_dir: Path | None = None,
    corpus_source: str | None = None,
    subsets: Sequence[str],
    prompt: PromptSpec | None = None,
    limit: int | float | None = None,
    shuffle: bool = False,
    endpoint: Mapping[str, str | None] | None = None,
) -> list[tuple[SubsetSampler, list[GridCell]]]:
    """One sampler per subset with the cells to run (see ``cells_within_limit``, EvalScope's --limit).

    Everything that can be checked without building a haystack (subsets, corpus files, tokenizer, lengths) is
    checked for all subsets here, so a bad config fails before the first sample and before any model call.
    ``endpoint`` (api_url, model, api_key of the model under test) is what ``tokenizer_path: 'server'`` counts with.
    The corpus is the folder ``corpus_dir``, or ``corpus_source`` as EvalScope names it (``corpus.corpus_folder``: a
    folder, or a ModelScope dataset of which only the files these subsets read are fetched).
    """
    if corpus_dir is None:
        corpus_dir = corpus_folder(corpus_source or '', params.resolve_subsets(subsets))
    prompt = prompt or PromptSpec()
    params = corpus_folder_params(get_task(params.task), params, Path(corpus_dir))  # e.g. NeedleBench's needle file
    resolved_subsets = params.resolve_subsets(subsets)
    _check_prompt_texts(params, resolved_subsets, prompt)  # before the tokenizer: 'server' sends text too
    tokenizer = load_tokenizer(params.tokenizer_path, **(endpoint or {}))
    samplers: list[tuple[SubsetSampler, list[GridCell]]] = []
    for resolved in resolved_subsets:
        cells = cells_within_limit(params.cells([resolved.name]), limit, shuffle=shuffle)
        if not cells:
            continue
        longest = max(cell.context_length for cell in cells)
        resolved, corpus = _haystack_source(resolved, params, corpus_dir, max_context_length=longest)
        sampler = SubsetSampler(
            subset=resolved,
            corpus=corpus,
            tokenizer=tokenizer,
            prompt=prompt,
            max_context_length=longest,
            params=params,
        )
        sampler.check_lengths(cells)
        samplers.append((sampler, cells))
    return samplers


def _haystack_source(
    subset: ResolvedSubset, params: NiahParams, corpus_dir: Path, *, max_context_length: int
) -> tuple[ResolvedSubset, Corpus]:
    """The subset's corpus, or the haystack its task generates in its place (RULER's noise and needle lines): then
    the subset is named by what made it and reads in the language the text is written in, not its file's."""
    span = _indexed_span(num_repeats=params.num_repeats, max_context_length=max_context_length)
    generated = get_task(subset.task).haystack_text(subset, params, tokens=span)
    if generated is None:
        return subset, load_corpus(corpus_dir, subset)
    language = text_language(generated.text, default=subset.language)
    subset = subset.model_copy(update={'corpus_file': generated.name, 'file_list': (), 'language': language})
    return subset, generated_corpus(subset, text=generated.text, needle_separator=generated.needle_separator)


def _check_prompt_texts(params: NiahParams, subsets: Sequence[ResolvedSubset], prompt: PromptSpec) -> None:
    """Needles and questions that no request can carry, or that hold the prompt's delimiters, refused (see
    sendable.py), naming the parameter they came from; needles that read like orders to a judge are warned of."""
    needles: list[tuple[str, str]] = []  # (parameter, text)
    questions: list[tuple[str, str]] = []
    for subset in subsets:
        sent = sent_texts(get_task(subset.task), params)  # a task's own texts in place of the subset's (a bank)
        if sent is not None:
            needles += sent[0]
            questions += sent[1]
            continue
        needle_param, question_param = _text_params(params, subset)
        needles += [(needle_param, needle) for needle in subset.needles]
        questions.append((question_param, subset.retrieval_question))
    tags = template_tag_names(prompt.user_template)
    for texts, what in ((needles, 'the needle'), (questions, 'the question')):
        for param, text in dict.fromkeys(texts):
            check_sendable(param, text, what=what)
            check_no_delimiters(param, [text], tag_names=tags, what=what)
    if get_task(params.task).judged:
        for param, text in dict.fromkeys(needles):
            warn_judge_instructions(param, [text], what='the needle')


def _text_params(params: NiahParams, subset: ResolvedSubset) -> tuple[str, str]:
    """The parameters a subset's needles and question came from (a subset's own, else the run's)."""
    override = params.subsets.get(subset.name)
    own = {name for name in ('needles', 'retrieval_question') if getattr(override, name, None) is not None}
    return tuple(f'subsets.{subset.name}.{name}' if name in own else name for name in ('needles', 'retrieval_question'))


def iter_plans(params: NiahParams, **options) -> Iterator[SamplePlan]:
    """The plans of every sample (no haystack is built); options as for ``subset_samplers``."""
    for sampler, cells in subset_samplers(params, **options):
        for cell in cells:
            yield sampler.plan(cell)


def iter_samples(params: NiahParams, **options) -> Iterator[NeedleSample]:
    """Every sample with its haystack, subset by subset; options as for ``subset_samplers``. All checks run before
    the first sample is yielded."""
    for sampler, cells in subset_samplers(params, **options):
        for cell in cells:
            yield sampler.sample(cell)


def _indexed_span(*, num_repeats: int, max_context_length: int) -> int:
    """Tokens of the corpus to index. Only the prefix the prompts need is indexed, so memory follows the lengths, not
    the corpus size: the longest prompt once per repeat, and repeats spread over at least _REPEAT_SPAN_TOKENS (all
    of a smaller corpus, as they always were)."""
    span = num_repeats * (max_context_length + 512)
    return max(span, _REPEAT_SPAN_TOKENS) if num_repeats > 1 else span
