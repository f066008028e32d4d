"""The live pages of a run, as hooks of our adapter: the evaluator hands over the plan and each saved review, the
pages and progress lines follow (reporting/live.py draws them)."""

from __future__ import annotations

from typing import Any

from evalscope.api.dataset import Sample
from evalscope.api.metric import SampleScore

from ..metadata import SampleMeta
from ..reporting.live import LiveRun, PlannedSample
from ..reporting.outputs import OutputFiles
from ..tasks.compose import effective_length_mode
from .run_state import RunPlan, RunTally
from .score_rows import sample_result

__all__ = ['LivePages']


class LivePages:
    """Mixed into the adapter (which has ``name``): a sweep you can watch."""

    name: str
    params: Any  # the run's NiahParams (the adapter's)
    _plan: RunPlan  # the adapter's, set by load: the subsets' samplers
    _tally: RunTally  # the adapter's: holds the live pages and an adaptive sweep's plan

    def start_live(self, report_dir: str, samples: list[Sample], finished: list[SampleScore]) -> None:
        """The plan (every sample of the run, cached ones too) and the cached scores: the pages are written at once."""
        metas = [SampleMeta.from_dict(sample.metadata) for sample in samples]
        # A sample's prompt is built when it is sent: the tokenizer that will count it is its subset sampler's.
        counted_by = {name: sampler.tokenizer.name for name, sampler in self._plan.samplers.items()}
        planned = [
            PlannedSample(
                m.subset, m.context_length, m.depth_percent, m.context_length, tokenizer=counted_by.get(m.subset)
            )
            for m in metas
        ]
        self._tally.live_started(
            LiveRun(report_dir, planned, files=OutputFiles(self.name), languages=self.subset_languages())
        )
        self.sample_finished(*finished)

    def subset_languages(self) -> dict[str, str]:
        """Each loaded subset's language ('en', 'zh'): the language of its heatmaps' words."""
        return {name: sampler.subset.language for name, sampler in self._plan.samplers.items()}

    def page_options(self) -> dict[str, Any]:
        """What the final pages need of the run beyond its results (`write_run_outputs`): an adaptive sweep's plan
        (its untested cells drawn as such) and each subset's language."""
        return {'sweep_plan': self._tally.sweep_plan, 'languages': self.subset_languages()}

    def sample_finished(self, *sample_scores: SampleScore | None) -> None:
        """Samples' reviews are saved (in the run's main thread): the pages follow, when due."""
        live = self._tally.live
        if live is not None:
            for sample_score in filter(None, sample_scores):
                live.add(sample_result(sample_score))
            live.update()

    def finish_live(self, *, complete: bool) -> None:
        """The run is over: an open page ends as the final one does (the effective length judged as the run's)."""
        live = self._tally.live
        if live is not None:
            params = self.params
            threshold, mode = params.effective_length_threshold, effective_length_mode(params)
            live.finish(complete=complete, threshold=threshold, mode=mode)
