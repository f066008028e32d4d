"""The results-files page against the files a real run writes: two small runs through EvalScope against the test
server (a grid with controls, reasoning replies, replies with no final answer and a judge that cannot be reached;
an adaptive sweep) write every file, and every key those files hold is in the schema the page is generated from,
and every key of the schema is in some file. Also: every command the page shows runs as written."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import runpy
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip('evalscope')

from evalscope import TaskConfig, run_task

from evalscope_niah.integration import register
from evalscope_niah.reporting.outputs import OutputFiles
from evalscope_niah.testing.openai_server import OpenAICompatServer, make_judge_responder, needle_finder
from evalscope_niah.testing.responders import Reply
from evalscope_niah.testing.simulated import SimulatedModel
from tests.support.tasks import judge_block, task_settings

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = runpy.run_path(str(ROOT / 'docs' / 'hooks' / 'generated_pages.py'))
SCHEMA = GENERATOR['SCHEMA']
FILES = OutputFiles()
MODEL = 'model'


def _thinking_model(messages: list[dict]) -> str | Reply:
    """Reasons before it answers in English; in Chinese it never leaves its reasoning (no final answer)."""
    answer = needle_finder(messages)
    if re.search(r'[\u4e00-\u9fff]', messages[-1]['content'][:400]):
        return Reply(content=None, reasoning_content=f'让我想想。{answer}')
    return f'<think>The question asks for the best thing to do.</think>{answer}'


def _report_dir(work_dir: Path) -> Path:
    return work_dir / 'reports' / MODEL


@pytest.fixture(scope='module')
def runs(fixture_corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The report folders of a grid run (controls, a judge that cannot be reached, scored by rule instead) and of an
    adaptive sweep (graded by a judge that answers, unchecked)."""
    register()
    grid = tmp_path_factory.mktemp('grid')
    sweep = tmp_path_factory.mktemp('sweep')
    unreachable = {'models': [{'model_id': 'judge', 'api_url': 'http://127.0.0.1:9/v1', 'api_key': 'x'}]}
    responders = {
        MODEL: _thinking_model,
        'sim': SimulatedModel(limit=400, fall=100),
        'judge': make_judge_responder(lambda question, reference, answer: 10),
    }
    with OpenAICompatServer(responders) as server:
        extra = {
            'context_lengths': [300, 500],
            'document_depth_percents': [0, 100],
            'absent_control': True,
            'judge_check': 'fallback',
        }
        run_task(
            TaskConfig(**task_settings(server, fixture_corpus_dir, grid, model=MODEL, extra=extra, judge=unreachable))
        )
        adaptive = {
            'context_lengths': [300, 500, 700],
            'document_depth_percents': [0, 50, 100],
            'sweep': 'adaptive',
            'judge_check': 'off',
        }
        settings = task_settings(
            server,
            fixture_corpus_dir,
            sweep,
            model=MODEL,
            extra=adaptive,
            subsets=['english'],
            judge=judge_block(server, 'judge'),
        )
        run_task(TaskConfig(**{**settings, 'model': 'sim', 'model_id': MODEL}))
    return {'grid': _report_dir(grid), 'sweep': _report_dir(sweep)}


def _json(path: Path):
    return json.loads(path.read_text(encoding='utf-8'))


def _written(runs: dict[str, Path]) -> dict[str, list]:
    """schema name -> the parsed files of that kind the runs wrote."""
    found: dict[str, list] = {name: [] for name in SCHEMA.FILES}
    for report in runs.values():
        found['results'] += [json.loads(line) for line in (report / FILES.results).read_text('utf-8').splitlines()]
        found['summary'].append(_json(report / FILES.summary))
        found['progress'].append(_json(report / FILES.progress))
        for name, file in (('judge-check', FILES.judge_check), ('sweep-plan', FILES.sweep_plan)):
            if (report / file).is_file():
                found[name].append(_json(report / file))
    return found


@pytest.mark.parametrize('name', sorted(runpy.run_path(str(ROOT / 'docs' / 'hooks' / 'results_schema.py'))['FILES']))
def test_every_key_written_is_documented_and_every_documented_key_is_written(name: str, runs) -> None:
    schema = SCHEMA.FILES[name]()
    documented = {key.path for key in schema}
    files = _written(runs)[name]
    assert files, f'the runs wrote no {name} file'
    written = set().union(*(SCHEMA.written_keys(data, schema) for data in files))
    if name == 'results':  # one file of rows: each row is walked alone
        written = set().union(*(SCHEMA.written_keys(row, schema) for row in files))
    assert not written - documented, f'{name}: written but not on the page: {sorted(written - documented)}'
    assert not documented - written, f'{name}: on the page but written by neither run: {sorted(documented - written)}'


def test_the_progress_files_rows_are_results_rows(runs) -> None:
    documented = {key.path for key in SCHEMA.results_keys()}
    for report in runs.values():
        for row in _json(report / FILES.progress)['results']:
            assert set(row) <= documented, set(row) - documented


def test_the_cells_csv_header_is_the_documented_columns(runs) -> None:
    columns = [key.path for key in SCHEMA.cells_columns()]
    for report in runs.values():
        header = next(csv.reader(io.StringIO((report / FILES.cells).read_text('utf-8'))))
        assert header == columns


def test_the_opencompass_csv_has_the_columns_the_page_names(runs) -> None:
    page = (ROOT / 'docs' / 'en' / 'results-files.md').read_text('utf-8')
    section = page.split('## `needle_haystack_summary_opencompass_<subset>.csv`', 1)[1].split('\n## ', 1)[0]
    for report in runs.values():
        for path in report.glob(f'{FILES.opencompass_summary_prefix}_*.csv'):
            header = next(csv.reader(io.StringIO(path.read_text('utf-8'))))
            assert header[-1] == MODEL and all(f'`{column}`' in section for column in header[:-1])


def test_a_field_without_a_meaning_fails_the_page(tmp_path: Path) -> None:
    """A key added to a writer's dict without saying what it means stops the page from being generated."""
    module = tmp_path / 'writer.py'
    module.write_text(
        "def to_dict(self):\n    return {\n        'said': 1,  # said beside\n        'silent': 2,\n    }\n",
        encoding='utf-8',
    )
    with pytest.raises(ValueError, match="key 'silent' has no comment"):
        SCHEMA.dict_meanings(module, 'to_dict', 'said')


def _page_commands(page: Path) -> list[str]:
    text = page.read_text(encoding='utf-8')
    spans = re.findall(r'`(evalscope-niah [^`]*)`', text)
    return [span for span in spans if ' --' in span]  # a whole command line, not a subcommand named in prose


@pytest.mark.parametrize('language', ['en', 'zh'])
def test_every_command_on_the_results_page_runs(language: str, tmp_path: Path) -> None:
    if shutil.which('evalscope-niah') is None:
        pytest.skip('evalscope-niah is not on PATH (install the package)')
    commands = _page_commands(ROOT / 'docs' / language / 'results-files.md')
    assert commands, 'the page shows no command'
    env = {**os.environ, 'PYTHONPATH': str(ROOT), 'EVALSCOPE_NIAH_CACHE': str(tmp_path / 'cache')}
    for command in commands:
        done = subprocess.run(['bash', '-c', command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f'{command}\n{done.stderr[-2000:]}'
