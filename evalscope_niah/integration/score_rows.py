"""EvalScope's SampleScore of a sample read back as the run's SampleResult (what the results files, metrics and
heatmaps are made from), and the row of a sample that ended in an error (run_state.RunTally gathers both)."""

from __future__ import annotations

from evalscope.api.metric import SampleScore
from evalscope.constants import ScoreStatus

from ..metadata import SampleMeta
from ..reporting.sample_record import SampleResult
from ..serving.server_values import plausible_tokens
from ..tasks import task_for

__all__ = ['LOST_SAMPLE_ERROR', 'error_result', 'sample_result', 'score_meta']

# Characters of an error message kept in a results row: the exception's type and what it says, not a page of it.
MAX_ERROR_CHARS = 500
# The error of a sample whose reply arrived but was never saved (EvalScope failed after our hooks returned).
LOST_SAMPLE_ERROR = (
    'LostSampleError: the reply arrived, but EvalScope saved no prediction or review of this sample (its log, '
    'logs/eval_log.log, has the error); --use-cache DIR asks for it again'
)


def score_meta(sample_score: SampleScore) -> SampleMeta:
    return SampleMeta.from_dict(sample_score.sample_metadata or {})


def sample_result(sample_score: SampleScore) -> SampleResult:
    score = sample_score.score
    meta = score_meta(sample_score)
    value = score.value or {}
    extra = score.metadata or {}
    judged = bool(extra.get('judge_attempts'))
    judge_ok = judged and score.status == ScoreStatus.SUCCESS and 'judge_accuracy' in value
    rating = extra.get('judge_rating')
    return SampleResult(
        subset=meta.subset,
        context_length=meta.context_length,
        depth_percent=meta.depth_percent,
        control=meta.control,
        task_values={
            name: value[name]
            for name in (reported.name for reported in task_for(meta).reported_values)
            if value.get(name) is not None
        },
        accuracy=value.get('acc'),
        rule_recall=value.get('rule_recall'),
        levenshtein=value.get('levenshtein'),
        judge_accuracy=value.get('judge_accuracy') if judge_ok else None,
        judge_status='ok' if judge_ok else ('failed' if judged else 'not_called'),
        budget_exhausted=bool(extra.get('budget_exhausted')),
        answer=score.extracted_prediction if score.extracted_prediction is not None else None,
        reasoning=extra.get('reasoning'),
        judge_rating=float(rating) if judge_ok and rating is not None else None,
        # Checked again: a review cached by an older version may hold what a lying server said.
        served_prompt_tokens=plausible_tokens(extra.get('served_prompt_tokens')),
        served_completion_tokens=plausible_tokens(extra.get('served_completion_tokens')),
        scoring='judge' if judge_ok else extra.get('scoring', 'rule'),
        no_answer=extra.get('no_answer'),
        tokenizer=meta.tokenizer,
        answer_keys=meta.answer_keys,
    )


def error_result(meta: SampleMeta, message: str) -> SampleResult:
    """The results row of a sample that ended in an error: no score, the error's type and message."""
    return SampleResult(
        subset=meta.subset,
        context_length=meta.context_length,
        depth_percent=meta.depth_percent,
        control=meta.control,
        accuracy=None,
        rule_recall=None,
        levenshtein=None,
        judge_accuracy=None,
        judge_status='not_called',
        error=message[:MAX_ERROR_CHARS],
        tokenizer=meta.tokenizer,
    )
