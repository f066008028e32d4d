"""The run's own parameters in one typed model: every ``extra_params`` name but those a task declares for itself.

``tasks.compose.parse_params`` composes this model with each registered task's ``TaskParams`` model into the flat
``extra_params`` users write; names and defaults of EvalScope's built-in ``needle_haystack`` are kept so existing
configs keep working. This module knows no task: a task reads its own parameters with ``NiahParams.task_params``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from ..errors import NiahConfigError
from ..serving.routing import ROUTER_KEY_HEADERS, check_routing_key_header
from ..vocabulary import EffectiveLengthMode, RequestOrder
from .cdme_names import KEYWORD_TASK, alias_value, check_chain
from .grid_axes import context_length_axis, depth_axis
from .run_size import (
    DEFAULT_MAX_CORPUS_REPEATS,
    MAX_CONTEXT_LENGTH,
    MAX_GRID_AXIS,
    MAX_SAMPLES_HARD_LIMIT,
    MAX_SAMPLES_PER_RUN,
    check_sample_count,
)
from .subsets import (
    DEFAULT_SUBSETS,
    SUBSET_NAME_RULE,
    ResolvedSubset,
    SubsetConfig,
    check_file_list,
    check_needles,
    check_subset_list,
    is_safe_subset_name,
    language_code,
    own_line,
    resolved_corpus,
)

# Other tools' names for our parameters (inspect_evals niah, OpenCompass CDME): accepted, mapped once, here.
ALIASES: dict[str, str] = {
    'min_context': 'context_lengths_min',
    'max_context': 'context_lengths_max',
    'n_contexts': 'context_lengths_num_intervals',
    'n_positions': 'document_depth_percent_intervals',
    'num_repeats_per_file': 'num_repeats',
    'tokenizer_model': 'tokenizer_path',
    'needle': 'needles',
    'length': 'context_lengths',
    'depth': 'document_depth_percents',
}


class TaskParams(BaseModel):
    """A task's own parameters: a task subclasses this with its fields (each with its default, description and
    checks). Its field names are flat ``extra_params`` names, unique across the run model and every task."""

    model_config = ConfigDict(extra='forbid', frozen=True)


P = TypeVar('P', bound=TaskParams)


class NiahParams(BaseModel):
    """The run's parameters: every ``extra_params`` name but those a task declares in its own ``TaskParams``."""

    model_config = ConfigDict(extra='forbid', frozen=True)

    # Each task's own parameters by model type, set by params.parse_params; empty means every task's defaults.
    _task_params: dict[type[TaskParams], TaskParams] = PrivateAttr(default_factory=dict)
    # Samples per grid cell, as the run's tasks draw them; set by tasks.compose.parse_params (see draws_per_cell).
    _draws_per_cell: int = PrivateAttr(default=1)

    retrieval_question: str | None = Field(
        None, description="Question asked after the haystack; None uses each subset's own question."
    )
    needles: list[str] | None = Field(
        None, description="Needle sentences inserted into the haystack; None uses each subset's own needles."
    )
    context_lengths_min: int = Field(1000, description='Smallest context length (tokens of the whole prompt).')
    context_lengths_max: int = Field(32000, description='Largest context length (tokens of the whole prompt).')
    context_lengths_num_intervals: int = Field(10, description='Number of context lengths from min to max.')
    context_lengths: list[int] | None = Field(
        None, description='Explicit context lengths in tokens; overrides the min/max/num_intervals range.'
    )
    document_depth_percent_min: float = Field(0, description='Smallest needle depth in percent (0 = start).')
    document_depth_percent_max: float = Field(100, description='Largest needle depth in percent (100 = end).')
    document_depth_percent_intervals: int = Field(10, description='Number of needle depths from min to max.')
    document_depth_percents: list[float] | None = Field(
        None, description='Explicit needle depths in percent; overrides the min/max/intervals range.'
    )
    document_depth_percent_interval_type: Literal['linear', 'sigmoid'] = Field(
        'linear', description="Depth spacing: 'linear' or 'sigmoid' (denser near the start and end, as Kamradt's)."
    )
    tokenizer_path: str = Field(
        'Qwen/Qwen3-0.6B',
        description="Tokenizer that measures lengths: a model id, a local directory, or 'tiktoken:<encoding>'.",
    )
    show_score: bool = Field(False, description='Write each cell score on the heatmap images.')
    task: str = Field(
        'single',
        # The registered tasks are listed with what each asks by params.parameter_fields, which knows them.
        description='The task every subset asks (a subset may name its own).',
    )
    judge_check: Literal['stop', 'fallback', 'off'] = Field(
        'stop',
        description="Before the model runs, the judge grades calibration answers built from each subset's needle. "
        "'stop': a judge that misgrades them stops the run; 'fallback': the run is scored by rule (labelled as "
        "such); 'off': no check.",
    )
    absent_control: bool = Field(
        False,
        description='Add one needle-absent control cell per context length: nothing inserted, the right answer is '
        'that the document does not say. Reported apart from accuracy (abstention and guess rates).',
    )
    num_repeats: int = Field(
        1,
        description='Haystacks per cell, each starting at a different point of the corpus (CDME '
        'num_repeats_per_file); the cell score is their mean, with a bootstrap confidence interval.',
    )
    sampling_seed: int = Field(0, description='Seed of every random choice (random needle draws, magic numbers).')
    start_buffer: int = Field(0, description='Tokens at the top of the haystack where no needle is placed.')
    end_buffer: int = Field(0, description='Tokens at the bottom of the haystack where no needle is placed.')
    length_buffer: int = Field(
        0, description='Tokens of each context length left free (CDME length_buffer): the prompt is this much shorter.'
    )
    guide: bool = Field(
        False,
        description="Append an answer-format hint to the question, as CDME's questions do; a question that already "
        "asks a format gets CDME's think-first hint before that request instead.",
    )
    effective_length_threshold: float = Field(
        0.85, description='Score a context length must reach to count as effective (0.85 as RULER uses).'
    )
    effective_length_mode: EffectiveLengthMode = Field(
        'absolute',
        description="'absolute': mean score >= threshold; 'relative': >= threshold x the shortest length's score "
        '(as NoLiMa).',
    )
    request_order: RequestOrder = Field(
        'prefix',
        description="'prefix': requests ordered so a server with automatic prefix caching reuses the most; 'grid': "
        "lengths outer, depths inner, as the built-in sends them; 'replicas': the prefix order with the haystack "
        'starts taking turns, so the requests in flight spread over the replicas behind a router that routes on '
        'routing_key_header (for servers with a shared prefix cache: vLLM, SGLang). In both prefix orders a prompt '
        'whose prefix an earlier prompt in flight is computing waits for it.',
    )
    routing_key_header: str = Field(
        'on',
        description="Key of each prompt's prefix group (subset, haystack start) sent as a request header, so a "
        "router's consistent-hash policy keeps the group on one replica and its shared prefix cached: 'on' "
        f"({', '.join(ROUTER_KEY_HEADERS)}: vllm-router, sglang-router), 'off', or a custom header name.",
    )
    min_context: int | None = Field(None, description='inspect_evals alias of context_lengths_min.')
    max_context: int | None = Field(None, description='inspect_evals alias of context_lengths_max.')
    n_contexts: int | None = Field(None, description='inspect_evals alias of context_lengths_num_intervals.')
    n_positions: int | None = Field(None, description='inspect_evals alias of document_depth_percent_intervals.')
    num_repeats_per_file: int | None = Field(None, description='OpenCompass CDME alias of num_repeats.')
    tokenizer_model: str | None = Field(
        None,
        description="OpenCompass CDME: an OpenAI model name such as 'gpt-4', counted with tiktoken offline "
        '(sets tokenizer_path).',
    )
    needle: str | None = Field(
        None,
        description='OpenCompass CDME: one needle sentence, the same as needles [needle]; written with a line break '
        "around it ('\\n...\\n') it is inserted on a line of its own, as CDME does (in needles too).",
    )
    keyword: str | None = Field(
        None,
        description='OpenCompass CDME multi-needle: the word of the last link that answers retrieval_question. '
        "Given, needles are your own reasoning chain: task 'reasoning' (also without task), scored by this keyword.",
    )
    answer: str | None = Field(
        None,
        description="The answer to retrieval_question: task 'single': the short answer inside the needle (for the "
        "guide and guess detection); with keyword: the full reference answer (CDME's answer).",
    )
    language: str | None = Field(
        None,
        description="Language of every subset without its own: 'en' or 'zh', or CDME's 'English' / 'Chinese' "
        '(any case).',
    )
    file_list: list[str] | None = Field(
        None,
        description='Corpus files of every subset without its own (CDME file_list): plain text or JSON Lines (field '
        'text), joined in order, inside local_path.',
    )
    length: int | None = Field(None, description='OpenCompass CDME: one context length (context_lengths [length]).')
    depth: float | None = Field(
        None, description='OpenCompass CDME: one needle depth in percent (document_depth_percents [depth]).'
    )
    max_corpus_repeats: int = Field(
        DEFAULT_MAX_CORPUS_REPEATS,
        description='Most times a corpus may be repeated to fill the longest context length; a run needing more is '
        'refused (use a longer corpus or shorter lengths, or raise this).',
    )
    allow_large_grid: bool = Field(
        False,
        description=f'Allow more than {MAX_SAMPLES_PER_RUN:,} samples per run (grid cells x subsets); at most '
        f'{MAX_SAMPLES_HARD_LIMIT:,} even then.',
    )
    subsets: dict[str, SubsetConfig] = Field(
        default_factory=dict,
        description='Per-subset overrides or new subsets: {name: {corpus_file or file_list, text_field, language, '
        'needles, retrieval_question}}. Built-in: english (PaulGraham_Essays.txt), chinese (Journey_to_the_West.txt).',
    )

    @field_validator('routing_key_header', mode='before')
    @classmethod
    def _routing_key_header(cls, value: Any) -> str:
        return check_routing_key_header(value)

    @field_validator('context_lengths_min', 'context_lengths_max')
    @classmethod
    def _positive_length(cls, value: int) -> int:
        if not 1 <= value <= MAX_CONTEXT_LENGTH:
            raise ValueError(f'must be a positive number of tokens, at most {MAX_CONTEXT_LENGTH:,}')
        return value

    @field_validator('subsets')
    @classmethod
    def _subset_names(cls, value: dict[str, SubsetConfig]) -> dict[str, SubsetConfig]:
        for name in value:
            if not is_safe_subset_name(name):
                raise NiahConfigError('subsets', f'{name!r} is not a valid subset name; allowed: {SUBSET_NAME_RULE}')
        return value

    @model_validator(mode='before')
    @classmethod
    def _resolve_aliases(cls, values: Any) -> Any:
        if not isinstance(values, Mapping):
            return values
        values = dict(values)
        for alias, canonical in ALIASES.items():
            if values.get(alias) is None:
                continue
            value = values[alias]
            value = alias_value(alias, canonical, value)
            if values.get(canonical) is not None and values[canonical] != value:
                raise NiahConfigError(
                    alias,
                    f'is another name for {canonical}; give one of them, not both ({values[canonical]!r} vs {value!r})',
                )
            values[canonical] = value
        # A CDME multi-needle dict has no task: its keyword says the needles are a reasoning chain.
        if values.get('keyword') is not None and values.get('task') is None:
            values['task'] = KEYWORD_TASK
        return values

    @field_validator('language')
    @classmethod
    def _language(cls, value: str | None) -> str | None:
        return None if value is None else language_code(value)

    @field_validator('file_list')
    @classmethod
    def _file_list(cls, value: list[str] | None) -> list[str] | None:
        return check_file_list(value)

    @field_validator(
        'context_lengths_num_intervals',
        'document_depth_percent_intervals',
        'num_repeats',
    )
    @classmethod
    def _at_least_one(cls, value: int) -> int:
        if not 1 <= value <= MAX_GRID_AXIS:
            raise ValueError(f'must be at least 1 (and at most {MAX_GRID_AXIS:,})')
        return value

    @field_validator('max_corpus_repeats')
    @classmethod
    def _repeats_cap(cls, value: int) -> int:
        if value < 1:
            raise ValueError('must be at least 1 (1: the corpus must hold the longest context without repeating)')
        return value

    @field_validator('start_buffer', 'end_buffer', 'length_buffer')
    @classmethod
    def _not_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError('must be 0 or more')
        return value

    @field_validator('effective_length_threshold')
    @classmethod
    def _threshold(cls, value: float) -> float:
        if not 0 < value <= 1:
            raise ValueError('must be in (0, 1]')
        return value

    @field_validator('document_depth_percent_min', 'document_depth_percent_max')
    @classmethod
    def _percent(cls, value: float) -> float:
        if not 0 <= value <= 100:
            raise ValueError('must be between 0 and 100')
        return value

    @field_validator('context_lengths')
    @classmethod
    def _lengths(cls, value: list[int] | None) -> list[int] | None:
        if value is not None:
            if not value:
                raise ValueError('must hold at least one length (or be left out to use the range)')
            if len(value) > MAX_GRID_AXIS:
                raise ValueError(f'must hold at most {MAX_GRID_AXIS:,} lengths (got {len(value):,})')
            if any(not 1 <= length <= MAX_CONTEXT_LENGTH for length in value):
                raise ValueError(f'every length must be a positive number of tokens, at most {MAX_CONTEXT_LENGTH:,}')
        return value

    @field_validator('document_depth_percents')
    @classmethod
    def _depths(cls, value: list[float] | None) -> list[float] | None:
        if value is not None:
            if not value:
                raise ValueError('must hold at least one depth (or be left out to use the range)')
            if len(value) > MAX_GRID_AXIS:
                raise ValueError(f'must hold at most {MAX_GRID_AXIS:,} depths (got {len(value):,})')
            if any(not 0 <= depth <= 100 for depth in value):
                raise ValueError('every depth must be between 0 and 100')
        return value

    @field_validator('needles')
    @classmethod
    def _needles(cls, value: list[str] | None) -> list[str] | None:
        return check_needles(value)

    @field_validator('retrieval_question', 'tokenizer_path', 'keyword', 'answer')
    @classmethod
    def _non_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError('must not be empty')
        return value

    @model_validator(mode='after')
    def _ranges(self) -> NiahParams:
        if self.context_lengths is None and self.context_lengths_min > self.context_lengths_max:
            raise NiahConfigError(
                'context_lengths_min',
                f'{self.context_lengths_min} is larger than context_lengths_max ({self.context_lengths_max})',
            )
        if self.document_depth_percents is None and self.document_depth_percent_min > self.document_depth_percent_max:
            raise NiahConfigError(
                'document_depth_percent_min',
                f'{self.document_depth_percent_min} is larger than document_depth_percent_max '
                f'({self.document_depth_percent_max})',
            )
        for name, override in self.subsets.items():
            check_needles(override.needles, param=f'subsets.{name}.needles')
            no_corpus = override.corpus_file_names() is None and self.file_list is None
            if name not in DEFAULT_SUBSETS and (no_corpus or (override.language or self.language) is None):
                raise NiahConfigError(
                    f'subsets.{name}',
                    f"a new subset needs 'corpus_file' and 'language' ('en' or 'zh'), or 'file_list' in place of "
                    f'corpus_file (per subset or at the top level); built-in subsets are {sorted(DEFAULT_SUBSETS)}',
                )
        return self

    # ---- derived values -------------------------------------------------------------------------------------

    def context_length_grid(self) -> list[int]:
        """Context lengths in tokens, ascending, without duplicates."""
        return context_length_axis(
            explicit=self.context_lengths,
            low=self.context_lengths_min,
            high=self.context_lengths_max,
            count=self.context_lengths_num_intervals,
        )

    def depth_percent_grid(self) -> list[float]:
        """Needle depths in percent, ascending, without duplicates."""
        return depth_axis(
            explicit=self.document_depth_percents,
            low=self.document_depth_percent_min,
            high=self.document_depth_percent_max,
            count=self.document_depth_percent_intervals,
            spacing=self.document_depth_percent_interval_type,
        )

    def subset_names(self) -> list[str]:
        return [*DEFAULT_SUBSETS, *(name for name in self.subsets if name not in DEFAULT_SUBSETS)]

    def samples_per_subset(self) -> int:
        """Samples of one subset: what ``samples.grid`` yields per subset (lengths x depths/control x repeats x
        draws), computed without building the grid."""
        positions = len(self.depth_percent_grid()) + (1 if self.absent_control else 0)
        return len(self.context_length_grid()) * positions * self.num_repeats * self.draws_per_cell()

    def resolve_subsets(self, names: Any) -> list[ResolvedSubset]:
        """The subsets a run selects (``subset_list``), checked as a whole: a list of distinct, known, safe names, and
        a run size within ``MAX_SAMPLES_PER_RUN`` unless ``allow_large_grid``. Preview, ``--estimate`` and the
        adapter all come through here, so they accept and refuse the same runs."""
        names = check_subset_list(names)
        resolved = [self.resolve_subset(name) for name in names]
        self.check_run_size(subset_count=len(names))
        return resolved

    def resolve_subset(self, name: str) -> ResolvedSubset:
        """Per-subset value, else the top-level value, else the subset's built-in default."""
        if not is_safe_subset_name(name):
            raise NiahConfigError('subset_list', f'{name!r} is not a valid subset name; allowed: {SUBSET_NAME_RULE}')
        if name not in DEFAULT_SUBSETS and name not in self.subsets:
            raise NiahConfigError('subset_list', f'unknown subset {name!r}; available: {self.subset_names()}')
        default = DEFAULT_SUBSETS.get(name, SubsetConfig())
        override = self.subsets.get(name, SubsetConfig())
        if override.corpus_file_names() is None and self.file_list is not None:  # top-level files, then built-in
            default = default.model_copy(update={'corpus_file': None, 'file_list': list(self.file_list)})
        needles = override.needles or self.needles or default.needles
        question = override.retrieval_question or self.retrieval_question or default.retrieval_question
        own_question = override.retrieval_question is None and self.retrieval_question is None
        if not needles or not question:
            missing = 'needles' if not needles else 'retrieval_question'
            raise NiahConfigError(
                f'subsets.{name}.{missing}', f'subset {name!r} has no {missing}; give it per subset or at the top level'
            )
        # A default answer belongs to the default needle: it is dropped when the needles are replaced.
        own_needles = override.needles is None and self.needles is None
        answer = override.answer or self.answer or (default.answer if own_needles else None)
        task = self.task_of(override)
        keyword = (override.keyword or self.keyword) if task == KEYWORD_TASK else None
        if keyword is not None:
            check_chain(
                name,
                keyword=keyword,
                needles=None if own_needles else needles,
                question=None if own_question else question,
            )
        return ResolvedSubset(
            name=name,
            **resolved_corpus(default, override),
            language=override.language or self.language or default.language or 'en',
            needles=tuple(needle.strip() for needle in needles),
            retrieval_question=question.strip(),
            answer=answer.strip() if answer else None,
            task=task,
            keyword=keyword.strip() if keyword else None,
            own_line_needles=frozenset(needle.strip() for needle in needles if own_line(needle)),
        )

    def task_of(self, override: SubsetConfig) -> str:
        """A subset's task: its own, else the reasoning chain when it gives a keyword, else the run's."""
        return override.task or (KEYWORD_TASK if override.keyword is not None else self.task)

    def draws_per_cell(self) -> int:
        """Samples per grid cell: what the run's tasks draw (a needle bank's n_needles x n_runs), set when the tasks
        compose the parameters (``tasks.compose.parse_params``); 1 for a model built without them."""
        return self._draws_per_cell

    def with_draws_per_cell(self, draws: int) -> NiahParams:
        """A copy whose cells each hold ``draws`` samples (the tasks' ``Task.draws_per_cell``)."""
        copy = self.model_copy()
        copy._draws_per_cell = draws
        return copy

    def check_run_size(self, *, subset_count: int) -> int:
        """Samples of the run (``samples_per_subset`` x subsets), refused above the limits of ``run_size``."""
        shape = (
            f'{subset_count} subset(s) x {len(self.context_length_grid())} lengths x '
            f'{len(self.depth_percent_grid()) + (1 if self.absent_control else 0)} depths'
            f'{" (control included)" if self.absent_control else ""} x {self.num_repeats} num_repeats x '
            f'{self.draws_per_cell()} needle draws'
        )
        total = self.samples_per_subset() * subset_count
        return check_sample_count(total, shape=shape, allow_large_grid=self.allow_large_grid)

    def task_params(self, model: type[P]) -> P:
        """A task's own parameters (its ``TaskParams`` model): as given in extra_params, else its defaults."""
        given = self._task_params.get(model)
        return given if isinstance(given, model) else model()

    def with_task_params(self, given: Iterable[TaskParams]) -> NiahParams:
        """A copy holding the task parameter models ``given``; those equal to their defaults are left out, so that
        parameters written out at their defaults equal no parameters at all."""
        copy = self.model_copy()
        copy._task_params = {type(model): model for model in given if model != type(model)()}
        return copy
