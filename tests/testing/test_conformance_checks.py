"""The shipped conformance checks (evalscope_niah.testing.conformance): ``check_task`` passes a task that conforms
and leaves the registry as it found it, names every miss of a weak rule on its own line, and refuses a task whose
name another class has; the development page's plugin example (RULER's variable tracking), built into a wheel and
installed with pip into a folder of its own, runs its own test, which calls ``check_task``, from the installed
wheel, with its entry point found by the registry. The Chinese page shows the same files."""

from __future__ import annotations

import ast
import base64
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
import tomllib

from evalscope_niah.tasks import task_names
from evalscope_niah.tasks.kit import RuleScore
from evalscope_niah.testing.conformance import check_task

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / 'docs'
EXAMPLE = re.compile(r'<!-- plugin-example: (?P<path>[\w./-]+) -->\n```(?:toml|python)\n(?P<text>.*?)```', re.DOTALL)


def plugin_files(language: str = 'en') -> dict[str, str]:
    """The plugin example's files, by path in its project, as the development page shows them."""
    text = (DOCS / language / 'development.md').read_text(encoding='utf-8')
    return {match['path']: match['text'] for match in EXAMPLE.finditer(text)}


def test_the_page_shows_the_three_files_in_both_languages() -> None:
    english, chinese = plugin_files('en'), plugin_files('zh')
    assert set(english) == {'pyproject.toml', 'vt_plugin/task.py', 'tests/test_variable_tracking.py'}
    assert set(chinese) == set(english)
    for path, text in english.items():  # the same code; only comments are translated
        if path.endswith('.py'):
            assert ast.dump(ast.parse(chinese[path])) == ast.dump(ast.parse(text)), path
        else:
            assert tomllib.loads(chinese[path]) == tomllib.loads(text), path


def _load_example_task(folder: Path) -> ModuleType:
    path = folder / 'vt_example_task.py'
    path.write_text(plugin_files()['vt_plugin/task.py'], encoding='utf-8')
    spec = importlib.util.spec_from_file_location('vt_example_task', path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look a class's module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope='module')
def example(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    module = _load_example_task(tmp_path_factory.mktemp('vt'))
    yield module
    sys.modules.pop(module.__name__, None)


def test_check_task_passes_a_conforming_task_and_leaves_the_registry_as_it_was(example: ModuleType) -> None:
    before = task_names()
    checked = check_task(example.VariableTracking)
    assert checked >= 2 * 2 * 3 * 2 * 6  # samples x the categories every sample gets, at least
    assert task_names() == before  # registered for the check, unregistered after


def test_check_task_names_every_miss_of_a_weak_rule(example: ModuleType) -> None:
    class Lenient(example.VariableTracking):
        """Passes any answer that names one variable of the chain: negations, dumps and name lists get through."""

        name = 'lenient_tracking'

        def check(self, answer, target):
            named = any(key in answer for key in target.answer_keys)
            return RuleScore(values={'acc': float(named)}, explanation='named one')

    with pytest.raises(AssertionError) as caught:
        check_task(Lenient)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("task 'lenient_tracking' misses ")
    missed = {line.split('-')[2] for line in lines[1:]}  # label: task-language-category-length-depth-repeat
    assert {'negation', 'dump', 'name list', 'partial', 'duplicated'} <= missed
    assert 'reference' not in missed and 'empty' not in missed
    assert 'lenient_tracking' not in task_names()


def test_check_task_refuses_a_name_another_class_has(example: ModuleType) -> None:
    class Impostor(example.VariableTracking):
        name = 'single'

    with pytest.raises(AssertionError, match="task name 'single' is registered by SingleNeedle, not"):
        check_task(Impostor)


# --- the example plugin from a wheel --------------------------------------------------------------------------------


def _build_wheel(project: Path, folder: Path) -> Path:
    """A wheel of ``project`` as the binary distribution format (PEP 427) lays it out: its packages, and a dist-info
    with METADATA, WHEEL, entry_points.txt and RECORD. Built here rather than by the project's build backend, which
    the test environment does not install and cannot download; pip installs it as it would any wheel."""
    meta = tomllib.loads((project / 'pyproject.toml').read_text(encoding='utf-8'))['project']
    name, version = meta['name'], meta['version']
    info = f'{name.replace("-", "_")}-{version}.dist-info'
    groups = meta.get('entry-points', {})
    packages = {value.split(':')[0].split('.')[0] for entries in groups.values() for value in entries.values()}
    files = {
        path.relative_to(project).as_posix(): path.read_bytes()
        for package in sorted(packages)
        for path in sorted((project / package).rglob('*.py'))
    }
    requires = ''.join(f'Requires-Dist: {requirement}\n' for requirement in meta.get('dependencies', []))
    files[f'{info}/METADATA'] = f'Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{requires}'.encode()
    files[f'{info}/WHEEL'] = (
        b'Wheel-Version: 1.0\nGenerator: evalscope-niah tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n'
    )
    entry_points = ''.join(
        f'[{group}]\n' + ''.join(f'{key} = {value}\n' for key, value in entries.items()) + '\n'
        for group, entries in groups.items()
    )
    files[f'{info}/entry_points.txt'] = entry_points.encode()
    record = [
        f'{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()},{len(data)}'
        for path, data in files.items()
    ]
    files[f'{info}/RECORD'] = ('\n'.join([*record, f'{info}/RECORD,,']) + '\n').encode()
    wheel = folder / f'{name.replace("-", "_")}-{version}-py3-none-any.whl'
    with zipfile.ZipFile(wheel, 'w', zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


@pytest.fixture(scope='session')
def installed_plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page's plugin project written out, built into a wheel and installed by pip into a folder of its own
    (once per session)."""
    project = tmp_path_factory.mktemp('vt-plugin')
    for path, text in plugin_files().items():
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(text, encoding='utf-8')
    (project / 'vt_plugin' / '__init__.py').write_text('', encoding='utf-8')
    wheel = _build_wheel(project, tmp_path_factory.mktemp('wheel'))
    target = tmp_path_factory.mktemp('site')
    pip = [sys.executable, '-m', 'pip', 'install', '--no-deps', '--no-index', '--no-compile', '--quiet']
    done = subprocess.run([*pip, '--target', str(target), str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return target


def test_the_example_plugin_installed_from_its_wheel_passes_its_own_conformance_test(
    installed_plugin: Path, tmp_path: Path
) -> None:
    # The plugin's tests, away from its sources: vt_plugin can only come from the installed wheel.
    tests = tmp_path / 'tests'
    tests.mkdir()
    (tests / 'test_variable_tracking.py').write_text(
        plugin_files()['tests/test_variable_tracking.py'], encoding='utf-8'
    )
    env = {key: value for key, value in os.environ.items() if key != 'EVALSCOPE_NIAH_LOAD_TASKS'}
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT), str(installed_plugin)])
    run = [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'tests']
    done = subprocess.run(run, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert '1 passed' in done.stdout
    probe = (
        'import json, vt_plugin; from evalscope_niah.tasks import plugin_tasks; '
        'print(json.dumps({"from": vt_plugin.__file__, "tasks": plugin_tasks()}))'
    )
    found = subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    imported = json.loads(found.stdout)
    assert imported['from'].startswith(str(installed_plugin))  # from the wheel's install
    where = "entry point 'variable_tracking' (vt_plugin.task:VariableTracking) of group 'evalscope_niah.tasks'"
    assert imported['tasks'] == {'variable_tracking': f'{where} in vt-plugin'}
