"""EvalScope's evaluator with three changes: reviews that survive a crash, a prefix-cache-friendly request order
(planned with the adapter's prefix gate), and one run per work dir at a time (work_dir_lock)."""

from __future__ import annotations

import weakref
from typing import Any

from evalscope.evaluator import DefaultEvaluator

from ..metadata import SampleMeta
from ..ordering import PrefixInfo, prefix_friendly_order
from ..work_dir_lock import hold_work_dir

__all__ = ['NiahEvaluator']


class NiahEvaluator(DefaultEvaluator):
    """A fresh run writes reviews to a temporary file that EvalScope publishes only when the run ends, so after a
    kill -9 every finished review was lost and re-judged on resume. A fresh run has no old reviews to protect:
    publish the (empty) files at once, so each review is appended where --use-cache will find it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # EvalScope makes the evaluators of a run before it writes its config, cache or results in the work dir (only
        # its log is opened earlier): the earliest point of a run that knows the final directory. Held until this
        # dataset's evaluation ends, failed or not; an error before it (EvalScope refusing the cache) releases the
        # hold when EvalScope drops the evaluator.
        self._work_dir_hold = hold_work_dir(self.outputs.outputs_dir)
        weakref.finalize(self, self._work_dir_hold.release)

    def eval(self):
        try:
            return super().eval()
        finally:
            self._work_dir_hold.release()

    def _collect_work_items(self, dataset_dict):
        context = super()._collect_work_items(dataset_dict)
        if not self.use_cache:
            self.cache_manager.commit_review_reruns()
        # Prompts sharing a haystack start share text up to their needle: ordered so that a server with automatic
        # prefix caching (vLLM) reuses the most (see ordering.py). Reviews of cached predictions make no model call
        # and go first. The pool submits in list order.
        reviews = [item for item in context.work_items if item.sample is None]
        predictions = [item for item in context.work_items if item.sample is not None]
        order = self.benchmark.params.request_order
        if order != 'grid':
            predictions = prefix_friendly_order(predictions, info=_prefix_info, interleave=order == 'replicas')
        self.benchmark.plan_prefix_turns([item.sample for item in predictions])
        context.work_items[:] = reviews + predictions
        return context


def _prefix_info(item: Any) -> PrefixInfo:
    meta = SampleMeta.from_dict(item.sample.metadata)
    return PrefixInfo(
        group=meta.prefix_group,
        context_length=meta.context_length,
        divergence_token=meta.divergence_token,
        prompt_tokens=meta.context_length,
    )
