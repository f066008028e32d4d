"""Every benchmark parameter, its default and its check, in one typed model.

The same model produces EvalScope's ``extra_params`` spec (``extra_params_spec``), so a default is written once.
Names and defaults of EvalScope's built-in ``needle_haystack`` are kept so existing configs keep working.

Limits (each refused with one NiahConfigError naming the parameter):

- subset names (``subsets`` keys, ``subset_list``, ``--subset``): ASCII letters, digits, ``.``, ``_`` and ``-``, not
  starting with ``.``, at most 64 characters; ``subset_list`` is a list of distinct names, never a string.
- context lengths (``context_lengths``, ``context_lengths_min/max`` and their aliases): 1 to 10,000,000 tokens.
- the corpus is repeated at most ``max_corpus_repeats`` times (default 20) to fill the longest context length.
- at most 10,000 samples per run (grid cells x subsets) unless ``allow_large_grid: true``; 1,000,000 even then;
  each grid axis (lengths, depths, num_repeats, n_needles, n_runs) at most 10,000 values.
- values that would be ignored are refused: ``needles`` / ``retrieval_question`` (top level or per subset) with a
  needle bank or with task ``multi_retrieval`` / ``reasoning``; ``num_needles`` without a ``multi_retrieval`` task,
  ``diff`` / ``shuffle_links`` without a ``reasoning`` task; an alias and its canonical name with different values;
  benchmark parameters placed in ``dataset_args`` beside ``extra_params`` instead of under it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import NiahConfigError
from .routing import ROUTER_KEY_HEADERS, check_routing_key_header
from .tasks import get_task, task_names
from .tasks.multi_retrieval.facts import MAX_DISTRACTORS
from .vocabulary import EffectiveLengthMode, Language, RequestOrder

EN_NEEDLE = 'The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.'
EN_QUESTION = 'What is the best thing to do in San Francisco?'
EN_ANSWER = 'eat a sandwich and sit in Dolores Park on a sunny day'
ZH_NEEDLE = '小明最喜欢的实习的地点就是上海人工智能实验室。'
ZH_QUESTION = '小明最喜欢的实习地点是哪里？'
ZH_ANSWER = '上海人工智能实验室'

# Other tools' names for our parameters (inspect_evals niah, OpenCompass CDME): accepted, mapped once, here.
ALIASES: dict[str, str] = {
    'min_context': 'context_lengths_min',
    'max_context': 'context_lengths_max',
    'n_contexts': 'context_lengths_num_intervals',
    'n_positions': 'document_depth_percent_intervals',
    'num_repeats_per_file': 'num_repeats',
    'tokenizer_model': 'tokenizer_path',
}
# Bank-drawing options of inspect_evals: changing any of them means the needles come from a needle bank.
BANK_OPTIONS = ('n_needles', 'sample_method', 'fixed_index', 'n_runs')

DATASET_ID = 'AI-ModelScope/Needle-in-a-Haystack-Corpus'

# ---- limits (README parameter table) ------------------------------------------------------------------------------
# Subset names become dataset names, file names and report keys: ASCII letters, digits, '.', '_' and '-', not
# starting with '.', at most 64 characters. A fixed-length character-class match: no backtracking.
SUBSET_NAME_RULE = "ASCII letters, digits, '.', '_' and '-', not starting with '.', at most 64 characters"
_SUBSET_NAME = re.compile(r'[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}')
# Largest context length, in tokens: beyond any model's window, small enough that a typo (an extra zero or three)
# fails at once instead of tokenizing gigabytes.
MAX_CONTEXT_LENGTH = 10_000_000
# How often the corpus may be repeated to fill the longest context length (parameter max_corpus_repeats). A
# haystack that is mostly copies of one short text tests little; raise it knowingly.
DEFAULT_MAX_CORPUS_REPEATS = 20
# Samples per run (grid cells x subsets, before EvalScope's limit/repeats). Above it the run is refused unless
# allow_large_grid is true: a typo in an interval count should not start a 100,000-request run.
MAX_SAMPLES_PER_RUN = 10_000
# Even with allow_large_grid: every cell is held in memory as a sample, and each axis is materialised as a list.
MAX_SAMPLES_HARD_LIMIT = 1_000_000
MAX_GRID_AXIS = 10_000  # values of one grid axis: lengths, depths, num_repeats, n_needles, n_runs


# Corpus files read as JSON Lines (one record per line, the text in ``text_field``); any other name is plain text.
JSONL_SUFFIXES = ('.jsonl', '.json-lines')
DEFAULT_TEXT_FIELD = 'text'
# More files than this for one subset is a mistake (or an attack), not a corpus.
MAX_CORPUS_FILES = 1000


def is_jsonl_file(name: str) -> bool:
    return name.lower().endswith(JSONL_SUFFIXES)


class SubsetConfig(BaseModel):
    """One subset: its corpus (one file, or a list joined in order), language and optionally needles and question.

    ``needles`` / ``retrieval_question`` left as None take the top-level values, then the built-in defaults.
    ``corpus_file`` and ``file_list`` (OpenCompass CDME's name) are alternatives: give one.
    """

    model_config = ConfigDict(extra='forbid', frozen=True)

    corpus_file: str | None = None
    file_list: list[str] | None = None
    text_field: str | None = None
    language: Language | None = None
    needles: list[str] | None = None
    retrieval_question: str | None = None
    answer: str | None = None
    task: str | None = None  # a registered task name (tasks.task_names())

    @field_validator('retrieval_question', 'corpus_file', 'answer', 'text_field')
    @classmethod
    def _non_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError('must not be empty')
        return value

    @field_validator('task')
    @classmethod
    def _known_task(cls, value: str | None) -> str | None:
        if value is not None and value not in task_names():
            raise ValueError(f'must be {_choices(task_names())}')
        return value

    @field_validator('file_list')
    @classmethod
    def _file_names(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            if not 1 <= len(value) <= MAX_CORPUS_FILES:
                raise ValueError(f'must name 1 to {MAX_CORPUS_FILES} corpus files')
            if any(not name.strip() for name in value):
                raise ValueError('every file name must be non-empty')
        return value

    @model_validator(mode='after')
    def _one_corpus(self) -> SubsetConfig:
        if self.corpus_file is not None and self.file_list is not None:
            raise ValueError("give 'corpus_file' or 'file_list', not both")
        # A field name that no file of this subset reads would be silently ignored.
        if self.text_field is not None and not any(is_jsonl_file(name) for name in self.corpus_file_names() or []):
            raise ValueError(
                f"'text_field' applies to JSON Lines corpus files ({', '.join(JSONL_SUFFIXES)}); "
                "this subset's corpus_file / file_list names none"
            )
        return self

    def corpus_file_names(self) -> list[str] | None:
        """The files this entry names, in order; None when it names none (the built-in default applies)."""
        if self.file_list is not None:
            return list(self.file_list)
        return [self.corpus_file] if self.corpus_file is not None else None


class ResolvedSubset(BaseModel):
    """A subset with every field decided: what sample generation consumes.

    ``corpus_file`` names the corpus in messages and results: the file, or for a ``file_list`` the files joined
    with ' + '. What to download and read is ``corpus_files``.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    corpus_file: str
    file_list: tuple[str, ...] = ()  # non-empty when the corpus was given as a file list
    text_field: str = DEFAULT_TEXT_FIELD
    language: Language
    needles: tuple[str, ...]
    retrieval_question: str
    answer: str | None  # the short answer inside the needle, when known: the guide and guess detection use it
    task: str

    @property
    def reference_answer(self) -> str:
        return '\n'.join(self.needles)

    @property
    def corpus_files(self) -> tuple[str, ...]:
        """Every file the corpus is read from, in order (relative to the corpus directory)."""
        return self.file_list or (self.corpus_file,)

    @property
    def corpus_param(self) -> str:
        """The parameter that named the files, for error messages: ``subsets.<name>.corpus_file`` or ``file_list``."""
        return f'subsets.{self.name}.{"file_list" if self.file_list else "corpus_file"}'


def _resolved_corpus(default: SubsetConfig, override: SubsetConfig) -> dict[str, Any]:
    # Files named by the override replace the default's, whichever of corpus_file / file_list either used.
    chosen = override if override.corpus_file_names() is not None else default
    names = chosen.corpus_file_names() or ['']
    from_list = chosen.file_list is not None
    return {
        'corpus_file': ' + '.join(names) if from_list else names[0],
        'file_list': tuple(names) if from_list else (),
        'text_field': override.text_field or default.text_field or DEFAULT_TEXT_FIELD,
    }


# Adding a subset means adding an entry here (or passing one in ``subsets``), nothing else.
DEFAULT_SUBSETS: dict[str, SubsetConfig] = {
    'english': SubsetConfig(
        corpus_file='PaulGraham_Essays.txt',
        language='en',
        needles=[EN_NEEDLE],
        retrieval_question=EN_QUESTION,
        answer=EN_ANSWER,
    ),
    'chinese': SubsetConfig(
        corpus_file='Journey_to_the_West.txt',
        language='zh',
        needles=[ZH_NEEDLE],
        retrieval_question=ZH_QUESTION,
        answer=ZH_ANSWER,
    ),
}


class NiahParams(BaseModel):
    """The benchmark's ``extra_params``, validated once."""

    model_config = ConfigDict(extra='forbid', frozen=True)

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
        description='; '.join(f"'{name}': {get_task(name).description}" for name in task_names()) + '.',
    )
    num_needles: int = Field(3, description="Facts per sample for task 'multi_retrieval' (1-20).")
    diff: float = Field(
        25, description="Task 'reasoning': depth increment in percent of each following link (as CDME's diff)."
    )
    shuffle_links: bool = Field(False, description="Task 'reasoning': insert the links in a shuffled order.")
    distractors: int | None = Field(
        None,
        description="Task 'multi_retrieval': distractor facts of the same form about other keys placed in the "
        'haystack (RULER multi-key); None = 3 per needle, 0 = none (the task before v4).',
    )
    associative_distractor: bool = Field(
        False,
        description="Task 'associative': also place a sentence that shares the question's words but does not answer "
        'it, away from the needle (NoLiMa-Hard).',
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
    needle_bank: str | None = Field(
        None,
        description="Draw needles from a needle bank: 'builtin' (fictional facts, English and Chinese, shipped) or "
        'a path to a JSONL/JSON file of {needle, question, answer, language}. None uses the subset needles, '
        'unless n_needles, sample_method, fixed_index or n_runs is given (then builtin).',
    )
    n_needles: int = Field(1, description='inspect_evals: needles drawn from the bank per cell (one sample each).')
    sample_method: Literal['fixed', 'sequential', 'random'] = Field(
        'fixed', description="inspect_evals: how bank needles are drawn: 'fixed', 'sequential' or 'random'."
    )
    fixed_index: int = Field(0, description="inspect_evals: bank index for 'fixed' (start index for 'sequential').")
    n_runs: int = Field(
        1, description='inspect_evals: repeats of the whole grid, each run drawing the next needles of the bank.'
    )
    sampling_seed: int = Field(0, description='Seed of every random choice (random needle draws, magic numbers).')
    start_buffer: int = Field(0, description='Tokens at the top of the haystack where no needle is placed.')
    end_buffer: int = Field(0, description='Tokens at the bottom of the haystack where no needle is placed.')
    length_buffer: int = Field(
        0, description='Tokens of each context length left free (CDME length_buffer): the prompt is this much shorter.'
    )
    guide: bool = Field(False, description="Append an answer-format hint to the question, as CDME's questions do.")
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
        'lengths outer, depths inner, as the built-in sends them.',
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

    @field_validator('task')
    @classmethod
    def _known_task(cls, value: str) -> str:
        if value not in task_names():
            raise ValueError(f'must be {_choices(task_names())}')
        return value

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
            if alias == 'tokenizer_model':
                value = _tiktoken_for_model(value)
            if values.get(canonical) is not None and values[canonical] != value:
                raise NiahConfigError(
                    alias,
                    f'is another name for {canonical}; give one of them, not both ({values[canonical]!r} vs {value!r})',
                )
            values[canonical] = value
        # EvalScope passes every default along, so only a changed bank option can mean "use the bank".
        changed = [name for name in BANK_OPTIONS if values.get(name) not in (None, cls.model_fields[name].default)]
        if values.get('needle_bank') is None and changed:
            values['needle_bank'] = 'builtin'
        return values

    @field_validator(
        'context_lengths_num_intervals',
        'document_depth_percent_intervals',
        'num_repeats',
        'n_needles',
        'n_runs',
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

    @field_validator('distractors')
    @classmethod
    def _distractor_count(cls, value: int | None) -> int | None:
        if value is not None and not 0 <= value <= MAX_DISTRACTORS:
            raise NiahConfigError('distractors', f'must be between 0 and {MAX_DISTRACTORS}, got {value}')
        return value

    @field_validator('num_needles')
    @classmethod
    def _needle_count(cls, value: int) -> int:
        if not 1 <= value <= 20:
            raise ValueError('must be between 1 and 20')
        return value

    @field_validator('start_buffer', 'end_buffer', 'length_buffer', 'fixed_index')
    @classmethod
    def _not_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError('must be 0 or more')
        return value

    @field_validator('diff')
    @classmethod
    def _diff(cls, value: float) -> float:
        if not 0 <= value <= 100:
            raise ValueError('must be between 0 and 100 (percent of the haystack)')
        return value

    @field_validator('effective_length_threshold')
    @classmethod
    def _threshold(cls, value: float) -> float:
        if not 0 < value <= 1:
            raise ValueError('must be in (0, 1]')
        return value

    @field_validator('needle_bank')
    @classmethod
    def _bank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be 'builtin' or a path to a needle bank file")
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
        return _check_needles(value)

    @field_validator('retrieval_question', 'tokenizer_path')
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
        if self.needle_bank is not None and not get_task(self.task).accepts_bank:
            raise NiahConfigError(
                'needle_bank', f"draws single needles; task {self.task!r} brings its own needles (use task 'single')"
            )
        self._nothing_ignored()
        for name, override in self.subsets.items():
            if self.needle_bank is not None and override.task is not None and not get_task(override.task).accepts_bank:
                raise NiahConfigError(f'subsets.{name}.task', "needle_bank draws single needles; use task 'single'")
            _check_needles(override.needles, param=f'subsets.{name}.needles')
            if name not in DEFAULT_SUBSETS and (override.corpus_file_names() is None or override.language is None):
                raise NiahConfigError(
                    f'subsets.{name}',
                    f"a new subset needs 'corpus_file' and 'language' ('en' or 'zh'), or 'file_list' in place of "
                    f'corpus_file; built-in subsets are {sorted(DEFAULT_SUBSETS)}',
                )
        return self

    def _nothing_ignored(self) -> None:
        """Refuse values the chosen task or needle source would silently replace."""
        for field in ('needles', 'retrieval_question'):
            if getattr(self, field) is None:
                continue
            if self.needle_bank is not None:
                raise NiahConfigError(
                    field, f'{_bank_reason(self)}, so {field} would be ignored; give one or the other'
                )
            # Top-level values reach the subsets of task 'single' that do not bring their own.
            used = get_task(self.task).uses_subset_needles or any(
                override.task is not None
                and get_task(override.task).uses_subset_needles
                and getattr(override, field) is None
                for override in self.subsets.values()
            )
            if not used:
                raise NiahConfigError(
                    field,
                    f'task {self.task!r} brings its own needles and question, so {field} would be ignored; use '
                    "task 'single' with your own needles",
                )
        for name, override in self.subsets.items():
            task = override.task or self.task
            for field in ('needles', 'retrieval_question', 'answer'):
                if getattr(override, field, None) is None:
                    continue
                if self.needle_bank is not None:
                    raise NiahConfigError(
                        f'subsets.{name}.{field}',
                        f'{_bank_reason(self)}, so it would be ignored; give one or the other',
                    )
                if not get_task(task).uses_subset_needles:
                    raise NiahConfigError(
                        f'subsets.{name}.{field}',
                        f"task {task!r} brings its own needles and question, so it would be ignored; use task 'single'",
                    )
        # model_fields_set holds what the user gave (aliases resolved): a default is never "given".
        tasks = {self.task, *(override.task for override in self.subsets.values() if override.task)}
        for field, task in _task_only_parameters().items():
            given = field in self.model_fields_set and getattr(self, field) != NiahParams.model_fields[field].default
            if given and task not in tasks:
                raise NiahConfigError(
                    field, f'only applies to task {task!r} (tasks here: {sorted(tasks)}), so it would be ignored'
                )

    # ---- derived values -------------------------------------------------------------------------------------

    def context_length_grid(self) -> list[int]:
        """Context lengths in tokens, ascending, without duplicates."""
        if self.context_lengths is not None:
            return sorted(set(self.context_lengths))
        return sorted(
            set(
                _linspace_rounded(
                    self.context_lengths_min, self.context_lengths_max, self.context_lengths_num_intervals
                )
            )
        )

    def depth_percent_grid(self) -> list[float]:
        """Needle depths in percent, ascending, without duplicates."""
        if self.document_depth_percents is not None:
            return sorted({float(depth) for depth in self.document_depth_percents})
        low, high, count = (
            self.document_depth_percent_min,
            self.document_depth_percent_max,
            self.document_depth_percent_intervals,
        )
        if self.document_depth_percent_interval_type == 'sigmoid':
            points = [low + (high - low) * i / (count - 1) for i in range(count)] if count > 1 else [low]
            return sorted({_kamradt_logistic(x) for x in points})
        return sorted({float(value) for value in _linspace_rounded(low, high, count)})

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
        check_run_size(self, subset_count=len(names))
        return resolved

    def resolve_subset(self, name: str) -> ResolvedSubset:
        """Per-subset value, else the top-level value, else the subset's built-in default."""
        if not is_safe_subset_name(name):
            raise NiahConfigError('subset_list', f'{name!r} is not a valid subset name; allowed: {SUBSET_NAME_RULE}')
        if name not in DEFAULT_SUBSETS and name not in self.subsets:
            raise NiahConfigError('subset_list', f'unknown subset {name!r}; available: {self.subset_names()}')
        default = DEFAULT_SUBSETS.get(name, SubsetConfig())
        override = self.subsets.get(name, SubsetConfig())
        needles = override.needles or self.needles or default.needles
        question = override.retrieval_question or self.retrieval_question or default.retrieval_question
        if not needles or not question:
            missing = 'needles' if not needles else 'retrieval_question'
            raise NiahConfigError(
                f'subsets.{name}.{missing}', f'subset {name!r} has no {missing}; give it per subset or at the top level'
            )
        # A default answer belongs to the default needle: it is dropped when the needles are replaced.
        own_needles = override.needles is None and self.needles is None
        answer = override.answer or (default.answer if own_needles else None)
        return ResolvedSubset(
            name=name,
            **_resolved_corpus(default, override),
            language=override.language or default.language or 'en',
            needles=tuple(needle.strip() for needle in needles),
            retrieval_question=question.strip(),
            answer=answer.strip() if answer else None,
            task=override.task or self.task,
        )

    def draws_per_cell(self) -> int:
        """Needle draws per cell: n_needles x n_runs with a needle bank, else one."""
        return self.n_needles * self.n_runs if self.needle_bank is not None else 1

    def effective_mode(self) -> str:
        """The effective-length mode of this run: as given, else the task's own default (associative: relative)."""
        if 'effective_length_mode' in self.model_fields_set:
            return self.effective_length_mode
        return get_task(self.task).effective_length_mode or self.effective_length_mode


def parse_params(extra_params: Any, *, user_given: Any = None) -> NiahParams:
    """Validate user ``extra_params``; every problem becomes one NiahConfigError naming the parameter.

    ``user_given``: the dict the user wrote, when ``extra_params`` is a merged view that also holds every default
    (EvalScope's ``self.extra_params``). Only the user's own keys are validated then, so a conflict the user wrote
    (``n_contexts: 3`` with ``context_lengths_num_intervals: 10``) is refused even where one side equals a default,
    and an alias never conflicts with a default the user did not write.
    """
    if user_given is not None:
        extra_params = user_given
    if extra_params is None:
        extra_params = {}
    if not isinstance(extra_params, Mapping):
        raise NiahConfigError(
            'extra_params',
            f'must be a mapping of parameter names to values, e.g. {{"context_lengths": [1000, 4000]}} '
            f'(got {type(extra_params).__name__} {_short(extra_params)})',
        )
    values = dict(extra_params)
    unknown = sorted(set(values) - set(NiahParams.model_fields))
    if unknown:
        raise NiahConfigError(
            unknown[0], f'unknown parameter; allowed parameters are: {", ".join(NiahParams.model_fields)}'
        )
    try:
        return NiahParams.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        location = '.'.join(str(part) for part in first['loc']) or 'extra_params'
        message = first['msg'].removeprefix('Value error, ')
        # A value given under another tool's name is reported under that name, the one the user wrote.
        given = [name for name, canonical in ALIASES.items() if canonical == location and values.get(name) is not None]
        if given and values.get(location) is None:
            location, message = given[0], f'{message} ({given[0]} is the alias of {location})'
        raise NiahConfigError(location, f'{message} (got {first.get("input")!r})') from None


def is_safe_subset_name(name: Any) -> bool:
    """Whether ``name`` follows ``SUBSET_NAME_RULE``."""
    return isinstance(name, str) and _SUBSET_NAME.fullmatch(name) is not None


def check_subset_list(names: Any) -> list[str]:
    """``subset_list`` as a list of distinct names that follow ``SUBSET_NAME_RULE`` (not yet checked to exist)."""
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise NiahConfigError(
            'subset_list',
            f"must be a list of subset names such as ['english', 'chinese'] (got {type(names).__name__} "
            f'{_short(names)})',
        )
    if not names:
        raise NiahConfigError('subset_list', "must name at least one subset, e.g. ['english']")
    seen: set[str] = set()
    for name in names:
        if not is_safe_subset_name(name):
            raise NiahConfigError(
                'subset_list', f'{_short(name)} is not a valid subset name; allowed: {SUBSET_NAME_RULE}'
            )
        if name in seen:
            raise NiahConfigError('subset_list', f'subset {name!r} is listed twice')
        seen.add(name)
    return list(names)


def check_run_size(params: NiahParams, *, subset_count: int) -> int:
    """Samples of the run (``samples_per_subset`` x subsets); refused above ``MAX_SAMPLES_PER_RUN`` unless
    ``allow_large_grid``, and above ``MAX_SAMPLES_HARD_LIMIT`` always. Returns the count."""
    per_subset = params.samples_per_subset()
    total = per_subset * subset_count
    shape = (
        f'{subset_count} subset(s) x {len(params.context_length_grid())} lengths x '
        f'{len(params.depth_percent_grid()) + (1 if params.absent_control else 0)} depths'
        f'{" (control included)" if params.absent_control else ""} x {params.num_repeats} num_repeats x '
        f'{params.draws_per_cell()} needle draws'
    )
    if total > MAX_SAMPLES_HARD_LIMIT:
        raise NiahConfigError(
            'allow_large_grid',
            f'the run has {total:,} samples ({shape}); at most {MAX_SAMPLES_HARD_LIMIT:,} are possible',
        )
    if total > MAX_SAMPLES_PER_RUN and not params.allow_large_grid:
        raise NiahConfigError(
            'allow_large_grid',
            f'the run has {total:,} samples ({shape}), more than {MAX_SAMPLES_PER_RUN:,}; shrink the grid or set '
            'allow_large_grid: true',
        )
    return total


def check_corpus_repeats(
    *, subset: ResolvedSubset, corpus_tokens: int, max_context_length: int, params: NiahParams
) -> None:
    """Refuse a longest context length that needs the corpus repeated more than ``params.max_corpus_repeats`` times.

    ``corpus_tokens`` may be a lower bound (a prefix indexed far enough for the longest length): the check only
    fails when the whole corpus is shorter than the longest length divided by the cap.
    """
    if corpus_tokens * params.max_corpus_repeats >= max_context_length:
        return
    times = max_context_length / max(corpus_tokens, 1)
    raise NiahConfigError(
        'max_corpus_repeats',
        f'context length {max_context_length:,} would repeat corpus file {subset.corpus_file!r} of subset '
        f'{subset.name!r} ({corpus_tokens:,} tokens) {times:,.1f} times, more than max_corpus_repeats='
        f'{params.max_corpus_repeats}; use a longer corpus, shorter context lengths, or raise max_corpus_repeats',
    )


def check_dataset_args(dataset_args: Any, *, allowed_keys: Collection[str] | None = None) -> None:
    """Refuse ``dataset_args['needle_haystack']`` shapes that would fail deep inside EvalScope or be dropped silently.

    Benchmark parameters belong under ``extra_params``; ``extra_params`` must be a mapping; ``subset_list`` a list of
    safe names. ``allowed_keys``, when given, are the only other keys accepted (EvalScope ignores unknown ones).
    """
    if not isinstance(dataset_args, Mapping):
        raise NiahConfigError(
            'dataset_args',
            f"the needle_haystack entry must be a mapping such as {{'extra_params': {{...}}}} (got "
            f'{type(dataset_args).__name__} {_short(dataset_args)})',
        )
    for key in dataset_args:
        if key in NiahParams.model_fields or key in ALIASES:
            raise NiahConfigError(
                key,
                f"is a benchmark parameter: put it under extra_params, e.g. dataset_args={{'needle_haystack': "
                f"{{'extra_params': {{{key!r}: ...}}}}}}",
            )
    if allowed_keys is not None:
        unknown = sorted(str(key) for key in dataset_args if key not in allowed_keys)
        if unknown:
            raise NiahConfigError(
                'dataset_args', f'unknown key {unknown[0]!r}; allowed: {", ".join(sorted(allowed_keys))}'
            )
    extra_params = dataset_args.get('extra_params')
    if extra_params is not None and not isinstance(extra_params, Mapping):
        parse_params(extra_params)  # raises the one extra_params error
    if dataset_args.get('subset_list') is not None:
        check_subset_list(dataset_args['subset_list'])


def extra_params_spec() -> dict[str, dict[str, Any]]:
    """EvalScope's ``BenchmarkMeta.extra_params`` spec, generated from the model's fields and defaults."""
    spec: dict[str, dict[str, Any]] = {}
    defaults = NiahParams()
    for name, field in NiahParams.model_fields.items():
        value = getattr(defaults, name)
        spec[name] = {
            'type': _type_name(field.annotation),
            'description': field.description or '',
            'value': value if not isinstance(value, BaseModel) else value.model_dump(),
        }
    return spec


# ---- helpers --------------------------------------------------------------------------------------------------


def _check_needles(value: list[str] | None, *, param: str | None = None) -> list[str] | None:
    if value is None:
        return None
    problem = None
    if not value:
        problem = 'must hold at least one needle sentence'
    elif any(not isinstance(needle, str) or not needle.strip() for needle in value):
        problem = 'every needle must be a non-empty string'
    if problem:
        if param:
            raise NiahConfigError(param, problem)
        raise ValueError(problem)
    return value


def _bank_reason(params: NiahParams) -> str:
    changed = [name for name in BANK_OPTIONS if getattr(params, name) != NiahParams.model_fields[name].default]
    return f'needles come from needle_bank {params.needle_bank!r}' + (
        f' ({", ".join(changed)} given)' if changed else ''
    )


def _short(value: Any, *, limit: int = 60) -> str:
    # Hostile input can be huge: an error message quotes only its start.
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + '...'


def _tiktoken_for_model(model: Any) -> str:
    # CDME's tokenizer_model names an OpenAI model; tiktoken's own table maps it to an encoding, offline.
    import tiktoken.model

    if not isinstance(model, str) or not model.strip():
        raise NiahConfigError('tokenizer_model', f"must be an OpenAI model name such as 'gpt-4' (got {model!r})")
    try:
        return f'tiktoken:{tiktoken.model.encoding_name_for_model(model.strip())}'
    except KeyError:
        known = ', '.join(sorted(tiktoken.model.MODEL_TO_ENCODING)[:12])
        raise NiahConfigError(
            'tokenizer_model',
            f'unknown OpenAI model {model!r}; known to tiktoken: {known}, ... (or set tokenizer_path)',
        ) from None


def _task_only_parameters() -> dict[str, str]:
    """Parameters only one task reads (declared by the task types): given with another task they would be ignored."""
    return {param: name for name in task_names() for param in get_task(name).own_parameters}


def _choices(names: tuple[str, ...]) -> str:
    quoted = [repr(name) for name in names]
    return quoted[0] if len(quoted) == 1 else f'{", ".join(quoted[:-1])} or {quoted[-1]}'


def _linspace_rounded(low: float, high: float, count: int) -> list[int]:
    # Exactly np.round(np.linspace(low, high, count)) as the built-in computes it: i * step + low, the last value
    # set to high, rounded half to even; a different formula rounds differently at float ties.
    if count == 1:
        return [round(low)]
    step = (high - low) / (count - 1)
    return [round(i * step + low) for i in range(count - 1)] + [round(high)]


def _kamradt_logistic(x: float, *, scale: float = 100, midpoint: float = 50, steepness: float = 0.1) -> float:
    # Kamradt's sigmoid spacing keeps the ends exact and squeezes the middle.
    if x in (0, 100):
        return float(x)
    return round(scale / (1 + math.exp(-steepness * (x - midpoint))), 3)


def _type_name(annotation: Any) -> str:
    if get_origin(annotation) is Literal and all(isinstance(choice, str) for choice in get_args(annotation)):
        return 'str'
    text = str(annotation).replace('typing.', '')
    for raw, name in (
        ('int | None', 'int'),
        ('list[int] | None', 'list[int]'),
        ('list[float] | None', 'list[float]'),
        ('list[str] | None', 'list[str]'),
        ('str | None', 'str'),
    ):
        if text == raw:
            return name
    if isinstance(annotation, type):
        return annotation.__name__
    if text.startswith('dict['):
        return 'dict'
    return text
