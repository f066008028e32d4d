"""The README's two set-up commands stay the ones that work: CI runs the test command word for word, then ruff;
the docs name every registered task and parameter; the docs' example task runs as written."""

from __future__ import annotations

import re
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


def test_the_development_example_task_registers_and_scores(tmp_path: Path) -> None:
    """The Counting-Stars block of the docs' Development page, run as written (its own file, imported): it registers
    its task, which scores its counts in order (tests/tasks/test_kit.py runs the conformance table on it)."""
    from evalscope_niah.metadata import SampleMeta
    from evalscope_niah.tasks import get_task, score_answer, unregister_task
    from tests.support.docs import load_kit_example

    try:
        module = load_kit_example(tmp_path)
        task = get_task('counting_stars')
        assert type(task) is module.CountingStars
        assert (task.ordered_answer, task.partial_credit) == (True, True)
        meta = SampleMeta(
            subset='s', language='en', task='counting_stars', context_length=1, depth_percent=0.0, repeat=0, pick=0,
            needles=tuple(f'The little penguin counted {count} stars.' for count in ('12', '34', '56', '78')),
            question='How many?', reference_answer='12, 34, 56, 78', answer_keys=('12', '34', '56', '78'),
            start_token=0, divergence_token=0,
        )  # fmt: skip
        assert score_answer('12, 34, 56, 78', meta).accuracy == 1.0
        assert score_answer('78, 56, 34, 12', meta).accuracy == 0.0
        assert score_answer('12, 34', meta).accuracy == 0.5
    finally:
        unregister_task('counting_stars')
