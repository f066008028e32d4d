"""The README's two set-up commands stay the ones that work: CI runs the test command word for word, then ruff."""

from __future__ import annotations

import re
from pathlib import Path

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
