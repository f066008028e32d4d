"""What each subset asks and reads: its task, needles, question and answer, its corpus files and language, and the
per-subset overrides; resolved per subset into a ``ResolvedSubset``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..errors import NiahConfigError
from .cdme_names import KEYWORD_TASK, check_chain
from .subsets import (
    DEFAULT_SUBSETS,
    SUBSET_NAME_RULE,
    ResolvedSubset,
    SubsetConfig,
    check_file_list,
    check_needles,
    is_safe_subset_name,
    language_code,
    own_line,
    resolved_corpus,
)


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
