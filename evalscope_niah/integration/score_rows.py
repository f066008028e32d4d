"""EvalScope's SampleScore of a sample read back as the run's SampleResult (what the results files, metrics and
heatmaps are made from); the row of a sample that ended in an error; and the ledger that makes every sample a run
asked for end as a row."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Hashable, Iterable

from evalscope.api.metric import SampleScore
from evalscope.constants import ScoreStatus

from ..metadata import SampleMeta
from ..reporting.sample_record import SampleResult
from ..serving.server_values import plausible_tokens
from ..tasks import task_for

__all__ = ['LOST_SAMPLE_ERROR', 'SampleLedger', 'error_result', 'sample_result', 'score_meta']

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


class SampleLedger:
    """Every sample a run asked the model for, and whether it ended as a scored row or an error row.

    EvalScope saves a reply after our hooks return; a failure there (or anywhere after the reply arrived that no hook
    of ours sees) was logged and, under ignore_errors, only counted: the sample had no prediction, no review and no
    row. What the ledger still holds when the rows are written was lost that way, and becomes an error row
    (:data:`LOST_SAMPLE_ERROR`). Worker threads write to it: hence the lock.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, dict[Hashable, SampleMeta]] = defaultdict(dict)  # subset -> sample id -> its meta

    def asked(self, sample_id: Hashable, meta: SampleMeta) -> None:
        with self._lock:
            self._open[meta.subset][sample_id] = meta

    def ended(self, subset: str, sample_ids: Iterable[Hashable]) -> None:
        """These samples of ``subset`` have their row (a score, or an error recorded by us)."""
        with self._lock:
            for sample_id in sample_ids:
                self._open[subset].pop(sample_id, None)

    def lost(self, subsets: Iterable[str] | None = None) -> list[tuple[Hashable, SampleResult]]:
        """(sample id, error row) for each sample of ``subsets`` (None: all) asked and never ended; they end with it."""
        with self._lock:
            chosen = list(self._open) if subsets is None else [subset for subset in subsets if subset in self._open]
            rows = [
                (sample_id, error_result(meta, LOST_SAMPLE_ERROR))
                for subset in sorted(chosen)
                for sample_id, meta in self._open.pop(subset).items()  # in the order they were asked
            ]
        return rows


class ErrorRows:
    """The error row of each sample that raised after every retry, per subset and sample id: a sample the adaptive
    sweep asks again keeps one row, its last try's. Worker threads add: hence the lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, dict[Hashable, SampleResult]] = defaultdict(dict)

    def add(self, sample_id: Hashable, result: SampleResult) -> None:
        with self._lock:
            self._rows[result.subset][sample_id] = result

    def forget(self, subset: str, sample_ids: Iterable[Hashable]) -> None:
        with self._lock:
            for sample_id in sample_ids:
                self._rows.get(subset, {}).pop(sample_id, None)

    def of(self, subset: str) -> list[SampleResult]:
        with self._lock:
            return list(self._rows.get(subset, {}).values())

    def subsets(self) -> set[str]:
        with self._lock:
            return {subset for subset, rows in self._rows.items() if rows}
