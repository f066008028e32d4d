"""A sweep you can watch, through EvalScope's run_task against the test server: progress lines on the console from
the start to the end, live pages and a progress file while the run goes, and `evalscope-niah plot` on the work dir
mid-run drawing what has finished with the rest pending. The model's third request runs `plot` before it answers,
so the run is mid-way at that moment by construction, not by timing."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from evalscope_niah.reporting import live
from evalscope_niah.reporting.outputs import OutputFiles
from evalscope_niah.testing.openai_server import OpenAICompatServer, needle_finder
from tests.support.tasks import task_config

pytest.importorskip('evalscope')

from evalscope import run_task

from evalscope_niah.cli import main
from evalscope_niah.integration import register

MODEL = 'watched-model'
GRID = {'context_lengths': [600, 900], 'document_depth_percents': [0, 50, 100]}  # 6 cells, one sample each


class PlotsMidRun:
    """needle_finder that runs `evalscope-niah plot` on the work dir when the third request arrives."""

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self.requests = 0
        self.plot_rc: int | None = None
        self.page: str | None = None
        self.progress: dict | None = None

    def __call__(self, messages: list[dict]) -> str:
        self.requests += 1
        if self.requests == 3:
            report_dir = self.work_dir / 'reports' / MODEL
            self.progress = json.loads((report_dir / OutputFiles().progress).read_text('utf-8'))
            self.plot_rc = main(['plot', str(self.work_dir)])
            self.page = (report_dir / f'{OutputFiles().heatmap_prefix}_english.html').read_text('utf-8')
        return needle_finder(messages)


def test_a_run_logs_progress_and_plot_draws_it_mid_run(
    fixture_corpus_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    register()
    monkeypatch.setattr(live, 'WRITE_INTERVAL_S', 0.0)  # every finished sample is written (a run waits 5 s)
    work_dir = tmp_path / 'run'
    model = PlotsMidRun(work_dir)
    with OpenAICompatServer({MODEL: model}) as server, caplog.at_level(logging.INFO, logger='evalscope_niah'):
        config = task_config(server, fixture_corpus_dir, work_dir, model=MODEL, extra=GRID, eval_batch_size=1)
        config.dataset_args['needle_haystack']['subset_list'] = ['english']
        run_task(config)

    lines = [record.getMessage() for record in caplog.records if record.name == live.__name__]
    assert lines[0] == 'needle_haystack (running): 0/6 cells done · 0/6 samples · 0/4.5k prompt tokens sent (Qwen3)'
    assert (
        lines[-1]
        == 'needle_haystack (run complete): 6/6 cells done · 6/6 samples · 4.5k/4.5k prompt tokens sent (Qwen3)'
    )

    # Mid-run: two samples finished, four pending, and plot drew exactly that.
    assert model.plot_rc == 0
    assert model.progress['status'] == 'running' and len(model.progress['results']) == 2
    assert model.page.count('class="p"') == 4 and '(running): 2/6 cells done' in model.page
    assert 'O.src' in model.page  # the script is there, but plot's snapshot has no data file to re-read
    assert '"src":null' in model.page

    # After the run: the final page (no live script), and the data file tells an open live page the run is over.
    report_dir = work_dir / 'reports' / MODEL
    final = (report_dir / f'{OutputFiles().heatmap_prefix}_english.html').read_text('utf-8')
    assert 'niahLive' not in final and 'class="p"' not in final
    data = (report_dir / f'{OutputFiles().heatmap_prefix}_english.live.js').read_text('utf-8')
    assert data.startswith('niahLive({"status":"complete"')
    assert json.loads((report_dir / OutputFiles().progress).read_text('utf-8'))['status'] == 'complete'
