"""What a task is: a type that plans its needles, names what it checks in the corpus, and scores answers by rule.

A task never sees EvalScope or a haystack. Sample planning hands it a ``PlanContext`` (the subset, the parameters and
the bank draws) and a cell; scoring hands it the final answer (reasoning stripped) and the sample's metadata.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from ..metadata import GridCell, SampleMeta
from ..scoring import PromptText, RuleScore, levenshtein_score

__all__ = ['NeedleChoice', 'PlanContext', 'RuleScore', 'Task', 'with_levenshtein']


@dataclass(frozen=True)
class PlanContext:
    """What a task may read when it plans a sample (typed loosely: tasks must not import params or samples)."""

    subset: Any  # params.ResolvedSubset
    params: Any  # params.NiahParams
    bank: tuple[Any, ...] = ()  # single.bank.BankNeedle draws of this subset, when a needle bank is used
    corpus_text: str = ''  # the subset's corpus, for tasks that must keep their terms out of it

    @property
    def language(self) -> str:
        return self.subset.language


@dataclass(frozen=True)
class NeedleChoice:
    """A sample's needles and question before any haystack exists."""

    needles: tuple[str, ...]
    question: str  # as asked, before the answer-format guide is appended
    reference_answer: str
    answer_keys: tuple[str, ...]
    needle_depths: tuple[float, ...] | None = None  # one depth per needle; None spreads them from the cell depth
    guide: str | None = None  # an answer-format hint appended to the question when params.guide is on
    distractors: tuple[str, ...] = ()  # sentences placed away from the needles to mislead
    distractor_depths: tuple[float, ...] | None = None  # one per distractor; None spreads them over the haystack
    distractor_values: tuple[str, ...] = ()
    candidates: tuple[str, ...] = ()  # answers the task knows of: naming several of them is hedging
    judge_context: str | None = None  # what the judge needs beside the reference (an associative hop)


class Task(ABC):
    """One kind of needle-in-a-haystack sample. A new task is one subclass registered with ``register_task``."""

    name: ClassVar[str]
    description: ClassVar[str] = ''
    # Whether the LLM judge grades its answers; a task scored exactly by rule says False.
    judged: ClassVar[bool] = False
    # Whether the subset's own needles / retrieval_question (and a needle bank) are what it asks about.
    uses_subset_needles: ClassVar[bool] = False
    # Whether its samples may be drawn from a needle bank (needle_bank, n_needles, ...).
    accepts_bank: ClassVar[bool] = False
    # Parameters only this task reads: refused with another task, where they would be silently ignored.
    own_parameters: ClassVar[tuple[str, ...]] = ()
    # The effective-length mode this task reports by default (None: the parameter's default).
    effective_length_mode: ClassVar[str | None] = None

    def corpus_needles(self, context: PlanContext) -> list[tuple[tuple[str, ...], str]]:
        """Every fixed needle text this task may insert, with the parameter that chose it: none may already occur
        in the corpus (a model could answer without retrieving). Tasks that invent their facts return []."""
        return []

    @abstractmethod
    def choose(self, context: PlanContext, cell: GridCell, *, seed: int) -> NeedleChoice:
        """The needles and question of one cell; ``seed`` is stable across runs and the same at every length."""

    @abstractmethod
    def rule_score(self, answer: str, meta: SampleMeta, *, prompt: PromptText | None = None) -> RuleScore:
        """Score a final answer (reasoning already stripped) against the sample's answer keys. ``prompt`` is what
        the model was shown, the evidence that an answer pastes it (None: unknown, only a last-resort length bound)."""

    def is_judged(self, meta: SampleMeta) -> bool:
        return self.judged and not meta.control


def with_levenshtein(rule: RuleScore, answer: str, meta: SampleMeta, **reported: float) -> RuleScore:
    """A ladder's rule score as the task reports it: the values in ``reported`` and CDME's Levenshtein similarity to
    the reference beside the accuracy."""
    return rule.reporting(**reported, levenshtein=levenshtein_score(answer, meta.reference_answer))
