"""Three outcomes for a length of the grid, not two: it passes, it fails, or the data cannot tell (unknown).

A length's verdict is its mean score against the threshold (``stats.effective_context_length``). Samples that were
sent but left no score (a server error, a reply cut by the token limit, a reply with no final answer) are not zeros:
the verdict is settled only when it would be the same whatever they had scored (0 or 1 each), or when the scored
samples are enough to settle it on their own (a one-sided Wilson bound at the reports' CI level clears the
threshold). With every sample scored that is the plain comparison of the mean, as before; with none scored the
length is unknown, never failed, so a server outage is never read as a finding about the model. The effective
length bounded by an unknown length is an ``EffectiveBound``: at least the lengths before it, with the unknown one
named and why.

The rule itself is ``evalscope_niah/length_verdict.py``, shared with the adaptive planner, as the words
(``vocabulary.LengthStatus``: 'pass', 'fail', 'unknown') are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..vocabulary import LENGTH_STATUSES, LengthStatus
from .page_text import EN, PageText, reason_text
from .sample_record import SampleResult

__all__ = ['LENGTH_STATUSES', 'EffectiveBound', 'LengthStatus', 'unscored_reason']

# Why a sent sample has no score, as a reader counts them: (test, one, many).
_UNSCORED_KINDS: tuple[tuple[Callable[[SampleResult], bool], str, str], ...] = (
    (lambda sample: sample.errored, 'server error', 'server errors'),
    (lambda sample: sample.budget_excluded, 'cut reply', 'cut replies'),
    (lambda sample: sample.no_answer_excluded, 'reply with no final answer', 'replies with no final answer'),
)


def unscored_reason(samples: Iterable[SampleResult]) -> str | None:
    """Why some of ``samples`` have no score, counted by kind: '3 server errors, 1 cut reply'; None when all do."""
    samples = list(samples)
    parts = []
    for test, one, many in _UNSCORED_KINDS:
        count = sum(1 for sample in samples if test(sample))
        if count:
            parts.append(f'{count} {one if count == 1 else many}')
    return ', '.join(parts) or None


@dataclass(frozen=True)
class EffectiveBound:
    """What a report says of an effective length: ``at_least`` (the longest length up to which every length passes;
    None when the shortest does not) and, when the first length that does not pass is unknown rather than failed,
    that length and why (``reason``, e.g. '3 server errors'). With no ``unknown_length`` the length is settled."""

    at_least: int | None
    unknown_length: int | None = None
    reason: str | None = None

    @classmethod
    def of(cls, value: EffectiveBound | int | None) -> EffectiveBound:
        """A bound as given, or a settled length (int or None) as one."""
        return value if isinstance(value, EffectiveBound) else cls(value)

    @property
    def is_bound(self) -> bool:
        return self.unknown_length is not None

    def describe(self, label: Callable[[int], str], *, text: PageText = EN) -> str | None:
        """'16k' (settled), 'at least 2,500 tokens; 3,000 tokens unknown: 3 server errors' (a bound), 'unknown; ...'
        when even the shortest length is unknown; None when there is nothing to state (the shortest length fails).
        ``label`` writes a length as the caller shows lengths (with the tokenizer that counted them); ``text`` is the
        language of the words (labels.PageText: a Chinese subset's heatmaps)."""
        if self.unknown_length is None:
            return None if self.at_least is None else label(self.at_least)
        known = text.bound_unknown if self.at_least is None else text.bound_at_least.format(label=label(self.at_least))
        reason = reason_text(self.reason, text)
        return text.bound.format(known=known, length=label(self.unknown_length), reason=reason)

    def relabelled(self, labels: dict[int, int]) -> EffectiveBound:
        """The bound with its lengths replaced by ``labels`` (a length not in it keeps its own)."""

        def new(length: int | None) -> int | None:
            return None if length is None else labels.get(length, length)

        return EffectiveBound(new(self.at_least), new(self.unknown_length), self.reason)
