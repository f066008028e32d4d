"""Judge qualification before the run: the configured judge grades calibration answers built from each judged
subset's own needle and question; a judge that misgrades them stops the run (or, with ``judge_check: fallback``,
the run is scored by rule and labelled so). Nothing here calls the model under test.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from evalscope.api.messages import ChatMessageSystem, ChatMessageUser

from ..errors import NiahConfigError
from ..qualification import (
    QualificationResult,
    build_calibration,
    calibration_prompts,
    judge_qualifies,
    qualification_error_message,
)
from ..tasks import judge_reference

__all__ = ['qualify_judges']

logger = logging.getLogger(__name__)

# Calibration calls in flight at once: about one subset's set, so the check takes one judge round trip or two.
_CONCURRENT_CALLS = 10


def qualify_judges(judges: Sequence[Any], plans: Sequence[Any], *, mode: str) -> dict[str, QualificationResult]:
    """Qualify every judge on every subset's calibration set (``plans``: one needle plan per judged subset).

    Returns subset -> the first failing (else last) result. With ``mode='stop'`` a failure raises NiahConfigError
    naming the judge, what it got wrong and the two ways out; with ``'fallback'`` the caller scores that subset by
    rule.
    """
    results: dict[str, QualificationResult] = {}
    for plan in plans:
        meta = plan.meta
        items = build_calibration(
            question=meta.question,
            reference=meta.reference_answer,
            needles=meta.needles,
            language=meta.language,
            answer=meta.answer_keys[0] if meta.answer_keys else None,
        )
        # The reference as the run's judge reads it (with the task's hint), so the check grades the run's prompt.
        prompts = calibration_prompts(items, question=meta.question, reference=judge_reference(meta))
        for judge in judges:
            name = _judge_name(judge)
            replies = _ask(judge, prompts)
            result = judge_qualifies(items, replies, judge_name=name)
            log = logger.info if result.qualified else logger.warning
            log('needle_haystack judge check, subset %s: %s', meta.subset, result.summary())
            if not result.qualified and mode == 'stop':
                raise NiahConfigError('judge_check', qualification_error_message(result, judge_name=name))
            if meta.subset not in results or results[meta.subset].qualified:
                results[meta.subset] = result
    return results


def _ask(judge: Any, prompts: Sequence[tuple[str, str]]) -> list[str | None]:
    def call(prompt: tuple[str, str]) -> str | None:
        system, user = prompt
        try:
            # The adapter's judge.generate: judge_generate's reply checks, the run's secrets redacted from the reply
            # and from any error (both end up in the warnings and in the judge-check file).
            output = judge.generate([ChatMessageSystem(content=system), ChatMessageUser(content=user)])
        except Exception as exc:  # unreachable, refused, cut: an unparsable reply, reported as such
            logger.warning('needle_haystack judge check: a calibration call failed: %s: %s', type(exc).__name__, exc)
            return None
        return output.completion

    # No more in flight than the judge's own batch size: a server with fewer slots only queues the rest, and a
    # queued call's wait counts against its timeout.
    batch = getattr(getattr(getattr(judge, 'model', None), 'config', None), 'batch_size', None) or _CONCURRENT_CALLS
    with ThreadPoolExecutor(max_workers=max(1, min(_CONCURRENT_CALLS, batch, len(prompts)))) as pool:
        return list(pool.map(call, prompts))


def _judge_name(judge: Any) -> str:
    model = getattr(judge, 'model', None)
    return str(getattr(model, 'name', None) or getattr(judge, 'judge_id', None) or 'judge')
