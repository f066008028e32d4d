"""live.py: the progress a run reports (console line, progress file), when it writes its pages, the three states a
live page draws, and `evalscope-niah plot` on a work dir whose run has not finished."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from evalscope_niah.cli import main
from evalscope_niah.escaping import script_json
from evalscope_niah.reporting import live
from evalscope_niah.reporting.heatmap_live import LiveCell, LivePage, write_live_heatmap
from evalscope_niah.reporting.live import LiveRun, PlannedSample, RunProgress, find_unfinished_runs, read_progress
from evalscope_niah.reporting.outputs import OutputFiles
from evalscope_niah.reporting.page_text import ZH
from evalscope_niah.reporting.result_files import write_results
from evalscope_niah.reporting.sample_record import SampleResult

FILES = OutputFiles()
PLAN = tuple(PlannedSample('english', length, depth, length) for length in (1000, 2000) for depth in (0.0, 100.0))
PAGE = f'{FILES.heatmap_prefix}_english.html'


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _result(length: int, depth: float, *, error: str | None = None) -> SampleResult:
    return SampleResult(
        subset='english',
        context_length=length,
        depth_percent=depth,
        accuracy=None if error else 1.0,
        rule_recall=None if error else 1.0,
        levenshtein=None,
        judge_accuracy=None,
        judge_status='not_called',
        error=error,
        answer=None if error else 'the answer',
    )


def test_the_progress_line_counts_cells_samples_tokens_and_errors() -> None:
    progress = RunProgress(PLAN, (_result(1000, 0.0), _result(2000, 0.0, error='timeout')), 'running')
    assert progress.line() == (
        'needle_haystack (running): 2/4 cells done · 2/4 samples · 3k/6k prompt tokens sent · 1 error(s)'
    )
    assert RunProgress(PLAN, (), 'stopped').line(name='niah').startswith('niah (run stopped): 0/4 cells done')


def test_the_progress_line_names_the_tokenizer_that_counted_and_the_file_keeps_it() -> None:
    plan = tuple(dataclasses.replace(sample, tokenizer='Qwen/Qwen3-0.6B') for sample in PLAN)
    assert RunProgress(plan, (), 'running').line().endswith('0/6k prompt tokens sent (Qwen3)')
    assert [PlannedSample.from_dict(sample.to_dict()) for sample in plan] == list(plan)
    assert PlannedSample.from_dict({k: v for k, v in plan[0].to_dict().items() if k != 'tokenizer'}) == PLAN[0]


def test_a_cell_of_several_samples_is_done_when_all_have_finished() -> None:
    plan = (*PLAN, PLAN[0])  # two samples in the first cell
    progress = RunProgress(plan, (_result(1000, 0.0),), 'running')
    assert progress.cell_counts()[1] == 0
    assert progress.live_cells('english')[(1000, 0.0)] == LiveCell(planned=2, finished=1)


def test_a_live_page_draws_done_pending_and_untested_cells_distinctly(tmp_path: Path) -> None:
    from evalscope_niah.reporting.stats import summarize_cells

    cells = {
        (1000, 0.0): LiveCell(1, 1),
        (1000, 100.0): LiveCell(1, 0),
        (2000, 0.0): LiveCell(0, untested=True),
        (2000, 100.0): LiveCell(2, 1),
    }
    live = LivePage(cells=cells, status='running', line='line', data_src='data.live.js')
    done = summarize_cells([_result(1000, 0.0), _result(2000, 100.0)])
    write_live_heatmap(done, subset='english', path=tmp_path / 'page.html', live=live)
    page = (tmp_path / 'page.html').read_text('utf-8')
    assert '<td data-c="0-0" style="background:' in page and '>1.00</td>' in page
    assert page.count('class="p"') == 1 and page.count('class="nt"') == 1 and '>×</td>' in page
    assert 'class="pt"' in page  # one of its two samples finished: its score so far, marked partial
    assert '= not tested (left out by the sweep)' in page  # the legend names the states the page shows
    assert (tmp_path / 'data.live.js').read_text('utf-8').startswith('niahLive({"status":"running"')


def test_embedded_json_cannot_close_its_script_or_break_a_line() -> None:
    hostile = '</script><!--<script>&\u2028\u2029'
    text = script_json({'a': hostile})
    assert not any(char in text for char in '<>&\u2028\u2029')
    assert json.loads(text) == {'a': hostile}


def test_pages_are_written_at_most_every_few_seconds_and_when_the_last_sample_finishes(tmp_path: Path) -> None:
    clock = Clock()
    run = LiveRun(tmp_path, PLAN, files=FILES, clock=clock)
    run.update()  # at once: everything pending

    def finished() -> int:
        return len(read_progress(tmp_path / FILES.progress).results)

    assert finished() == 0 and (tmp_path / PAGE).is_file()
    run.add(_result(1000, 0.0))
    clock.now = 1.0
    run.update()
    assert finished() == 0  # too soon
    clock.now = 6.0
    run.update()
    assert finished() == 1
    for length, depth in ((1000, 100.0), (2000, 0.0), (2000, 100.0)):
        run.add(_result(length, depth))
    clock.now = 6.5
    run.update()
    assert finished() == 4  # the last one: written at once


def test_the_end_of_a_run_leaves_the_final_page_and_tells_open_pages(tmp_path: Path) -> None:
    run = LiveRun(tmp_path, PLAN, files=FILES, clock=Clock())
    run.update()
    (tmp_path / PAGE).write_text('the final page', encoding='utf-8')  # as write_run_outputs does before the end
    run.finish(complete=True)
    run.finish(complete=False)  # once only
    assert (tmp_path / PAGE).read_text('utf-8') == 'the final page'
    assert read_progress(tmp_path / FILES.progress).status == 'complete'
    assert '"status":"complete"' in (tmp_path / PAGE.replace('.html', '.live.js')).read_text('utf-8')


def test_the_end_of_a_complete_run_tells_open_pages_what_was_not_tested_and_the_effective_length(
    tmp_path: Path,
) -> None:
    run = LiveRun(tmp_path, PLAN, files=FILES, clock=Clock())
    for result in (_result(1000, 0.0), _result(1000, 100.0), _result(2000, 0.0, error='HTTP 500')):
        run.add(result)
    run.update()
    run.finish(complete=True, threshold=0.85, mode='absolute')
    data = json.loads(
        (tmp_path / PAGE.replace('.html', '.live.js')).read_text('utf-8').removeprefix('niahLive(').removesuffix(');\n')
    )
    assert data['status'] == 'complete'
    assert sorted(cell['c'] for cell in data['cells'].values()) == ['', '', 'e', 'nt']  # 2000 at depth 100: not sent
    assert data['sub'].endswith('· effective context length: at least 1k; 2k unknown: 1 server error')
    assert data['head'] == 'Needle in a haystack' and data['doc'] == f'{data["head"]} · {data["sub"]}'


def test_a_stopped_run_redraws_its_page_as_stopped(tmp_path: Path) -> None:
    run = LiveRun(tmp_path, PLAN, files=FILES, clock=Clock())
    run.add(_result(1000, 0.0))
    run.finish(complete=False)
    page = (tmp_path / PAGE).read_text('utf-8')
    assert 'run stopped' in page and page.count('class="p"') == 3
    assert '= pending' in page and 'not tested' not in page


def test_plot_draws_a_running_work_dir_over_an_older_runs_results(tmp_path: Path, capsys) -> None:
    report_dir = tmp_path / 'reports' / 'model'
    write_results(report_dir / FILES.results, [_result(length, 0.0, error='old run') for length in (1000, 2000)])
    run = LiveRun(report_dir, PLAN, files=FILES, clock=Clock())
    run.add(_result(2000, 100.0))
    run.update()
    (report_dir / PAGE).unlink()
    assert find_unfinished_runs(tmp_path) == [report_dir / FILES.progress]
    assert main(['plot', str(tmp_path)]) == 0
    drawn = capsys.readouterr().out.split()
    assert drawn == [str(report_dir / PAGE.replace('.html', '.png')), str(report_dir / PAGE)]
    page = (report_dir / PAGE).read_text('utf-8')
    assert page.count('class="p"') == 3 and '"src":null' in page and 'old run' not in page


def test_a_subset_with_nothing_finished_names_its_tokenizer_on_the_axis(tmp_path: Path, capsys) -> None:
    """Before any of its samples is done, the page and the PNG of a subset still say whose tokens the lengths are:
    the plan's tokenizer."""
    import matplotlib.image

    plan = tuple(dataclasses.replace(sample, tokenizer='Qwen/Qwen3-0.6B') for sample in PLAN)
    report_dir = tmp_path / 'reports' / 'model'
    LiveRun(report_dir, plan, files=FILES, clock=Clock()).update()
    assert 'Context length (Qwen3 tokens)' in (report_dir / PAGE).read_text('utf-8')
    assert main(['plot', str(tmp_path)]) == 0
    capsys.readouterr()
    assert 'Context length (Qwen3 tokens)' in (report_dir / PAGE).read_text('utf-8')
    assert matplotlib.image.imread(report_dir / PAGE.replace('.html', '.png')).shape[0] > 100


def test_plot_names_a_progress_file_it_cannot_read(tmp_path: Path, capsys) -> None:
    progress = tmp_path / 'reports' / 'model' / FILES.progress
    progress.parent.mkdir(parents=True)
    progress.write_text('{"format": 1, "status": "running", "planned": [', encoding='utf-8')
    assert main(['plot', str(tmp_path)]) == 1
    assert f'error: {progress}' in capsys.readouterr().err


def test_a_finished_run_is_drawn_from_its_results(tmp_path: Path) -> None:
    path = tmp_path / FILES.progress
    path.write_text(json.dumps(RunProgress(PLAN, (), 'complete').to_dict()), encoding='utf-8')
    assert find_unfinished_runs(tmp_path) == []


# ---- a progress file is input too: the results file's checks, the corpus files' file checks ------------------------


def _progress_text(planned: list[dict], status: str = 'running') -> str:
    return json.dumps({'format': 1, 'status': status, 'planned': planned, 'results': []})


def _planned(length: object, depth: object) -> dict:
    return {'subset': 'english', 'context_length': length, 'depth_percent': depth, 'tokens': 10}


@pytest.mark.parametrize(
    ('length', 'depth', 'problem'),
    [
        (1000, float('nan'), 'depth_percent must be in [0, 100], got nan'),
        (10**300, 50.0, 'context_length must be from 1 to'),
        (1e300, 50.0, 'context_length must be an int'),
        (True, 50.0, 'context_length must be an int'),
        (1000, 150.0, 'depth_percent must be in [0, 100]'),
    ],
    ids=['nan-depth', 'huge-length', 'float-length', 'bool-length', 'depth-over-100'],
)
def test_plot_refuses_a_progress_file_with_values_a_results_file_may_not_hold(
    length: object, depth: object, problem: str, tmp_path: Path, capsys
) -> None:
    progress = tmp_path / 'reports' / 'model' / FILES.progress
    progress.parent.mkdir(parents=True)
    progress.write_text(_progress_text([_planned(1000, 0.0), _planned(length, depth)]), encoding='utf-8')
    assert main(['plot', str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f'error: {progress}' in err and problem in err
    assert not list(progress.parent.glob('*.png'))  # nothing drawn


def test_plot_refuses_a_progress_grid_a_results_file_would_be_refused_for(tmp_path: Path, capsys) -> None:
    progress = tmp_path / 'reports' / 'model' / FILES.progress
    progress.parent.mkdir(parents=True)
    planned = [_planned(length, 50.0) for length in range(1000, 2001)]  # 1,001 lengths
    progress.write_text(_progress_text(planned), encoding='utf-8')
    assert main(['plot', str(tmp_path)]) == 1
    assert 'holds 1001 context lengths' in capsys.readouterr().err


def test_a_progress_file_over_its_size_cap_is_refused_unparsed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(live, 'MAX_PROGRESS_BYTES', 1000)  # the default (256 MiB) is the same check, larger
    path = tmp_path / FILES.progress
    path.write_text(_progress_text([_planned(1000, 0.0)] * 20), encoding='utf-8')
    with pytest.raises(ValueError, match=r'at most 1,000 are read'):
        read_progress(path)


def test_a_progress_file_that_is_a_fifo_or_points_out_is_named_not_read(tmp_path: Path, capsys) -> None:
    work = tmp_path / 'work' / 'reports' / 'model'
    work.mkdir(parents=True)
    os.mkfifo(work / FILES.progress)  # plot would wait for a writer forever
    assert main(['plot', str(tmp_path / 'work')]) == 1
    assert 'is not a regular file (a FIFO)' in capsys.readouterr().err
    (work / FILES.progress).unlink()
    outside = tmp_path / 'outside.json'
    outside.write_text(_progress_text([_planned(1000, 0.0)]), encoding='utf-8')
    (work / FILES.progress).symlink_to(outside)
    assert main(['plot', str(tmp_path / 'work')]) == 1
    assert 'a symlink pointing out' in capsys.readouterr().err


def test_the_chinese_subsets_live_page_is_chinese(tmp_path: Path) -> None:
    from evalscope_niah.reporting.stats import summarize_cells

    cells = {(1000, 0.0): LiveCell(1, 1), (1000, 100.0): LiveCell(1, 0), (2000, 0.0): LiveCell(0, untested=True)}
    progress = RunProgress(PLAN, (), 'running')
    live = LivePage(cells=cells, status='running', line=progress.line(text=ZH), data_src='data.live.js')
    done = summarize_cells([_result(1000, 0.0)])
    write_live_heatmap(done, subset='english', path=tmp_path / 'page.html', live=live, language='zh')
    page = (tmp_path / 'page.html').read_text('utf-8')
    assert '<html lang="zh-CN">' in page and '(运行中)' in page
    assert '= 等待中（已计划，尚未回答）' in page and '= 未测试（扫描时略过）' in page
    assert '点击单元格，在下方查看它的回答。' in page
    assert 'pending' not in page.replace("'running'", '') and 'Click a cell' not in page
