"""A task in another installed package is found through the ``evalscope_niah.tasks`` entry-point group: a real
distribution (a dist-info directory with entry_points.txt) on sys.path of a fresh interpreter, no import of it by
the user; the switch EVALSCOPE_NIAH_LOAD_TASKS chooses which load; loading twice registers nothing twice; the entry
points are read once in a whole run. A plugin's own module may be imported first; a broken plugin is skipped and
named, never breaking EvalScope or its other benchmarks; two plugins claiming one name are both refused; and this
package's own suites hold with a third-party task installed.

The hostile plugins (tests/tasks/test_plugins.py is their suite): imports that call sys.exit(3), raise
KeyboardInterrupt, hang, print to stdout, or import something heavy. None is imported by ``import evalscope``; a
run of a built-in task and ``preview`` (pure JSONL on stdout) work with all of them installed; ``doctor`` names
each broken one with its reason; a run asking for one's task is refused with that reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalscope_niah.tasks import task_names, without_plugins

ROOT = Path(__file__).resolve().parents[2]
# A hanging plugin's import is given this long: enough for the others on a busy machine, short for the suite.
IMPORT_TIMEOUT_S = '3'

TASK_MODULE = """
from pydantic import Field

from evalscope_niah.tasks.kit import NeedleChoice, ReportedValue, RuleScore, Task, register_task
from evalscope_niah.tasks.kit import TaskParams


class {cls}Params(TaskParams):
    {name}_colour: str = Field('teal', description='the colour', json_schema_extra={{'description_zh': '颜色'}})


class {cls}(Task):
    name = {name!r}
    description = 'the colour of the {name}'
    params_model = {cls}Params  # a parameter of its own: the docs' tables must list only what ships
    reported_values = (ReportedValue('{name}_named', 'Named'),)

    def choose(self, context, cell, *, seed):
        return NeedleChoice(needles=('The {name} is teal.',), question='What colour is the {name}?',
                            reference_answer='teal', answer_keys=('teal',))

    def rule_score(self, answer, meta, *, prompt=None):
        found = float('teal' in answer)
        return RuleScore(values={{'acc': found, '{name}_named': found}}, explanation=str(found))


register_task({cls})  # as the docs' example ends; the loader registers the entry point's class either way
NOT_A_TASK = {name!r}
"""

# What each hostile plugin's module does at import, before its task class is defined.
HOSTILE = {
    'exits': 'import sys\nsys.exit(3)\n',
    'interrupts': 'raise KeyboardInterrupt\n',
    'hangs': 'import threading\nthreading.Event().wait()  # never set: the import never ends\n',
    'loud': "import sys\nprint('loud plugin says hello')\nprint('loud plugin on stderr', file=sys.stderr)\n",
    # It also looks tasks up while it is being loaded: the loader must neither deadlock nor load it twice.
    'heavy': (
        'import heavy_dependency  # stands for a framework that takes seconds to import\n'
        'from evalscope_niah.tasks import get_task, task_names\n'
        "assert 'single' in task_names() and get_task('single').name == 'single'\n"
    ),
}
# The reason doctor and a run give for each broken one.
REASONS = {
    'exits': 'its import called sys.exit(3) (SystemExit)',
    'interrupts': 'its import raised KeyboardInterrupt',
    'hangs': f'its import did not finish within {IMPORT_TIMEOUT_S} s',
}
WORKING = ('loud', 'heavy')


def _distribution(site: Path, name: str, entry_points: str, *, prelude: str = '', package: str | None = None) -> None:
    """An installed distribution ``package`` (default: ``<name>-task``) whose module ``<name>_task`` defines a task
    ``name`` after running ``prelude``."""
    cls = name.title().replace('_', '')
    (site / f'{name}_task.py').write_text(prelude + TASK_MODULE.format(cls=cls, name=name), encoding='utf-8')
    package = package or f'{name}-task'
    info = site / f'{package.replace("-", "_")}-1.0.dist-info'
    info.mkdir()
    (info / 'METADATA').write_text(f'Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n', encoding='utf-8')
    (info / 'entry_points.txt').write_text(textwrap.dedent(entry_points), encoding='utf-8')


def _env(*sites: Path, switch: str | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != 'EVALSCOPE_NIAH_LOAD_TASKS'}
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT), *map(str, sites)])
    env['EVALSCOPE_NIAH_PLUGIN_TIMEOUT'] = IMPORT_TIMEOUT_S
    if switch is not None:
        env['EVALSCOPE_NIAH_LOAD_TASKS'] = switch
    return env


def _python(code: str, *sites: Path, switch: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, '-c', code], capture_output=True, text=True, env=_env(*sites, switch=switch), timeout=300
    )


def _cli(*args: str, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, '-m', 'evalscope_niah.cli', *args], capture_output=True, text=True, env=_env(site), timeout=300
    )


PROBE = """
import json
from evalscope_niah.errors import NiahConfigError
from evalscope_niah.tasks.compose import parameters
from evalscope_niah.tasks import failed_plugins, get_task, task_names
from evalscope_niah.tasks.plugins import load_entry_point_tasks

tasks = task_names()
again = load_entry_point_tasks(rescan=True)
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

# This process's own tasks (built-in, and none a plugin brought).
with without_plugins():
    OWN_TASKS = list(task_names())


@pytest.fixture
def site(tmp_path: Path) -> Path:
    _distribution(tmp_path, 'beacon', '[evalscope_niah.tasks]\nbeacon = beacon_task:Beacon\n')
    return tmp_path


@pytest.fixture(scope='module')
def hostile_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every hostile plugin installed at once, each its own distribution."""
    site = tmp_path_factory.mktemp('hostile')
    for name, prelude in HOSTILE.items():
        _distribution(site, name, f'[evalscope_niah.tasks]\n{name} = {name}_task:{name.title()}\n', prelude=prelude)
    (site / 'heavy_dependency.py').write_text('LOADED = True\n', encoding='utf-8')
    return site


def test_an_installed_task_is_found_without_an_import(site: Path) -> None:
    done = _python(PROBE, site)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert [name for name in found['tasks'] if name in OWN_TASKS] == OWN_TASKS
    assert found['tasks'].index('beacon') > found['tasks'].index(OWN_TASKS[-1])  # after the built-in ones
    assert found['again'] == []  # idempotent: reading the entry points again registers nothing twice
    assert found['asked'] == 'found'
    assert "'beacon': the colour of the beacon" in found['task_help']


def test_the_plugins_own_module_can_be_imported_first(site: Path) -> None:
    done = _python(OWN_MODULE_FIRST, site)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert 'beacon' in found['tasks']
    assert found['class'] is True
    assert 'circular import' not in done.stderr


@pytest.mark.parametrize('switch', ['', 'other'])
def test_the_switch_leaves_entry_points_out(site: Path, switch: str) -> None:
    done = _python(PROBE, site, switch=switch)
    assert done.returncode == 0, done.stderr
    assert 'beacon' not in json.loads(done.stdout)['tasks']
    named = _python(PROBE, site, switch='other, beacon')
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
    _distribution(tmp_path, 'beacon', f'[evalscope_niah.tasks]\nbeacon = {target}\n')
    with (tmp_path / 'beacon_task.py').open('a', encoding='utf-8') as module:
        module.write('\n\nclass Clash(Beacon):\n    name = "single"\n')
    done = _python(PROBE, tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert 'beacon' not in found['tasks']
    assert [name for name in found['tasks'] if name in OWN_TASKS] == OWN_TASKS  # the others all there
    where = f"entry point 'beacon' ({target}) of group 'evalscope_niah.tasks' in beacon-task"
    # Named three ways: a warning when skipped, failed_plugins() (doctor), the error of a run that asks for it.
    assert where in done.stderr and why in done.stderr
    (failed,) = found['failed'].values()
    assert where in failed and why in failed and 'EVALSCOPE_NIAH_LOAD_TASKS' in failed
    assert found['asked'].startswith("task: task 'beacon' is not available: " + where)
    assert _python(PROBE, tmp_path, switch='').returncode == 0


# --- two plugins, one name ------------------------------------------------------------------------------------------


@pytest.fixture
def clashing_site(tmp_path: Path) -> Path:
    """Two distributions whose entry points both bring a task named 'beacon' (other modules, other classes)."""
    _distribution(tmp_path, 'beacon', '[evalscope_niah.tasks]\nbeacon = beacon_task:Beacon\n')
    other = tmp_path / 'other'
    other.mkdir()
    (other / 'lighthouse_task.py').write_text(
        (tmp_path / 'beacon_task.py').read_text(encoding='utf-8').replace('Beacon', 'Lighthouse'),
        encoding='utf-8',
    )
    info = other / 'lighthouse_task-2.0.dist-info'
    info.mkdir()
    (info / 'METADATA').write_text('Metadata-Version: 2.1\nName: lighthouse-task\nVersion: 2.0\n', encoding='utf-8')
    (info / 'entry_points.txt').write_text(
        '[evalscope_niah.tasks]\nbeacon = lighthouse_task:Lighthouse\n', encoding='utf-8'
    )
    return tmp_path


@pytest.mark.parametrize('first', ['', 'import beacon_task  # its own module first: it registers itself\n'])
def test_two_plugins_claiming_one_name_are_both_refused(clashing_site: Path, first: str) -> None:
    done = _python(first + PROBE, clashing_site, clashing_site / 'other')
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert 'beacon' not in found['tasks']
    first = "entry point 'beacon' (beacon_task:Beacon) of group 'evalscope_niah.tasks' in beacon-task"
    second = "entry point 'beacon' (lighthouse_task:Lighthouse) of group 'evalscope_niah.tasks' in lighthouse-task"
    # Each refusal names both: itself, and the other one claiming the name.
    assert sorted(found['failed']) == ['beacon (beacon-task)', 'beacon (lighthouse-task)']
    for why in found['failed'].values():
        assert first in why and second in why and 'both are refused' in why
    assert first in found['asked'] and second in found['asked']


def test_doctor_lists_a_refused_pair_only_as_problems(clashing_site: Path) -> None:
    env = _env(clashing_site, clashing_site / 'other')
    done = subprocess.run(
        [sys.executable, '-m', 'evalscope_niah.cli', 'doctor', '--judge', '{"strategy": "rule"}'],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    lines = _doctor_lines(done.stdout)
    assert done.returncode == 1, done.stdout + done.stderr
    assert 'task plugins' not in lines  # no "ok ... loaded" beside the problems
    for package in ('beacon-task', 'lighthouse-task'):
        state, detail = lines[f'task plugin beacon ({package})']
        assert state == 'problem' and "task name 'beacon' is claimed by another installed plugin too" in detail


def _doctor_lines(stdout: str) -> dict[str, tuple[str, str]]:
    """doctor's checks by name: (state, detail)."""
    found = {}
    for line in stdout.splitlines():
        state, _, rest = line.partition(' ')
        if state in ('ok', 'problem', 'skipped'):
            name, _, detail = rest.strip().partition(': ')
            found[name] = (state, detail)
    return found


def test_doctor_names_a_loaded_and_a_broken_plugin(site: Path, tmp_path: Path) -> None:
    doctor = ('doctor', '--judge', '{"strategy": "rule"}')
    done = _cli(*doctor, site=site)
    assert _doctor_lines(done.stdout)['task plugins'] == ('ok', 'beacon (beacon-task) loaded'), done.stdout
    broken = tmp_path / 'broken'
    broken.mkdir()
    _distribution(broken, 'beacon', '[evalscope_niah.tasks]\nbeacon = beacon_task:NOT_A_TASK\n')
    done = _cli(*doctor, site=broken)
    assert done.returncode == 1
    state, detail = _doctor_lines(done.stdout)['task plugin beacon (beacon-task)']
    assert state == 'problem'
    assert detail.startswith("entry point 'beacon' (beacon_task:NOT_A_TASK)")
    assert 'fix: fix or uninstall the package; or set EVALSCOPE_NIAH_LOAD_TASKS' in done.stdout


# --- hostile plugins ------------------------------------------------------------------------------------------------

# Plain EvalScope with every hostile plugin installed: no plugin imported, no entry point read, its registry, another
# benchmark and ours all there.
IMPORT_EVALSCOPE = """
import importlib.metadata, json, sys
scans = []
read = importlib.metadata.entry_points
def counted(**kwargs):
    scans.append(kwargs.get('group'))
    return read(**kwargs)
importlib.metadata.entry_points = counted

import evalscope
from evalscope.api.registry import get_benchmark
from evalscope_niah.integration import resolves_to_ours

hostile = [name for name in sys.modules if name.endswith('_task') or name == 'heavy_dependency']
print(json.dumps({'gsm8k': get_benchmark('gsm8k').name, 'ours': [resolves_to_ours('niah'),
    resolves_to_ours('needle_haystack')], 'imported': hostile, 'scans': scans.count('evalscope_niah.tasks')}))
"""


def test_import_evalscope_imports_no_plugin(hostile_site: Path) -> None:
    done = _python(IMPORT_EVALSCOPE, hostile_site)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)  # stdout holds our line only: no plugin printed into it
    assert found == {'gsm8k': 'gsm8k', 'ours': [True, True], 'imported': [], 'scans': 0}


def test_doctor_names_each_hostile_plugin_with_its_reason(hostile_site: Path) -> None:
    done = _cli('doctor', '--judge', '{"strategy": "rule"}', site=hostile_site)
    lines = _doctor_lines(done.stdout)
    assert done.returncode == 1, done.stdout + done.stderr
    state, loaded = lines['task plugins']
    assert state == 'ok'
    assert {'loud (loud-task)', 'heavy (heavy-task)'} <= set(loaded.removesuffix(' loaded').split(', '))
    for name, reason in REASONS.items():
        state, detail = lines[f'task plugin {name} ({name}-task)']
        assert state == 'problem' and reason in detail, (name, detail)
    assert lines['--datasets niah'][0] == 'ok'
    assert 'loud plugin' not in done.stdout + done.stderr  # captured at import, shown nowhere


def test_preview_stdout_stays_jsonl_with_hostile_plugins(hostile_site: Path, fixture_corpus_dir: Path) -> None:
    dataset_args = {'local_path': str(fixture_corpus_dir), 'extra_params': {'context_lengths': [600]}}
    done = _cli('preview', '--dataset-args', json.dumps(dataset_args), '--limit', '2', site=hostile_site)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]  # every line a sample: nothing printed between
    assert rows and {row['task'] for row in rows} == {'single'}
    assert 'loud plugin' not in done.stdout + done.stderr


# A run (run_task, refused before any request: the api_url is never called) and parse_params for each broken task.
ASK_BROKEN = """
import json, sys
from evalscope import TaskConfig, run_task
from evalscope_niah.errors import NiahConfigError
from evalscope_niah.tasks.compose import parse_params

refused = {}
try:
    run_task(TaskConfig(model='m', api_url='http://127.0.0.1:9/v1', api_key='x', eval_type='openai_api',
        datasets=['niah'], dataset_args={'niah': {'extra_params': {'task': 'exits'}}}, judge={'strategy': 'rule'},
        work_dir=sys.argv[1], no_timestamp=True))
    refused['run'] = 'ran'
except BaseException as error:
    refused['run'] = f'{type(error).__name__}: {error}'
for name in sys.argv[2:]:
    try:
        parse_params({'task': name})
        refused[name] = 'accepted'
    except NiahConfigError as error:
        refused[name] = str(error)
try:  # with the broken plugin's own parameter too: its reason, not 'unknown parameter'
    parse_params({'task': 'hangs', 'hangs_colour': 'red'})
except NiahConfigError as error:
    refused['with its parameter'] = str(error)
print(json.dumps(refused))
"""


def test_a_run_asking_for_a_hostile_plugins_task_is_refused_with_its_reason(hostile_site: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, '-c', ASK_BROKEN, str(tmp_path), *REASONS, *WORKING],
        capture_output=True,
        text=True,
        env=_env(hostile_site),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    refused = json.loads(done.stdout.strip().splitlines()[-1])
    assert refused['run'].startswith('NiahConfigError: task: ') and REASONS['exits'] in refused['run'], refused['run']
    for name, reason in REASONS.items():
        assert refused[name].startswith(f'task: task {name!r} is not available: entry point {name!r}'), refused[name]
        assert reason in refused[name]
    assert all(refused[name] == 'accepted' for name in WORKING)
    assert refused['with its parameter'] == refused['hangs']


def test_a_wrong_import_timeout_is_refused_naming_the_switch(site: Path) -> None:
    env = {**_env(site), 'EVALSCOPE_NIAH_PLUGIN_TIMEOUT': 'soon'}
    done = subprocess.run([sys.executable, '-c', PROBE], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode != 0
    assert (
        'EVALSCOPE_NIAH_PLUGIN_TIMEOUT: must be the seconds a task plugin may take to import, more than 0 and at most '
        "3600 (got 'soon')"
    ) in done.stderr


# --- one read of the entry points per run ---------------------------------------------------------------------------

# A whole run through the test server, counting every read of our entry-point group.
COUNTED_RUN = """
import importlib.metadata, json, sys
from pathlib import Path
scans = []
read = importlib.metadata.entry_points
def counted(**kwargs):
    scans.append(kwargs.get('group'))
    return read(**kwargs)
importlib.metadata.entry_points = counted

from evalscope import TaskConfig, run_task
from evalscope_niah.reporting.outputs import RESULTS_FILE
from evalscope_niah.reporting.result_files import read_results
from evalscope_niah.testing.openai_server import OpenAICompatServer
from tests.support.tasks import task_settings

corpus, work = Path(sys.argv[1]), Path(sys.argv[2])
grid = {'task': 'beacon', 'context_lengths': [600, 700], 'document_depth_percents': [0, 50, 100]}
with OpenAICompatServer({'m': lambda messages: 'teal'}) as server:
    run_task(TaskConfig(**task_settings(server, corpus, work, model='m', extra=grid, subsets=['english'])))
rows = read_results(next(work.rglob(RESULTS_FILE)))
print(json.dumps({'scans': scans.count('evalscope_niah.tasks'), 'rows': len(rows),
                  'accuracy': [row.accuracy for row in rows]}))
"""


def test_a_whole_run_reads_the_entry_points_once(site: Path, fixture_corpus_dir: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, '-c', COUNTED_RUN, str(fixture_corpus_dir), str(tmp_path / 'run')],
        capture_output=True,
        text=True,
        env=_env(site),
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    # Six samples of the plugin's task, each looked up many times: one read of the installed packages in all.
    assert found == {'scans': 1, 'rows': 6, 'accuracy': [1.0] * 6}


# --- this package's own suites with a plugin installed --------------------------------------------------------------


def test_our_suites_hold_with_a_third_party_task_installed(site: Path) -> None:
    """The tests that read the registry, the plugin report or the generated docs, run in a fresh interpreter with
    the beacon plugin installed."""
    chosen = [
        'tests/tasks/test_registry.py',
        'tests/tasks/test_conformance.py::test_every_registered_task_is_in_the_suite',
        'tests/tasks/test_tasks.py',
        'tests/params/test_params.py',
        'tests/test_docs.py::test_generated_text_is_committed_as_the_code_makes_it',
        'tests/test_docs.py::test_parameters_table_lists_every_parameter',
        'tests/test_docs.py::test_every_parameter_has_a_chinese_description',
        'tests/test_readme.py::test_the_docs_name_every_registered_task_and_parameter',
        'tests/test_readme.py::test_the_docs_check_catches_a_missing_task_and_parameter',
        'tests/testing/test_conformance_checks.py::test_check_task_passes_a_conforming_task_and_leaves_the_registry_as_it_was',
        'tests/tasks/test_plugins.py::test_an_installed_task_is_found_without_an_import',
    ]
    done = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-x', '-n', '0', '-p', 'no:cacheprovider', *chosen],
        capture_output=True,
        text=True,
        env=_env(site),
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:]


def test_a_plugin_that_hung_once_is_not_waited_for_again(tmp_path: Path) -> None:
    """A hang costs one process its timeout: the next ones refuse the plugin at once (its import is not even started),
    naming the earlier run, until they allow it more seconds than it hung in."""
    site = tmp_path / 'site'
    site.mkdir()
    started = tmp_path / 'import-started'
    prelude = (
        f'open({str(started)!r}, "a").write("started\\n")\n'
        'import threading\nthreading.Event().wait()  # never set: the import never ends\n'
    )
    _distribution(site, 'stalls', '[evalscope_niah.tasks]\nstalls = stalls_task:Stalls\n', prelude=prelude)
    code = 'import json\nfrom evalscope_niah.tasks import failed_plugins\nprint(json.dumps(failed_plugins()))'
    env = {**_env(site), 'EVALSCOPE_NIAH_CACHE': str(tmp_path / 'cache')}

    def failure(timeout: str) -> str:
        done = subprocess.run(
            [sys.executable, '-c', code],
            capture_output=True,
            text=True,
            env={**env, 'EVALSCOPE_NIAH_PLUGIN_TIMEOUT': timeout},
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)['stalls (stalls-task)']

    first = failure(IMPORT_TIMEOUT_S)
    assert f'its import did not finish within {IMPORT_TIMEOUT_S} s (it may hang' in first
    assert started.read_text() == 'started\n'
    again = failure(IMPORT_TIMEOUT_S)
    assert f'its import did not finish within {IMPORT_TIMEOUT_S} s in a run at ' in again
    assert 'EVALSCOPE_NIAH_PLUGIN_TIMEOUT allows more seconds' in again
    assert started.read_text() == 'started\n'  # not imported again
    longer = failure('4')
    assert 'its import did not finish within 4 s (it may hang' in longer
    assert started.read_text() == 'started\nstarted\n'  # more seconds allowed: tried again
