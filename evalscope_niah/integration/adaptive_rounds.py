"""sweep: 'adaptive' inside EvalScope's evaluator: the run is still one benchmark whose dataset is the full grid (ids
by grid position, so EvalScope's cache matches rows as for a grid run), but its work pool runs in rounds.

Each round asks ``making.adaptive_plan.next_round`` which samples to send, from the scores of the samples chosen so
far; a chosen sample whose review is cached is read from the cache (no request), the others go through EvalScope's own
pool (``_run_pool``: predict and review, eval_batch_size at a time, in the prefix-friendly order). A resumed run
(--use-cache) re-derives every earlier round from the cached scores, so it chooses what the uninterrupted run would
have and sends only what that run had not finished. A sample that errored (no score; ``ignore_errors``) is no answer:
the plan asks it again in a later round while its length is undecided (``adaptive_plan.ERROR_ATTEMPTS`` sends in
all), and its earlier error leaves the results, which keep one row per sample. Cached rows of samples the sweep did
not choose (an earlier grid run in the same work dir) are left out: they would make the choice depend on what
happened to be cached.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable
from typing import Any

from evalscope.api.dataset import MemoryDataset

from ..escaping import inert_logger
from ..making.adaptive_plan import AdaptiveSettings, PlanUnit, next_round
from ..metadata import SampleMeta
from ..reporting.outputs import OutputFiles
from ..reporting.sweep_plan import subset_plan, write_sweep_plan
from ..tasks.compose import effective_length_mode
from .run_state import report_dir_of
from .score_rows import sample_result

__all__ = ['AdaptiveRounds', 'sweep_settings']

logger = inert_logger(__name__)

RunRound = Callable[[Any, list[Any]], dict[str, list[tuple[Any, Any]]]]


def sweep_settings(params: Any) -> AdaptiveSettings:
    return AdaptiveSettings(
        threshold=params.effective_length_threshold,
        mode=effective_length_mode(params),
        confidence=params.sweep_confidence,
        budget_prompts=params.sweep_budget_prompts,
        budget_tokens=params.sweep_budget_tokens,
        seed=params.sampling_seed,
    )


class AdaptiveRounds:
    """The rounds of one benchmark's evaluation; ``run`` stands in for one ``_run_pool`` over the whole pool."""

    def __init__(self, *, benchmark: Any, dataset_dict: dict[str, Any], run_round: RunRound) -> None:
        self._benchmark = benchmark
        self._datasets = dataset_dict  # eval()'s own dict: narrowed to the chosen samples when the rounds end
        self._run_round = run_round
        self._settings = sweep_settings(benchmark.params)
        self._units = {subset: [_unit(sample) for sample in dataset] for subset, dataset in dataset_dict.items()}
        self._scores: dict[str, dict[Hashable, float | None]] = {subset: {} for subset in dataset_dict}
        # Sends per sample in this run (a cached one counts once): the plan retries errors only so often.
        self._attempts: dict[str, Counter[Hashable]] = {subset: Counter() for subset in dataset_dict}
        self._rounds: dict[str, list[list[tuple[int, float]]]] = {subset: [] for subset in dataset_dict}
        self._stops: dict[str, str | None] = dict.fromkeys(dataset_dict)

    def run(self, context: Any) -> dict[str, list[tuple[Any, Any]]]:
        items = {(item.subset, _item_id(item)): item for item in context.work_items}
        cached = {
            (subset, score.sample_id): score
            for subset, scores in context.cached_scores_by_subset.items()
            for score in scores
        }
        kept: dict[str, list[Any]] = defaultdict(list)
        results: dict[str, list[tuple[Any, Any]]] = defaultdict(list)
        plan_path = self._plan_path(context.model_prediction_dir)
        while chosen := self._next_round():
            to_send = []
            for subset, key in chosen:
                if (subset, key) in cached:  # answered and reviewed in an earlier (interrupted) run
                    kept[subset].append(cached[(subset, key)])
                    self._scores[subset][key] = sample_result(cached[(subset, key)]).accuracy
                else:
                    if key in self._scores[subset]:  # errored before: asked again, its error row goes
                        self._benchmark.tally.forget_errors(subset, [key])
                    to_send.append(items[(subset, key)])
                self._attempts[subset][key] += 1
            logger.info('needle_haystack adaptive sweep: round of %d samples, %d to send', len(chosen), len(to_send))
            for subset, pairs in (self._run_round(context, to_send) if to_send else {}).items():
                results[subset].extend(pairs)
                for task_state, score in pairs:
                    self._scores[subset][task_state.sample_id] = (
                        None if score is None else sample_result(score).accuracy
                    )
            for subset, key in chosen:  # sent and errored (ignore_errors): spent, with no score
                self._scores[subset].setdefault(key, None)
            self._write_plan(plan_path)
        self._write_plan(plan_path)  # with why each subset stopped (the last next_round said so)
        context.cached_scores_by_subset = kept
        self._narrow_datasets()
        return results

    def _next_round(self) -> list[tuple[str, Hashable]]:
        chosen = []
        for subset, units in self._units.items():
            planned = next_round(units, self._scores[subset], self._settings, self._attempts[subset])
            if planned.stop is not None:
                self._stops[subset] = planned.stop
            by_key = {unit.key: unit for unit in units}
            if planned.keys:
                self._rounds[subset].append([_cell(by_key[key]) for key in planned.keys])
            chosen += [(subset, key) for key in planned.keys]
        return chosen

    def plan_entries(self) -> dict[str, dict[str, Any]]:
        return {
            subset: subset_plan([_cell(unit) for unit in units], self._rounds[subset], stop=self._stops[subset])
            for subset, units in self._units.items()
        }

    def _plan_path(self, prediction_dir: str) -> str:
        report_dir = report_dir_of(prediction_dir)
        os.makedirs(report_dir, exist_ok=True)
        return os.path.join(report_dir, OutputFiles(self._benchmark.name).sweep_plan)

    def _write_plan(self, path: str) -> None:
        entries = self.plan_entries()
        self._benchmark.tally.sweep_planned(entries)
        write_sweep_plan(path, entries, settings=dataclasses.asdict(self._settings))

    def _narrow_datasets(self) -> None:
        # EvalScope counts requested samples from the datasets: the samples the sweep chose, not the whole grid.
        for subset, dataset in list(self._datasets.items()):
            chosen = self._scores[subset]
            self._datasets[subset] = MemoryDataset([sample for sample in dataset if sample.id in chosen], name=subset)


def _unit(sample: Any) -> PlanUnit:
    meta = SampleMeta.from_dict(sample.metadata)
    return PlanUnit(sample.id, meta.context_length, meta.depth_percent)


def _cell(unit: PlanUnit) -> tuple[int, float]:
    return (unit.context_length, unit.depth_percent)


def _item_id(item: Any) -> Hashable:
    return item.sample.id if item.sample is not None else item.task_state.sample_id
