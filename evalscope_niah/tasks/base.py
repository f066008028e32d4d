"""What a task is: a type that plans its needles, names what it checks in the corpus, and scores answers by rule.

A task never sees EvalScope or a haystack. Sample planning hands it a ``PlanContext`` (the subset, the parameters and
the task's own picks for the subset) and a cell; scoring hands its ``check`` the final answer (reasoning stripped) and
a ``RuleTarget`` (what the sample asked, read from its metadata once, here, for every task).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar, Literal, TypeVar

from ..metadata import GridCell, SampleMeta
from ..params.run_params import NiahParams, TaskParams
from ..params.subsets import ResolvedSubset
from ..scoring import PromptText, RuleScore, levenshtein_score
from ..vocabulary import Language

P = TypeVar('P', bound=TaskParams)
D = TypeVar('D', bound='SampleData')

__all__ = [
    'GeneratedHaystack',
    'NeedleChoice',
    'PlanContext',
    'ReportedValue',
    'RuleTarget',
    'SampleData',
    'Task',
    'task_params',
    'with_levenshtein',
]


@dataclass(frozen=True)
class PlanContext:
    """What a task may read when it plans a sample: the subset, the run's parameters (its own through ``options``),
    its own picks for the subset (``Task.picks``) and the corpus."""

    subset: ResolvedSubset
    params: NiahParams
    # What ``Task.picks`` gave for this subset, one per pick of a cell (``GridCell.pick``); () when it picks nothing.
    picks: tuple[Any, ...] = ()
    corpus_text: str = ''  # the subset's corpus, for tasks that must keep their terms out of it

    @property
    def language(self) -> Language:
        return self.subset.language

    def options(self, model: type[P]) -> P:
        """The task's own parameters (its ``params_model``), as the user gave them or at their defaults."""
        return task_params(self.params, model)


def task_params(params: NiahParams, model: type[P]) -> P:
    """A task's own parameters (its ``TaskParams`` model): as given in extra_params, else its defaults."""
    given = params.given_task_params(model)
    return given if given is not None else model()


@dataclass(frozen=True)
class SampleData:
    """A task's own data about one sample, beyond what every sample has (a subclass declares the fields: strings,
    numbers, tuples of them). It travels through EvalScope as JSON in ``SampleMeta.task_data``; the task reads it
    back typed with ``of(meta)``."""

    def to_json(self) -> dict[str, Any]:
        return {item.name: _json_value(getattr(self, item.name)) for item in fields(self)}

    @classmethod
    def of(cls: type[D], meta: SampleMeta) -> D:
        """This task's data of ``meta``; fields it lacks (a sample planned before the field existed) take their
        defaults, keys this type does not declare are ignored. The metadata comes back from EvalScope's files, so a
        value of another kind than its field's default (a string where a list belongs) is refused, not used."""
        values = {
            item.name: _from_json(cls, item.name, meta.task_data[item.name], item.default)
            for item in fields(cls)
            if item.name in meta.task_data
        }
        return cls(**values)


def _json_value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _from_json(owner: type, name: str, value: Any, default: Any) -> Any:
    if isinstance(default, tuple):
        if not isinstance(value, list | tuple):
            raise ValueError(f'{owner.__name__}.{name} must be a list, got {type(value).__name__}')
        return tuple(value)
    if isinstance(default, float) and type(value) is int:  # JSON writes 1.0 as 1 in some producers
        return float(value)
    if default is not MISSING and default is not None and type(value) is not type(default):
        raise ValueError(f'{owner.__name__}.{name} must be {type(default).__name__}, got {type(value).__name__}')
    return value


@dataclass(frozen=True)
class NeedleChoice:
    """A sample's needles and question before any haystack exists."""

    needles: tuple[str, ...]
    question: str  # as asked, before the answer-format guide is appended
    reference_answer: str
    answer_keys: tuple[str, ...]
    # One depth (percent of the haystack) per needle, in the needles' order: how a task spreads its needles (a chain
    # 'diff' points apart, RULER's picked depths). None: the cell's depth for all, placed one after another.
    needle_depths: tuple[float, ...] | None = None
    guide: str | None = None  # an answer-format hint appended to the question when params.guide is on
    distractors: tuple[str, ...] = ()  # sentences placed away from the needles to mislead
    distractor_depths: tuple[float, ...] | None = None  # one per distractor; None spreads them over the haystack
    data: SampleData | None = None  # the task's own data about the sample, for its scoring and judge hint


@dataclass(frozen=True)
class GeneratedHaystack:
    """A haystack a task writes in place of the subset's corpus (RULER's noise and needle lines)."""

    name: str  # how results name it where a corpus file would be named ('ruler:noise')
    text: str  # prose with sentence ends; a shorter text than the prompts need repeats
    # What follows a needle: None the language's space; '\n' keeps a needle on its own line in a text of one
    # sentence a line.
    needle_separator: str | None = None


@dataclass(frozen=True)
class ReportedValue:
    """A value a task's rule score reports for each sample (a share in [0, 1]) and what it means to a report reader,
    so a report shows it as a percent with the right direction instead of an unexplained number."""

    name: str  # its key in ``RuleScore.values``, the results file and the cells CSV
    label: str  # how a report names it
    # What it measures, which sets whether higher is better: an error rate is the one where lower is better.
    measure: Literal['score', 'recall', 'precision', 'error_rate'] = 'score'


class Task(ABC):
    """One kind of needle-in-a-haystack sample. A new task is one subclass defining ``choose`` (its needles and
    question) and ``check`` (its rule), registered with ``register_task``.

    The other hooks have defaults most tasks keep: ``corpus_needles`` and ``haystack_text`` (planning), ``judge_hint``
    (judging); ``rule_score``, ``is_judged`` and ``judge_reference`` are how the run asks, rarely overridden. What only
    the ``single`` task does (a needle bank, the user's needles, several values in the judge check) is not here: it
    is the ``NeedleSourceHooks`` capability in ``tasks/single/hooks.py``, which callers ask for by type."""

    name: ClassVar[str]
    description: ClassVar[str] = ''
    # The same in Chinese, for the Chinese docs (its parameters' Chinese descriptions go in each field's
    # json_schema_extra 'description_zh'); empty: the Chinese docs show the English one.
    description_zh: ClassVar[str] = ''
    # Whether the LLM judge grades its answers; a task scored exactly by rule says False.
    judged: ClassVar[bool] = False
    # Whether the subset's needles, question, keyword and answer, given with a keyword, are a user chain it asks.
    uses_user_chain: ClassVar[bool] = False
    # Its own parameters: flat extra_params names, unique across tasks and the run model, each with its default and
    # checks; given while no subset runs this task they are refused (they would be silently ignored).
    params_model: ClassVar[type[TaskParams]] = TaskParams
    # The effective-length mode this task reports by default (None: the parameter's default).
    effective_length_mode: ClassVar[str | None] = None
    # Values of its rule score (``RuleScore.values``) that each sample's result carries beside the ones every task
    # reports (acc, rule_recall, levenshtein): written to the results file, averaged per cell in the cells CSV and
    # declared to the report with their meaning.
    reported_values: ClassVar[tuple[ReportedValue, ...]] = ()
    # How its answer keys are read, which the conformance suite holds every task to: whether their order matters (an
    # ordered list: a reversed or shuffled answer is wrong) and whether an answer naming some of them earns a share
    # (never a pass) or nothing.
    ordered_answer: ClassVar[bool] = False
    partial_credit: ClassVar[bool] = False

    def haystack_text(self, subset: ResolvedSubset, params: NiahParams, *, tokens: int) -> GeneratedHaystack | None:
        """Called once per subset and length when its haystacks are built: a haystack this task generates in place
        of the subset's corpus, about ``tokens`` tokens or more (a shorter one repeats); None: the subset's corpus,
        as for most tasks."""
        return None

    def corpus_needles(self, context: PlanContext) -> list[tuple[tuple[str, ...], str]]:
        """Called once per subset before its cells are planned: every fixed needle text this task may insert, as
        (texts, the parameter that chose them) pairs; a run where one already occurs in the corpus is refused (a
        model could answer without retrieving). Tasks that invent their facts return []."""
        return []

    @abstractmethod
    def choose(self, context: PlanContext, cell: GridCell, *, seed: int) -> NeedleChoice:
        """Called once per sample (a cell of the grid) when samples are planned, before any haystack exists: return
        the cell's needles, question, reference and answer keys as a ``NeedleChoice``. ``seed`` is stable across runs
        and the same at every length, so a cell's needles do not change with its length."""

    def check(self, answer: str, target: RuleTarget) -> RuleScore:
        """Called once per answered sample (through ``rule_score``), by the run, the conformance checks and the
        real-answer tables alike: the task's rule, as inspect's ``check(value, target)``. Score a final answer
        (reasoning already stripped) against what the sample asked and return a ``RuleScore`` (``values['acc']`` in
        [0, 1], any ``reported_values``). A task defines this (or, as older plugins do, overrides ``rule_score``)."""
        raise NotImplementedError(f'task {self.name!r} defines neither check nor rule_score')

    def rule_score(self, answer: str, meta: SampleMeta, *, prompt: PromptText | None = None) -> RuleScore:
        """Called once per answered sample by the run's review: the rule score of a final answer, as a run records
        it: ``check`` on the sample's ``RuleTarget``, with CDME's Levenshtein similarity to the reference reported
        beside it (a needle-absent cell has no needle to be like). ``prompt`` is what the model was shown, the
        evidence that an answer pastes it (None: unknown, only a last-resort length bound). Override ``check``; a
        task overriding this instead keeps working as it is."""
        rule = self.check(answer, RuleTarget.of(meta, prompt=prompt))
        return rule if meta.control else with_levenshtein(rule, answer, meta)

    def is_judged(self, meta: SampleMeta) -> bool:
        """Called per sample when the run decides how it is scored: True when the LLM judge grades it (the task is
        ``judged`` and the sample is not a needle-absent control, which only the rule scores)."""
        return self.judged and not meta.control

    def judge_hint(self, meta: SampleMeta) -> str | None:
        """Called per judged sample when its judge prompt is written: what the judge is given beside the reference
        answer (None: nothing). The run and the judge check both ask through ``judge_reference``, so the judge is
        qualified on the prompt it grades."""
        return None

    def judge_reference(self, meta: SampleMeta) -> str:
        """Called per judged sample by the run and the judge check: the reference answer as the judge reads it,
        with this task's hint when it has one."""
        hint = self.judge_hint(meta)
        return f'{meta.reference_answer} ({hint})' if hint else meta.reference_answer


@dataclass(frozen=True)
class RuleTarget:
    """What a rule checks an answer against, read once from the sample's metadata: the needles and question as asked,
    the language they are written in, the reference answer, the answer keys, the prompt the model was shown (None:
    unknown) and the task's own data (``data``)."""

    needles: tuple[str, ...]
    question: str
    language: str
    reference: str
    answer_keys: tuple[str, ...]
    prompt: PromptText | None
    meta: SampleMeta

    @classmethod
    def of(cls, meta: SampleMeta, *, prompt: PromptText | None = None) -> RuleTarget:
        return cls(
            needles=meta.needles,
            question=meta.question,
            language=meta.language,
            reference=meta.reference_answer,
            answer_keys=meta.answer_keys,
            prompt=prompt,
            meta=meta,
        )

    @property
    def key(self) -> str:
        """The first answer key (the one a single-answer task asks for); a sample without one is refused."""
        if not self.answer_keys:
            raise ValueError(f'sample of task {self.meta.task!r} has no answer key')
        return self.answer_keys[0]

    def data(self, kind: type[D]) -> D:
        """The task's own data about the sample (its ``SampleData`` subclass), typed."""
        return kind.of(self.meta)


def with_levenshtein(rule: RuleScore, answer: str, meta: SampleMeta, **reported: float) -> RuleScore:
    """A ladder's rule score as the task reports it: the values in ``reported`` and CDME's Levenshtein similarity to
    the reference beside the accuracy (``Task.rule_score`` adds it after ``check``; a task that overrides
    ``rule_score`` itself calls this)."""
    return rule.reporting(**reported, levenshtein=levenshtein_score(answer, meta.reference_answer))
