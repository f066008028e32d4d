"""The README's two set-up commands stay the ones that work: CI runs the test command word for word, then ruff;
the docs name every registered task and parameter; the docs' example task runs as written."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bash_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r'```bash\n(.*?)```', text, flags=re.DOTALL)]


def test_ci_runs_the_readme_test_command() -> None:
    setup = ROOT.joinpath('README.md').read_text(encoding='utf-8').split('## Set up', 1)[1].split('\n## ', 1)[0]
    main_command, test_command = _bash_blocks(setup)
    assert 'pytest' in test_command and 'pytest' not in main_command
    ci_lines = [line for line in ROOT.joinpath('.ci', 'run').read_text(encoding='utf-8').splitlines() if line]
    assert test_command in ci_lines
    # Lint after the tests: the test command installs ruff (the test extra); both its checks run.
    (lint,) = [line for line in ci_lines if 'ruff' in line and not line.startswith('#')]
    assert ci_lines.index(test_command) < ci_lines.index(lint)
    assert 'ruff check .' in lint and 'ruff format --check .' in lint


def test_main_command_names_existing_cli_commands() -> None:
    from evalscope_niah.cli import _parser

    setup = ROOT.joinpath('README.md').read_text(encoding='utf-8').split('## Set up', 1)[1]
    main_command = _bash_blocks(setup)[0]
    command = main_command.rsplit('evalscope-niah ', 1)[1].split()[0]
    subcommands = _parser()._subparsers._group_actions[0].choices
    assert command in subcommands


# --- the docs against the registry and the params model ---------------------------------------------------------------


@pytest.mark.parametrize('language', ['en', 'zh'])
def test_the_docs_name_every_registered_task_and_parameter(language: str) -> None:
    from tests.support.docs import missing_parameters, tasks_page, unnamed_tasks

    assert unnamed_tasks(tasks_page(language)) == []
    assert missing_parameters(_parameters_table(language)) == []


def test_the_docs_check_catches_a_missing_task_and_parameter(vault_registered: None) -> None:
    from tests.support.docs import missing_parameters, tasks_page, unnamed_tasks

    assert unnamed_tasks(tasks_page('en')) == []  # the page's list comes from the registry: a new task is on it
    assert unnamed_tasks(tasks_page('en', generated=False)) == ['vault_code']
    table = _parameters_table('en')
    assert missing_parameters(table) == []  # generated: the registered task's parameter has its row at once
    assert missing_parameters(table.replace('| `diff` |', '| diff |')) == ['diff']


def _parameters_table(language: str) -> str:
    import runpy

    return runpy.run_path(str(ROOT / 'docs' / 'hooks' / 'parameters_table.py'))['parameters_table'](language)


def _python_blocks(text: str) -> list[str]:
    return [block for block in re.findall(r'```python\n(.*?)```', text, flags=re.DOTALL)]


def test_the_development_example_task_registers_and_scores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The VaultCode block of the docs' Development page, run as written: a folder's task.py beside its vault.json."""
    import importlib.util
    import shutil

    from evalscope_niah.metadata import SampleMeta
    from evalscope_niah.tasks import ReportedValue, get_task, score_answer, unregister_task

    development = ROOT.joinpath('docs', 'en', 'development.md').read_text(encoding='utf-8')
    (block,) = [block for block in _python_blocks(development) if 'class VaultCode' in block]
    folder = tmp_path / 'readme_vault'
    folder.mkdir()
    folder.joinpath('task.py').write_text(block, encoding='utf-8')
    shutil.copy(ROOT / 'tests' / 'support' / 'vault_code' / 'vault.json', folder / 'vault.json')
    spec = importlib.util.spec_from_file_location('readme_vault_task', folder / 'task.py')
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses read their module's namespace
    try:
        spec.loader.exec_module(module)
        task = get_task('vault_code')
        assert type(task) is module.VaultCode
        assert task.reported_values == (ReportedValue('code_found', 'Code found'),)
        meta = SampleMeta(
            subset='s', language='en', task='vault_code', context_length=1, depth_percent=0.0, repeat=0, draw=0,
            needles=('N.',), question='Q?', reference_answer='N.', answer_keys=('482913',), start_token=0,
            divergence_token=0, task_data={'floor': 7},
        )  # fmt: skip
        assert score_answer('It is 482913.', meta).values == {'acc': 1.0, 'code_found': 1.0}
        assert '7' in task.judge_reference(meta)
    finally:
        unregister_task('vault_code')
