"""A task in another installed package is found through the ``evalscope_niah.tasks`` entry-point group: a real
distribution (a dist-info directory with entry_points.txt) on sys.path of a fresh interpreter, no import of it by
the user; the switch EVALSCOPE_NIAH_LOAD_TASKS chooses which load; loading twice registers nothing twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalscope_niah.tasks import task_names

ROOT = Path(__file__).resolve().parents[2]

PLUGIN = """
from evalscope_niah.scoring import RuleScore
from evalscope_niah.tasks import NeedleChoice, ReportedValue, Task


class Beacon(Task):
    name = 'beacon'
    description = 'the colour of the beacon'
    reported_values = (ReportedValue('beacon_named', 'Beacon named'),)

    def choose(self, context, cell, *, seed):
        return NeedleChoice(needles=('The beacon is teal.',), question='What colour is the beacon?',
                            reference_answer='teal', answer_keys=('teal',))

    def rule_score(self, answer, meta, *, prompt=None):
        found = float('teal' in answer)
        return RuleScore(values={'acc': found, 'beacon_named': found}, explanation=str(found))


NOT_A_TASK = 'beacon'
"""

PROBE = """
import json
from evalscope_niah.tasks.compose import parameters
from evalscope_niah.tasks import task_names
from evalscope_niah.tasks.plugins import load_entry_point_tasks

again = load_entry_point_tasks()
print(json.dumps({'tasks': task_names(), 'again': again, 'task_help': parameters()['task'].description}))
"""


def _distribution(site: Path, entry_points: str) -> None:
    (site / 'beacon_task.py').write_text(PLUGIN, encoding='utf-8')
    info = site / 'beacon_task-1.0.dist-info'
    info.mkdir()
    (info / 'METADATA').write_text('Metadata-Version: 2.1\nName: beacon-task\nVersion: 1.0\n', encoding='utf-8')
    (info / 'entry_points.txt').write_text(textwrap.dedent(entry_points), encoding='utf-8')


def _run(site: Path, *, switch: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != 'EVALSCOPE_NIAH_LOAD_TASKS'}
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT), str(site)])
    if switch is not None:
        env['EVALSCOPE_NIAH_LOAD_TASKS'] = switch
    return subprocess.run([sys.executable, '-c', PROBE], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    _distribution(tmp_path, '[evalscope_niah.tasks]\nbeacon = beacon_task:Beacon\n')
    return tmp_path


def test_an_installed_task_is_found_without_an_import(site: Path) -> None:
    done = _run(site)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found['tasks'] == [*task_names(), 'beacon']  # after the built-in ones
    assert found['again'] == []  # idempotent: a second load registers nothing
    assert "'beacon': the colour of the beacon" in found['task_help']


@pytest.mark.parametrize('switch', ['', 'other'])
def test_the_switch_leaves_entry_points_out(site: Path, switch: str) -> None:
    done = _run(site, switch=switch)
    assert done.returncode == 0, done.stderr
    assert 'beacon' not in json.loads(done.stdout)['tasks']
    named = _run(site, switch='other, beacon')
    assert 'beacon' in json.loads(named.stdout)['tasks']


def test_a_broken_entry_point_names_itself_and_the_switch(tmp_path: Path) -> None:
    _distribution(tmp_path, '[evalscope_niah.tasks]\nbeacon = beacon_task:NOT_A_TASK\n')
    done = _run(tmp_path)
    assert done.returncode != 0
    assert "entry point 'beacon' (beacon_task:NOT_A_TASK) of group 'evalscope_niah.tasks' in beacon-task" in done.stderr
    assert 'register_task(MyTask) takes a Task subclass' in done.stderr
    assert 'EVALSCOPE_NIAH_LOAD_TASKS' in done.stderr
    assert _run(tmp_path, switch='').returncode == 0
