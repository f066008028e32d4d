"""A task in another installed package is found through the ``evalscope_niah.tasks`` entry-point group: a real
distribution (a dist-info directory with entry_points.txt) on sys.path of a fresh interpreter, no import of it by
the user; the switch EVALSCOPE_NIAH_LOAD_TASKS chooses which load; loading twice registers nothing twice. A plugin's
own module may be imported first; a broken plugin is skipped and named, never breaking EvalScope or its other
benchmarks; and this package's own suites hold with a third-party task installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalscope_niah.tasks import plugin_tasks, task_names

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
from evalscope_niah.errors import NiahConfigError
from evalscope_niah.tasks.compose import parameters
from evalscope_niah.tasks import failed_plugins, get_task, task_names
from evalscope_niah.tasks.plugins import load_entry_point_tasks

tasks = task_names()
again = load_entry_point_tasks()
try:
    get_task('beacon')
    asked = 'found'
except NiahConfigError as error:
    asked = str(error)
print(json.dumps({'tasks': tasks, 'again': again, 'task_help': parameters()['task'].description,
                  'failed': failed_plugins(), 'asked': asked}))
"""

# The plugin's own module first, as its tests do: it imports our package, which must not re-enter it half-made.
OWN_MODULE_FIRST = """
import json
import beacon_task
from evalscope_niah.tasks import get_task, task_names

print(json.dumps({'tasks': task_names(), 'class': type(get_task('beacon')) is beacon_task.Beacon}))
"""

# Plain EvalScope with a broken plugin installed: its registry, another benchmark and ours all still there.
EVALSCOPE_PROBE = """
import json
import evalscope
from evalscope.api.registry import get_benchmark
from evalscope_niah.integration import resolves_to_ours

print(json.dumps({'gsm8k': get_benchmark('gsm8k').name, 'niah': resolves_to_ours('niah')}))
"""


def _distribution(site: Path, entry_points: str) -> None:
    (site / 'beacon_task.py').write_text(PLUGIN, encoding='utf-8')
    info = site / 'beacon_task-1.0.dist-info'
    info.mkdir()
    (info / 'METADATA').write_text('Metadata-Version: 2.1\nName: beacon-task\nVersion: 1.0\n', encoding='utf-8')
    (info / 'entry_points.txt').write_text(textwrap.dedent(entry_points), encoding='utf-8')


def _env(site: Path, *, switch: str | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != 'EVALSCOPE_NIAH_LOAD_TASKS'}
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT), str(site)])
    if switch is not None:
        env['EVALSCOPE_NIAH_LOAD_TASKS'] = switch
    return env


def _run(site: Path, *, switch: str | None = None, code: str = PROBE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, '-c', code], capture_output=True, text=True, env=_env(site, switch=switch), timeout=300
    )


# This process's own tasks: a third-party task installed here too is in both lists, so it is left out of both.
OWN_TASKS = [name for name in task_names() if name not in plugin_tasks()]


@pytest.fixture
def site(tmp_path: Path) -> Path:
    _distribution(tmp_path, '[evalscope_niah.tasks]\nbeacon = beacon_task:Beacon\n')
    return tmp_path


def test_an_installed_task_is_found_without_an_import(site: Path) -> None:
    done = _run(site)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert [name for name in found['tasks'] if name in OWN_TASKS] == OWN_TASKS
    assert found['tasks'].index('beacon') > found['tasks'].index(OWN_TASKS[-1])  # after the built-in ones
    assert found['again'] == []  # idempotent: a second load registers nothing
    assert found['asked'] == 'found'
    assert "'beacon': the colour of the beacon" in found['task_help']


def test_the_plugins_own_module_can_be_imported_first(site: Path) -> None:
    done = _run(site, code=OWN_MODULE_FIRST)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert 'beacon' in found['tasks']
    assert found['class'] is True
    assert 'circular import' not in done.stderr


@pytest.mark.parametrize('switch', ['', 'other'])
def test_the_switch_leaves_entry_points_out(site: Path, switch: str) -> None:
    done = _run(site, switch=switch)
    assert done.returncode == 0, done.stderr
    assert 'beacon' not in json.loads(done.stdout)['tasks']
    named = _run(site, switch='other, beacon')
    assert 'beacon' in json.loads(named.stdout)['tasks']


@pytest.mark.parametrize(
    ('target', 'why'),
    [
        ('beacon_task:NOT_A_TASK', 'register_task(MyTask) takes a Task subclass'),
        ('beacon_task:Clash', "task 'single' is already registered by SingleNeedle"),
        ('missing_module:Beacon', "No module named 'missing_module'"),
    ],
)
def test_a_broken_plugin_is_skipped_and_named(tmp_path: Path, target: str, why: str) -> None:
    _distribution(tmp_path, f'[evalscope_niah.tasks]\nbeacon = {target}\n')
    with (tmp_path / 'beacon_task.py').open('a', encoding='utf-8') as module:
        module.write('\n\nclass Clash(Beacon):\n    name = "single"\n')
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert 'beacon' not in found['tasks']
    assert [name for name in found['tasks'] if name in OWN_TASKS] == OWN_TASKS  # the others all there
    where = f"entry point 'beacon' ({target}) of group 'evalscope_niah.tasks' in beacon-task"
    # Named three ways: a warning when skipped, failed_plugins() (doctor), the error of a run that asks for it.
    assert where in done.stderr and why in done.stderr
    assert where in found['failed']['beacon'] and 'EVALSCOPE_NIAH_LOAD_TASKS' in found['failed']['beacon']
    assert found['asked'].startswith("task: task 'beacon' is not available: " + where)
    assert _run(tmp_path, switch='').returncode == 0


def test_a_broken_plugin_leaves_evalscope_and_its_benchmarks_working(tmp_path: Path) -> None:
    _distribution(tmp_path, '[evalscope_niah.tasks]\nbeacon = beacon_task:NOT_A_TASK\n')
    with (tmp_path / 'beacon_task.py').open('a', encoding='utf-8') as module:
        module.write("\nraise RuntimeError('the plugin is broken at import')\n")
    done = _run(tmp_path, code=EVALSCOPE_PROBE)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {'gsm8k': 'gsm8k', 'niah': True}
    assert 'the plugin is broken at import' in done.stderr


def test_our_suites_hold_with_a_third_party_task_installed(site: Path) -> None:
    """The tests that read the registry, run in a fresh interpreter with the beacon plugin installed."""
    chosen = [
        'tests/tasks/test_registry.py',
        'tests/tasks/test_conformance.py::test_every_registered_task_is_in_the_suite',
        'tests/tasks/test_tasks.py',
        'tests/params/test_params.py',
    ]
    done = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', *chosen],
        capture_output=True,
        text=True,
        env=_env(site),
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:]


def test_doctor_names_a_loaded_and_a_broken_plugin(site: Path, tmp_path: Path) -> None:
    doctor = [sys.executable, '-m', 'evalscope_niah.cli', 'doctor', '--judge', '{"strategy": "rule"}']
    done = subprocess.run(doctor, capture_output=True, text=True, env=_env(site), timeout=300)
    assert 'ok       task plugins: beacon loaded' in done.stdout, done.stdout + done.stderr
    broken = tmp_path / 'broken'
    broken.mkdir()
    _distribution(broken, '[evalscope_niah.tasks]\nbeacon = beacon_task:NOT_A_TASK\n')
    done = subprocess.run(doctor, capture_output=True, text=True, env=_env(broken), timeout=300)
    assert done.returncode == 1
    assert "problem  task plugin beacon: entry point 'beacon' (beacon_task:NOT_A_TASK)" in done.stdout
    assert 'fix: fix or uninstall the package; or set EVALSCOPE_NIAH_LOAD_TASKS' in done.stdout
