"""One sample's review: what the sample was shown, its final answer and its rule score, computed once for every hook
that reads them, and the Scores built from them.

EvalScope scores a sample by calling the adapter's ``calculate_metrics``, which calls ``filter_prediction``, then
``match_score`` and/or ``judge_definition`` (through ``score_with_judge_contracts``): with the 'llm_recall' strategy
both, with a judge that fails both again (the rule score is the fallback). All of them run synchronously inside
``calculate_metrics``, on the thread that reviews the sample; EvalScope reviews samples on several threads at once.
So the review lives in a :class:`~contextvars.ContextVar` set for the length of ``calculate_metrics``: every thread
has its own context, so a parallel review never sees another sample's, and the review names the task state it
belongs to, so a hook called for any other state (or outside a review) gets none and scores as before, without the
prompt's evidence.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from evalscope.api.evaluator import TaskState
from evalscope.api.metric import SampleScore, Score
from evalscope.constants import ScoreStatus

from ..metadata import SampleMeta
from ..reporting.sample_record import bounded_text
from ..scoring import PromptText
from ..scoring.result import RuleScore
from ..serving.server_values import ServerValues
from ..tasks import score_answer

__all__ = ['SampleReview', 'excluded_score', 'review_of', 'reviewing', 'rule_score', 'served_values']


@dataclass
class SampleReview:
    """What one sample's scoring hooks share. ``prompt`` None: the haystack is not known (a review row without it)."""

    task_state: TaskState
    prompt: PromptText | None
    final: str  # the reply without its reasoning blocks
    # The rule score and the filtered prediction it was computed from (filters may change what the hooks are given).
    _rule: tuple[str, RuleScore] | None = field(default=None, init=False, repr=False)

    def rule(self, filtered_prediction: str, meta: SampleMeta) -> RuleScore:
        """The task's rule score of ``filtered_prediction``, computed on the first call and reused after."""
        if self._rule is None or self._rule[0] != filtered_prediction:
            self._rule = (filtered_prediction, score_answer(filtered_prediction, meta, prompt=self.prompt))
        return self._rule[1]


_CURRENT: ContextVar[SampleReview | None] = ContextVar('niah_sample_review', default=None)


@contextmanager
def reviewing(review: SampleReview) -> Iterator[SampleReview]:
    """``review`` is this thread's current review until the block ends."""
    token = _CURRENT.set(review)
    try:
        yield review
    finally:
        _CURRENT.reset(token)


def review_of(task_state: TaskState) -> SampleReview | None:
    """The review of ``task_state`` under way on this thread, or None."""
    review = _CURRENT.get()
    return review if review is not None and review.task_state is task_state else None


def rule_score(original_prediction: str, filtered_prediction: str, task_state: TaskState) -> tuple[RuleScore, Score]:
    """The task's rule score of the final answer (``filter_prediction`` stripped its reasoning), and the same as
    EvalScope's Score (a new one each call: EvalScope and the judge hook change the Score they are given)."""
    meta = SampleMeta.from_dict(task_state.metadata)
    review = review_of(task_state)
    final = filtered_prediction
    rule = review.rule(final, meta) if review is not None else score_answer(final, meta, prompt=None)
    score = Score(
        value=dict(rule.values),
        main_score_name='acc',
        prediction=original_prediction,
        extracted_prediction=final,
        explanation=rule.explanation,
        metadata={'source': 'rule', 'rule_certain': rule.certain},
    )
    return rule, score


def excluded_score(
    task_state: TaskState, final: str, *, repeats: int, explanation: str, metadata: dict[str, Any]
) -> SampleScore:
    """A sample left out of every mean with no value and no judge call; ``metadata`` says why."""
    score = Score(
        value={},
        main_score_name='acc',
        status=ScoreStatus.EXCLUDED,
        prediction=task_state.output.completion,
        extracted_prediction=final,
        explanation=explanation,
        metadata=metadata,
    )
    return SampleScore(
        score=score,
        sample_id=task_state.sample_id,
        group_id=task_state.group_id,
        generation_index=(task_state.sample_id % repeats) if repeats > 1 else 0,
        sample_metadata=task_state.metadata,
    )


def served_values(task_state: TaskState, values: ServerValues, final: str) -> dict[str, Any]:
    """What the server says it read and wrote (usage), and the reasoning it sent apart from the answer. Absent, not
    zero, when the endpoint reports no usage (a prompt is never 0 tokens); absent too when implausible (``values``
    drops it and warns once)."""
    output = task_state.output
    served: dict[str, Any] = {}
    usage = output.usage if output is not None else None
    prompt_tokens = values.tokens('usage.prompt_tokens', usage.input_tokens) if usage is not None else None
    if usage is not None and prompt_tokens:
        served['served_prompt_tokens'] = prompt_tokens
        served['served_completion_tokens'] = values.tokens('usage.completion_tokens', usage.output_tokens)
    reasoning = _reasoning_text(output, final)
    if reasoning:
        served['reasoning'] = bounded_text(reasoning)
    return served


def _reasoning_text(output: Any, final: str) -> str:
    if output is None or output.empty or isinstance(output.message.content, str):
        completion = '' if output is None or output.empty else output.completion
        # With no final answer, all of the text is reasoning (<think> blocks): kept, the needle may be in it.
        return completion[: len(completion) - len(final)].strip() if completion.endswith(final) else ''
    return '\n'.join(part.reasoning for part in output.message.content if part.type == 'reasoning' and part.reasoning)
