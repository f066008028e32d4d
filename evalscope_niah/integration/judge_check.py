"""Judge qualification before the run: the configured judge grades calibration answers built from each judged
subset's own needle and question; a judge that misgrades them stops the run (or, with ``judge_check: fallback``,
the run is scored by rule and labelled so). Nothing here calls the model under test.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from evalscope.api.messages import ChatMessageSystem, ChatMessageUser
from evalscope.api.model import GenerateConfig

from ..errors import NiahConfigError
from ..escaping import inert_logger
from ..judging.judge_failures import FATAL_FAILURE_KINDS, JudgeCallFailure
from ..judging.qualification import (
    QualificationResult,
    build_calibration,
    calibration_prompts,
    judge_qualifies,
    qualification_error_message,
)
from ..tasks import get_task, judge_reference
from ..tasks.single.hooks import calibration_values
from .invocation import entered_from_cli
from .judge_errors import judge_call_error
from .replies import judge_generate

__all__ = ['JudgeCheckStop', 'qualify_judges']

logger = inert_logger(__name__)

# Calibration calls in flight at once: about one subset's set, so the check takes one judge round trip or two.
_CONCURRENT_CALLS = 10
# docs/en/scoring.md, the judge check: the check's first call goes alone, tried PROBE_ATTEMPTS times PROBE_RETRY_S apart
# (the OpenAI client adds two quick reconnects of its own): an address nobody answers, a rejected key or an unknown
# model fail every call alike, so the check stops there in seconds and names the cause, instead of ten calls each
# with the judge's full retries (EvalScope's default: 5 attempts 10 s apart). A 401/403/404 is never retried
# (EvalScope does not retry them either). Once the first call came back, the rest go with the judge's own retries.
PROBE_ATTEMPTS = 2
PROBE_RETRY_S = 1
# The ways out of a stop as flags, for a run started from a command line (qualification.py has them as TaskConfig
# arguments, for run_task).
_WAYS_OUT_CLI = (
    '--dataset-args \'{"needle_haystack": {"extra_params": {"judge_check": "fallback"}}}\' scores by rule when the '
    'judge fails, labelled so; --judge \'{"strategy": "rule"}\' never calls a judge.'
)


class JudgeCheckStop(NiahConfigError):
    """The judge check stopped the run; ``results`` holds every subset checked so far (the failing one included),
    so the run's judge check file is written on a stop as on a pass."""

    def __init__(self, message: str, results: dict[str, QualificationResult]) -> None:
        super().__init__('judge_check', message)
        self.results = results


def qualify_judges(judges: Sequence[Any], plans: Sequence[Any], *, mode: str) -> dict[str, QualificationResult]:
    """Qualify every judge on every subset's calibration set (``plans``: one needle plan per judged subset).

    Returns subset -> the first failing (else last) result. With ``mode='stop'`` a failure raises JudgeCheckStop
    naming the judge, what it got wrong and the two ways out (as command-line flags when the run came from a command
    line, else as ``TaskConfig`` arguments); with ``'fallback'`` the caller scores that subset by rule.
    """
    results: dict[str, QualificationResult] = {}
    dead: dict[int, JudgeCallFailure] = {}  # id(judge) -> the failure that stops every call to it
    for plan in plans:
        meta = plan.meta
        items = build_calibration(
            question=meta.question,
            reference=meta.reference_answer,
            needles=meta.needles,
            language=meta.language,
            answer=meta.answer_keys[0] if meta.answer_keys else None,
            values=calibration_values(get_task(meta.task), meta),  # several values: the task's own answer
        )
        # The reference as the run's judge reads it (with the task's hint), so the check grades the run's prompt.
        prompts = calibration_prompts(items, question=meta.question, reference=judge_reference(meta))
        for judge in judges:
            name = _judge_name(judge)
            stopped_by = dead.get(id(judge))
            if stopped_by is None:
                replies, failures, stopped_by = _ask(judge, prompts)
            else:  # already failed on another subset: the same address, key and model would fail again
                replies, failures = [None] * len(items), [stopped_by] * len(items)
            if stopped_by is not None:
                dead[id(judge)] = stopped_by
            result = judge_qualifies(items, replies, judge_name=name, failures=failures, stopped_by=stopped_by)
            log = logger.info if result.qualified else logger.warning
            log('needle_haystack judge check, subset %s: %s', meta.subset, result.summary())
            if meta.subset not in results or results[meta.subset].qualified:
                results[meta.subset] = result
            if not result.qualified and mode == 'stop':
                message = qualification_error_message(result, judge_name=name, **_ways_out(entered_from_cli()))
                raise JudgeCheckStop(message, results)
    return results


def _ways_out(cli: bool) -> dict[str, str]:
    return {'ways_out': _WAYS_OUT_CLI} if cli else {}  # else qualification's own: TaskConfig arguments


def _ask(
    judge: Any, prompts: Sequence[tuple[str, str]]
) -> tuple[list[str | None], list[JudgeCallFailure | None], JudgeCallFailure | None]:
    """Each prompt's reply and call failure (one of the two is None), and the failure that stopped the check at its
    first call (then nothing else was asked)."""
    url, model = str(getattr(judge, 'api_url', '') or ''), _judge_name(judge)

    def call(prompt: tuple[str, str], *, probe: bool = False) -> tuple[str | None, JudgeCallFailure | None]:
        system, user = prompt
        messages = [ChatMessageSystem(content=system), ChatMessageUser(content=user)]
        try:
            output = judge_generate(judge, messages, extra=_probe_config(judge) if probe else None)
        except Exception as exc:  # no reply: named by what failed, never taken for an unparsable reply
            failure = judge_call_error(exc, url=url, model=model)
            logger.warning('needle_haystack judge check: a calibration call failed: %s', failure.describe())
            return None, failure
        return output.completion, None

    first = call(prompts[0], probe=True)
    if first[1] is not None and first[1].kind in FATAL_FAILURE_KINDS:
        return [None] * len(prompts), [first[1]] * len(prompts), first[1]
    asked = prompts[1:] if first[1] is None else prompts  # a first call that failed otherwise is asked again
    # No more in flight than the judge's own batch size: a server with fewer slots only queues the rest, and a
    # queued call's wait counts against its timeout.
    batch = getattr(getattr(getattr(judge, 'model', None), 'config', None), 'batch_size', None) or _CONCURRENT_CALLS
    with ThreadPoolExecutor(max_workers=max(1, min(_CONCURRENT_CALLS, batch, len(asked) or 1))) as pool:
        answers = ([first] if first[1] is None else []) + list(pool.map(call, asked))
    return [reply for reply, _ in answers], [failure for _, failure in answers], None


def _probe_config(judge: Any) -> GenerateConfig:
    """The first call's short retries (fewer, when the judge's own retries are fewer)."""
    configured = judge.model.config.retries
    attempts = PROBE_ATTEMPTS if configured is None else max(1, min(PROBE_ATTEMPTS, configured))
    return GenerateConfig(retries=attempts, retry_interval=PROBE_RETRY_S)


def _judge_name(judge: Any) -> str:
    model = getattr(judge, 'model', None)
    return str(getattr(model, 'name', None) or getattr(judge, 'judge_id', None) or 'judge')
