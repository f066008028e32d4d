"""Parameters x corpora -> needle-in-a-haystack samples, built lazily, dimensions kept as data."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from .corpus import Corpus, load_corpus
from .errors import NiahConfigError
from .haystack import (
    SENTENCE_END_RULE,
    HaystackBuilder,
    RepeatedCorpus,
    find_needle_in_corpus,
    has_sentence_boundary,
    prompt_frame,
)
from .params import NiahParams, ResolvedSubset
from .prompts import PromptSpec
from .tokenization import Tokenizer, load_tokenizer, shared_counter, token_index


@dataclass(frozen=True)
class GridCell:
    subset: str
    context_length: int
    depth_percent: float


@dataclass(frozen=True)
class NeedleSample:
    subset: str
    language: str
    context_length: int
    depth_percent: float
    achieved_depth_percent: float
    achieved_depth_percents: tuple[float, ...]
    prompt_tokens: int
    haystack_tokens: int
    needles: tuple[str, ...]
    question: str
    reference_answer: str
    system_prompt: str
    user_prompt: str
    corpus_file: str
    corpus_sha256: str
    tokenizer: str

    def messages(self) -> list[dict[str, str]]:
        user = {'role': 'user', 'content': self.user_prompt}
        return [{'role': 'system', 'content': self.system_prompt}, user] if self.system_prompt else [user]

    def to_record(self) -> dict:
        record = asdict(self)
        record['needles'] = list(self.needles)
        record['achieved_depth_percents'] = list(self.achieved_depth_percents)
        del record['system_prompt'], record['user_prompt']
        record['messages'] = self.messages()
        return record


def grid(params: NiahParams, subsets: Sequence[str]) -> list[GridCell]:
    """Every (subset, length, depth) cell in generation order: lengths outer, depths inner, as the built-in."""
    lengths, depths = params.context_length_grid(), params.depth_percent_grid()
    return [GridCell(subset, length, depth) for subset in subsets for length in lengths for depth in depths]


class SubsetSampler:
    """Builds the samples of one subset; corpus tokens are indexed only as far as the requested lengths need."""

    def __init__(
        self,
        *,
        subset: ResolvedSubset,
        corpus: Corpus,
        tokenizer: Tokenizer,
        prompt: PromptSpec,
        max_context_length: int,
    ) -> None:
        if not has_sentence_boundary(corpus.text, subset.language):
            # Needles would silently fall back to word starts (or, in Chinese, anywhere): refuse the corpus instead.
            raise NiahConfigError(
                f'subsets.{subset.name}.corpus_file',
                f'corpus file {subset.corpus_file!r} of subset {subset.name!r} has no sentence boundary, so no '
                f'needle can be placed at a sentence start. For language {subset.language!r} a sentence ends with '
                f'{SENTENCE_END_RULE[subset.language]}. Use running prose with sentence punctuation, or set '
                f'subsets.{subset.name}.language if the file is in another language',
            )
        occurring = find_needle_in_corpus(corpus.text, subset.needles)
        if occurring is not None:
            raise NiahConfigError(
                f'subsets.{subset.name}.needles',
                f'the needle {occurring!r} already occurs in {subset.corpus_file}; a model could answer without '
                'retrieving the inserted needle. Choose a needle that is not in the corpus',
            )
        self.subset = subset
        self.corpus = corpus
        self.tokenizer = tokenizer
        self.prompt = prompt
        counter = shared_counter(tokenizer)
        frame = prompt_frame(tokenizer, prompt, question=subset.retrieval_question, count=counter)
        # A first, prefix-only pass finds how many corpus tokens the longest prompt needs.
        needed = max_context_length + 512
        index = token_index(tokenizer, corpus.text, text_sha256=corpus.sha256, min_tokens=needed)
        self.builder = HaystackBuilder(
            corpus=RepeatedCorpus(corpus.text, index),
            tokenizer=tokenizer,
            frame=frame,
            needles=subset.needles,
            language=subset.language,
            counter=counter,
        )

    def check_lengths(self, lengths: Sequence[int]) -> None:
        too_short = [length for length in lengths if length < self.builder.minimum_length()]
        if too_short:
            raise NiahConfigError(
                'context_lengths',
                f'{too_short} tokens cannot hold the prompt template, question and needles of subset '
                f'{self.subset.name!r} plus a haystack; the shortest usable length is {self.builder.minimum_length()}',
            )

    def sample(self, cell: GridCell) -> NeedleSample:
        haystack = self.builder.build(context_length=cell.context_length, depth_percent=cell.depth_percent)
        subset = self.subset
        return NeedleSample(
            subset=subset.name,
            language=subset.language,
            context_length=cell.context_length,
            depth_percent=cell.depth_percent,
            achieved_depth_percent=haystack.achieved_depth_percents[0],
            achieved_depth_percents=haystack.achieved_depth_percents,
            prompt_tokens=haystack.prompt_tokens,
            haystack_tokens=haystack.haystack_tokens,
            needles=subset.needles,
            question=subset.retrieval_question,
            reference_answer=subset.reference_answer,
            system_prompt=self.prompt.system_prompt,
            user_prompt=self.prompt.user_message(context=haystack.context, question=subset.retrieval_question),
            corpus_file=subset.corpus_file,
            corpus_sha256=self.corpus.sha256,
            tokenizer=self.tokenizer.name,
        )


def iter_samples(
    params: NiahParams,
    *,
    corpus_dir: Path,
    subsets: Sequence[str],
    prompt: PromptSpec | None = None,
    limit: int | None = None,
) -> Iterator[NeedleSample]:
    """Samples subset by subset; ``limit`` keeps the first N cells of each subset (EvalScope's --limit).

    Everything that can be checked without building a haystack (subsets, corpus files, tokenizer, lengths) is
    checked for all subsets before the first sample is yielded, so a bad config fails before any model call.
    """
    prompt = prompt or PromptSpec()
    tokenizer = load_tokenizer(params.tokenizer_path)
    samplers: list[tuple[SubsetSampler, list[GridCell]]] = []
    for name in subsets:
        resolved = params.resolve_subset(name)
        cells = grid(params, [name])[: limit if limit is not None else None]
        if not cells:
            continue
        corpus = load_corpus(corpus_dir, resolved)
        sampler = SubsetSampler(
            subset=resolved,
            corpus=corpus,
            tokenizer=tokenizer,
            prompt=prompt,
            max_context_length=max(cell.context_length for cell in cells),
        )
        sampler.check_lengths(sorted({cell.context_length for cell in cells}))
        samplers.append((sampler, cells))
    for sampler, cells in samplers:
        for cell in cells:
            yield sampler.sample(cell)
