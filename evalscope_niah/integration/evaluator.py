"""EvalScope's evaluator with these changes: reviews that survive a crash, a prefix-cache-friendly request order
(planned with the adapter's prefix gate), requests with a deadline that Ctrl-C cuts (interrupt.py), one run per
work dir at a time (work_dir_lock), live heatmap pages and progress lines as samples finish (reporting/live.py), and
the adaptive sweep's rounds (adaptive_rounds.py)."""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

from evalscope.evaluator import DefaultEvaluator

from ..disk_space import DiskFull, disk_full_error, disk_full_message
from ..errors import NiahConfigError
from ..escaping import inert_logger
from ..metadata import SampleMeta
from ..reporting.outputs import OutputFiles, write_judge_check
from ..serving.deadline import stop_requests
from ..serving.ordering import PrefixInfo, prefix_friendly_order
from ..work_dir_lock import hold_work_dir
from .adaptive_rounds import AdaptiveRounds
from .interrupt import exit_interrupted, install_deadline, stop_on_interrupt
from .invocation import refusal_ends_cli_run
from .judge_check import JudgeCheckStop
from .safe_paths import claim_safe_model_id

__all__ = ['NiahEvaluator']

logger = inert_logger(__name__)


class NiahEvaluator(DefaultEvaluator):
    """A fresh run writes reviews to a temporary file that EvalScope publishes only when the run ends, so after a
    kill -9 every finished review was lost and re-judged on resume. A fresh run has no old reviews to protect:
    publish the (empty) files at once, so each review is appended where --use-cache will find it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The adapter made the model id a safe folder name already (safe_paths.py); again here, where EvalScope reads
        # it to build its folders, in case a later EvalScope makes the evaluator first (a no-op otherwise).
        claim_safe_model_id(kwargs.get('task_config'))
        super().__init__(*args, **kwargs)
        # EvalScope makes the evaluators of a run before it writes its config, cache or results in the work dir (only
        # its log is opened earlier): the earliest point of a run that knows the final directory. Held until this
        # dataset's evaluation ends, failed or interrupted; an error before it (EvalScope refusing the cache) releases
        # the hold when EvalScope drops the evaluator.
        self._work_dir_hold = hold_work_dir(self.outputs.outputs_dir)
        weakref.finalize(self, self._work_dir_hold.release)
        self._rounds: AdaptiveRounds | None = None

    def eval(self):
        complete = False
        try:
            with stop_on_interrupt():
                try:
                    report = super().eval()
                    complete = True  # the final pages are written: the live ones' data now says the run is over
                    return report
                except KeyboardInterrupt:
                    # Finished rows are on disk (EvalScope appends each as it completes); the cut ones have none.
                    exit_interrupted(self.outputs.outputs_dir)
                except NiahConfigError as exc:
                    self._stop_on_refusal(exc)
                except (DiskFull, Exception) as exc:  # DiskFull is no Exception: it passes EvalScope's handlers
                    full = disk_full_error(exc)
                    if full is None:
                        raise
                    raise SystemExit(disk_full_message(full, self.outputs.outputs_dir)) from None
        finally:
            self.benchmark.finish_live(complete=complete)
            self._work_dir_hold.release()

    def _stop_on_refusal(self, exc: NiahConfigError) -> NoReturn:
        """A refusal before any model request (the judge check, the corpus, the window) ends the run: the judge
        check's file is written on a stop as on a pass, and under a command line the refusal is one message, not
        EvalScope's traceback of a dozen frames (from Python the error is raised as it is, for the caller)."""
        if isinstance(exc, JudgeCheckStop):
            results = {subset: result.to_dict() for subset, result in exc.results.items()}
            path = write_judge_check(
                self.cache_manager.get_report_path(), results, files=OutputFiles(self.benchmark.name)
            )
            logger.warning('needle_haystack judge check stopped the run; its results: %s', path)
        with refusal_ends_cli_run():
            raise exc

    def _process_work_item(self, item, model_prediction_dir):
        with _disk_full_stops_the_run():  # the prediction row is written here (in a worker)
            return super()._process_work_item(item, model_prediction_dir)

    def _persist_result(self, item, task_state, sample_score) -> None:
        with _disk_full_stops_the_run():  # the review row is written here, in the main thread
            super()._persist_result(item, task_state, sample_score)
            self.benchmark.sample_finished(sample_score)

    def _predict_sample(self, sample, model_prediction_dir):
        # Here, not in eval(): the model loads on first use. The judges get theirs in replies.judge_generate.
        install_deadline(self.model, max_reply_bytes=self.benchmark.params.max_reply_bytes)
        return super()._predict_sample(sample, model_prediction_dir)

    def _collect_work_items(self, dataset_dict):
        context = super()._collect_work_items(dataset_dict)
        if not self.use_cache:
            self.cache_manager.commit_review_reruns()
        # The plan is every sample of the run (an adaptive sweep's too: the cells it leaves out stay pending until its
        # final pages draw them as not tested); the cached scores are finished already.
        self.benchmark.start_live(
            self.cache_manager.get_report_path(),
            [sample for dataset in dataset_dict.values() for sample in dataset],
            [score for scores in context.cached_scores_by_subset.values() for score in scores],
        )
        if self.benchmark.params.sweep == 'adaptive':
            # Nothing is sent as one pool: _run_pool runs the rounds, each ordered as below.
            self._rounds = AdaptiveRounds(
                benchmark=self.benchmark, dataset_dict=dataset_dict, run_round=self._run_round
            )
            return context
        context.work_items[:] = self._ordered(context.work_items)
        return context

    def _ordered(self, work_items):
        # Prompts sharing a haystack start share text up to their needle: ordered so that a server with automatic
        # prefix caching (vLLM) reuses the most (see ordering.py). Reviews of cached predictions make no model call
        # and go first. The pool submits in list order.
        reviews = [item for item in work_items if item.sample is None]
        predictions = [item for item in work_items if item.sample is not None]
        order = self.benchmark.params.request_order
        if order != 'grid':
            predictions = prefix_friendly_order(predictions, info=_prefix_info, interleave=order == 'replicas')
        self.benchmark.plan_prefix_turns([item.sample for item in predictions])
        return reviews + predictions

    def _run_pool(self, context):
        if self._rounds is None:
            return super()._run_pool(context)
        return self._rounds.run(context)

    def _run_round(self, context, work_items):
        """One adaptive round through EvalScope's own pool: its samples only, in the prefix order."""
        round_context = dataclasses.replace(context, work_items=self._ordered(work_items), total_cached=0)
        return super()._run_pool(round_context)


@contextmanager
def _disk_full_stops_the_run() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        full = disk_full_error(exc)
        if full is None:
            raise
        stop_requests()  # the other samples' answers could not be saved either
        raise DiskFull(full) from exc


def _prefix_info(item: Any) -> PrefixInfo:
    meta = SampleMeta.from_dict(item.sample.metadata)
    return PrefixInfo(
        group=meta.prefix_group,
        context_length=meta.context_length,
        divergence_token=meta.divergence_token,
        prompt_tokens=meta.context_length,
    )
