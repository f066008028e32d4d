"""The LLM judge in EvalScope's terms: the verdict contract and the one-case workflow that grades an answer.

The prompt and the parsing are ours (judge.py); this module only maps them onto EvalScope's judge API.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalscope.api.judge import (
    JudgeCase,
    JudgeContext,
    JudgeDefinition,
    JudgeRequest,
    OutputContract,
    ParseResult,
    ReducedVerdict,
)
from evalscope.api.messages import ChatMessageSystem, ChatMessageUser
from pydantic import BaseModel

from ..judging.judge import JUDGE_SYSTEM_PROMPT, judge_user_prompt, parse_verdict
from ..metadata import SampleMeta
from ..tasks import judge_reference

__all__ = ['VerdictContract', 'judge_workflow']


class _NoSchema(BaseModel):
    pass


class VerdictContract(OutputContract):
    """Our judge prompt already asks for JSON; parsing is ours (tolerant of fences, prose, reasoning blocks)."""

    schema_model: type[BaseModel] = _NoSchema

    def instruction(self) -> str:
        return ''

    def parse(self, response: str) -> ParseResult:
        verdict = parse_verdict(response or '')
        if verdict.status != 'ok':
            return ParseResult.failure(verdict.reason)
        return ParseResult.success({'rating': verdict.rating, 'accuracy': verdict.accuracy})


def judge_messages(*, question: str, reference: str, answer: str) -> list:
    # Only question, reference and answer (fenced as data, bounded): the judge never sees the haystack. The answer is
    # the final one: the adapter's filter_prediction stripped its reasoning.
    prompt = judge_user_prompt(question=question, reference=reference, answer=answer)
    return [ChatMessageSystem(content=JUDGE_SYSTEM_PROMPT), ChatMessageUser(content=prompt)]


def judge_workflow(meta: SampleMeta, rule_values: Mapping[str, float]) -> JudgeDefinition:
    """Grade one answer; the verdict becomes 'acc' and the rule values stay beside it."""

    def request(case, placement, completed_cases, context: JudgeContext) -> JudgeRequest:
        return JudgeRequest(
            messages=judge_messages(
                question=meta.question,
                reference=judge_reference(meta),
                answer=context.filtered_prediction,
            )
        )

    def reduce(case_verdicts, context: JudgeContext) -> ReducedVerdict:
        verdict = case_verdicts[0].value
        return ReducedVerdict(
            value={'acc': verdict['accuracy'], 'judge_accuracy': verdict['accuracy'], **rule_values},
            metadata={'judge_rating': verdict['rating']},
        )

    return JudgeDefinition.workflow(
        cases=[JudgeCase(case_id='retrieval', output_contract=VerdictContract())],
        request=request,
        reduce=reduce,
        main_score_name='acc',
    )
