"""The one rule-result type: what every rule ladder and every task's rule score returns."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ['RuleScore']


@dataclass(frozen=True)
class RuleScore:
    """One answer's rule score with the reason for it, like an inspect_ai ``Score`` (value + explanation).

    ``values['acc']`` is the accuracy; a task's other values (rule recall, precision, Levenshtein, abstained, ...) are
    reported beside it. ``certain`` says the rule alone may decide (the judge is skipped under ``llm_recall``);
    uncertain, ``acc`` is what a rule-only run records, never a pass. ``flags`` name what the rules saw ('exact',
    'negation', 'retraction', 'hedge', 'list', 'paste', 'long', 'other_language', 'paraphrase', 'missing', ...);
    ``evidence`` holds what they found (the values a multi-value answer stated, ...) for tests and explanations; it
    is not reported.
    """

    values: Mapping[str, float]
    certain: bool = True
    explanation: str = ''
    flags: tuple[str, ...] = ()
    evidence: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def verdict(cls, score: float, certain: bool, explanation: str, flags: tuple[str, ...] = ()) -> RuleScore:
        """A ladder's verdict: the accuracy alone, with its certainty, reason and flags."""
        return cls(values={'acc': score}, certain=certain, explanation=explanation, flags=flags)

    @classmethod
    def no_final_answer(cls) -> RuleScore:
        """Every ladder's verdict on an empty final answer: a certain 0 (nothing to judge)."""
        return cls.verdict(0.0, True, 'no final answer (empty, or reasoning never closed)', ('empty',))

    @property
    def accuracy(self) -> float:
        return self.values['acc']

    def reporting(self, **values: float) -> RuleScore:
        """The same score with more values reported beside the accuracy."""
        return dataclasses.replace(self, values={**self.values, **values})
