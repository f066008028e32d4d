"""Subsets: a corpus, its language and the needle and question asked about it; the two built-in ones and their
default needles, the rule every subset name follows, the subsets' parameters (``SubsetParams``, the run's group of
them, and each subset's overrides) and their resolution per subset into a ``ResolvedSubset``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from ..corpus_format import DEFAULT_TEXT_FIELD, JSONL_SUFFIXES, MAX_CORPUS_FILES, is_jsonl_file
from ..errors import NiahConfigError, quoted
from ..vocabulary import Language
from .cdme_names import KEYWORD_TASK, check_chain

# EvalScope's built-in needles and questions (Kamradt's San Francisco sandwich, its Chinese counterpart), kept so
# existing configs and results compare; the answer is the short span inside the needle a guess would name.
EN_NEEDLE = 'The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.'
EN_QUESTION = 'What is the best thing to do in San Francisco?'
EN_ANSWER = 'eat a sandwich and sit in Dolores Park on a sunny day'
ZH_NEEDLE = '小明最喜欢的实习的地点就是上海人工智能实验室。'
ZH_QUESTION = '小明最喜欢的实习地点是哪里？'
ZH_ANSWER = '上海人工智能实验室'

# Subset names become dataset names, file names and report keys: ASCII letters, digits, '.', '_' and '-', not
# starting with '.', at most 64 characters. A fixed-length character-class match: no backtracking.
SUBSET_NAME_RULE = "ASCII letters, digits, '.', '_' and '-', not starting with '.', at most 64 characters"
_SUBSET_NAME = re.compile(r'[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}')

# OpenCompass CDME writes the language as a word ('English', 'Chinese'); any case of it or of the code is read.
_LANGUAGE_WORDS = {'en': 'en', 'english': 'en', 'zh': 'zh', 'chinese': 'zh'}


def language_code(value: Any) -> Any:
    """'English' / 'Chinese' (CDME's words) or 'en' / 'zh', any case, as our code; else ValueError."""
    code = _LANGUAGE_WORDS.get(value.strip().lower()) if isinstance(value, str) else None
    if code is None:
        raise ValueError("must be 'en' or 'zh' (or CDME's 'English' / 'Chinese', any case)")
    return code


LanguageName = Annotated[Language, BeforeValidator(language_code)]


def own_line(needle: str) -> bool:
    """Whether a needle was written with a line break before or after it (CDME's '\\n...\\n'): it is then inserted
    on a line of its own, as CDME's splice of the raw string puts it."""
    return needle[:1] in ('\r', '\n') or needle[-1:] in ('\r', '\n')


class SubsetConfig(BaseModel):
    """One subset: its corpus (one file, or a list joined in order), language and optionally needles and question.

    ``needles`` / ``retrieval_question`` left as None take the top-level values, then the built-in defaults.
    ``corpus_file`` and ``file_list`` (OpenCompass CDME's name) are alternatives: give one.
    """

    model_config = ConfigDict(extra='forbid', frozen=True)

    corpus_file: str | None = None
    file_list: list[str] | None = None
    text_field: str | None = None
    language: LanguageName | None = None
    needles: list[str] | None = None
    needle: str | None = None  # CDME's single needle: the same as needles [needle]
    retrieval_question: str | None = None
    answer: str | None = None
    keyword: str | None = None  # CDME's multi-needle keyword: the needles are then the user's reasoning chain
    task: str | None = None  # a registered task name: checked by params.parse_params, which knows the tasks

    @model_validator(mode='before')
    @classmethod
    def _one_needle(cls, values: Any) -> Any:
        # CDME's 'needle' is read as a one-needle list, so everything after this sees 'needles' only.
        if isinstance(values, dict) and values.get('needle') is not None:
            if values.get('needles') is not None:
                raise ValueError("give 'needle' (one sentence, CDME's name) or 'needles' (a list), not both")
            values = {**values, 'needles': [values['needle']], 'needle': None}
        return values

    @field_validator('retrieval_question', 'corpus_file', 'answer', 'text_field', 'keyword')
    @classmethod
    def _non_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError('must not be empty')
        return value

    @field_validator('file_list')
    @classmethod
    def _file_names(cls, value: list[str] | None) -> list[str] | None:
        return check_file_list(value)

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
    # A user's reasoning chain (CDME multi-needle): the word of the last link that answers; ``answer`` is then the
    # full reference answer. None: no user chain.
    keyword: str | None = None
    # The needles (stripped, as in ``needles``) written with a line break around them: inserted on their own line.
    own_line_needles: frozenset[str] = frozenset()

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


def resolved_corpus(default: SubsetConfig, override: SubsetConfig) -> dict[str, Any]:
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


def check_file_list(value: list[str] | None) -> list[str] | None:
    """A ``file_list`` (a subset's or the top-level one): 1 to ``MAX_CORPUS_FILES`` non-empty names."""
    if value is not None:
        if not 1 <= len(value) <= MAX_CORPUS_FILES:
            raise ValueError(f'must name 1 to {MAX_CORPUS_FILES} corpus files')
        if any(not name.strip() for name in value):
            raise ValueError('every file name must be non-empty')
    return value


def is_safe_subset_name(name: Any) -> bool:
    """Whether ``name`` follows ``SUBSET_NAME_RULE``."""
    return isinstance(name, str) and _SUBSET_NAME.fullmatch(name) is not None


def check_subset_list(names: Any) -> list[str]:
    """``subset_list`` as a list of distinct names that follow ``SUBSET_NAME_RULE`` (not yet checked to exist)."""
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise NiahConfigError(
            'subset_list',
            f"must be a list of subset names such as ['english', 'chinese'] (got {type(names).__name__} "
            f'{quoted(names)})',
        )
    if not names:
        raise NiahConfigError('subset_list', "must name at least one subset, e.g. ['english']")
    seen: dict[str, str] = {}  # casefolded -> as given: a subset names files, one file for both on a case-blind disk
    for name in names:
        if not is_safe_subset_name(name):
            raise NiahConfigError(
                'subset_list', f'{quoted(name)} is not a valid subset name; allowed: {SUBSET_NAME_RULE}'
            )
        if name in seen.values():
            raise NiahConfigError('subset_list', f'subset {name!r} is listed twice')
        if name.casefold() in seen:
            raise NiahConfigError(
                'subset_list',
                f'subsets {seen[name.casefold()]!r} and {name!r} differ only in case: their files would be one file '
                'on macOS and Windows; rename one',
            )
        seen[name.casefold()] = name
    return list(names)


def check_needles(value: list[str] | None, *, param: str | None = None) -> list[str] | None:
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


class SubsetParams(BaseModel):
    """The subsets' parameters (part of ``NiahParams``, flat ``extra_params`` names)."""

    model_config = ConfigDict(extra='forbid', frozen=True)

    task: str = Field(
        'single',
        # The registered tasks are listed with what each asks by tasks.compose.parameters, which knows them.
        description='The task every subset asks (a subset may name its own).',
    )
    retrieval_question: str | None = Field(
        None, description="Question asked after the haystack; None uses each subset's own question."
    )
    needles: list[str] | None = Field(
        None, description="Needle sentences inserted into the haystack; None uses each subset's own needles."
    )
    keyword: str | None = Field(
        None,
        description='OpenCompass CDME multi-needle: the word of the last link that answers retrieval_question. '
        "Given, needles are your own reasoning chain: task 'reasoning' (also without task), scored by this keyword.",
    )
    answer: str | None = Field(
        None,
        description="The answer to retrieval_question: task 'single': the short answer inside the needle (for the "
        "guide and guess detection; None with needles you give: each needle's key fact is derived from it and the "
        "question); with keyword: the full reference answer (CDME's answer).",
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
    subsets: dict[str, SubsetConfig] = Field(
        default_factory=dict,
        description='Per-subset overrides or new subsets: {name: {corpus_file or file_list, text_field, language, '
        'needles, retrieval_question}}. Built-in: english (PaulGraham_Essays.txt), chinese (Journey_to_the_West.txt).',
    )

    @field_validator('subsets')
    @classmethod
    def _subset_names(cls, value: dict[str, SubsetConfig]) -> dict[str, SubsetConfig]:
        for name in value:
            if not is_safe_subset_name(name):
                raise NiahConfigError('subsets', f'{name!r} is not a valid subset name; allowed: {SUBSET_NAME_RULE}')
        return value

    @field_validator('language')
    @classmethod
    def _language(cls, value: str | None) -> str | None:
        return None if value is None else language_code(value)

    @field_validator('file_list')
    @classmethod
    def _file_list(cls, value: list[str] | None) -> list[str] | None:
        return check_file_list(value)

    @field_validator('needles')
    @classmethod
    def _needles(cls, value: list[str] | None) -> list[str] | None:
        return check_needles(value)

    @field_validator('retrieval_question', 'keyword', 'answer')
    @classmethod
    def _non_blank_texts(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError('must not be empty')
        return value

    @model_validator(mode='after')
    def _new_subsets(self) -> SubsetParams:
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

    def subset_names(self) -> list[str]:
        return [*DEFAULT_SUBSETS, *(name for name in self.subsets if name not in DEFAULT_SUBSETS)]

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

    def tasks_in_run(self) -> set[str]:
        """Every task the run asks: the run's own and each subset's (``task_of``)."""
        return {self.task, *(self.task_of(override) for override in self.subsets.values())}
