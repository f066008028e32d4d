"""The docs' generated sections (docs/hooks/generated_pages.py): what is committed between ``<!-- generated: NAME -->``
and ``<!-- /generated -->`` is what the code makes now, the FAQ's catalogue names every parameter an error is
raised for, the CLI reference lists every subcommand and flag, and the changelog names the versions the code has."""

from __future__ import annotations

import ast
import re
import runpy
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / 'docs'
PACKAGE = ROOT / 'evalscope_niah'
GENERATOR = runpy.run_path(str(DOCS / 'hooks' / 'generated_pages.py'))
LANGUAGES = ('en', 'zh')


def test_generated_sections_are_what_the_code_makes_now() -> None:
    drift = GENERATOR['drift']()
    shown = '\n'.join(diff[:6000] for diff in drift.values())
    assert not drift, f'generated docs sections are out of date; run `{GENERATOR["COMMAND"]}`\n{shown}'


def test_both_languages_have_the_same_generated_sections() -> None:
    pages = GENERATOR['pages']()
    assert {page.name for page in pages} >= {'faq.md', 'results-files.md', 'cli.md'}
    for page in pages:
        twin = DOCS / ('zh' if page.parent.name == 'en' else 'en') / page.name
        names = GENERATOR['SECTION'].findall(page.read_text(encoding='utf-8'))
        twin_names = GENERATOR['SECTION'].findall(twin.read_text(encoding='utf-8'))
        assert [match[1] for match in names] == [match[1] for match in twin_names], page.name


def test_regenerating_replaces_only_our_sections() -> None:
    page = 'before\n<!-- generated: cli-reference -->\nstale text\n<!-- /generated -->\nafter\n'
    fresh = GENERATOR['regenerate'](page, 'en')
    assert fresh.startswith('before\n<!-- generated: cli-reference -->\n\n### `evalscope-niah preview`')
    assert fresh.endswith('\n\n<!-- /generated -->\nafter\n') and 'stale text' not in fresh
    # Another generator's section (parameters_table.py's) is left to it.
    theirs = '<!-- generated: parameters -->\n\n| a table |\n\n<!-- /generated -->\n'
    assert GENERATOR['regenerate'](theirs, 'en') == theirs


@pytest.mark.parametrize('language', LANGUAGES)
def test_every_section_is_on_a_page(language: str) -> None:
    """A marker misspelt on a page would be skipped as another generator's: every section must be found."""
    names = {
        match[1]
        for page in (DOCS / language).glob('*.md')
        for match in GENERATOR['SECTION'].findall(page.read_text(encoding='utf-8'))
    }
    assert set(GENERATOR['SECTIONS']) <= names


def _config_error_params() -> dict[str, set[str]]:
    """parameter -> modules, for every NiahConfigError whose parameter the code writes as text (read independently of
    the generator: a plain walk for the calls)."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob('*.py'):
        if 'testing' in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
            if isinstance(node, ast.Call) and getattr(node.func, 'id', '') == 'NiahConfigError' and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    found.setdefault(first.value, set()).add(path.relative_to(PACKAGE).as_posix())
    return found


@pytest.mark.parametrize('language', LANGUAGES)
def test_the_faq_catalogue_covers_every_config_error(language: str) -> None:
    page = (DOCS / language / 'faq.md').read_text(encoding='utf-8')
    params = _config_error_params()
    assert len(params) > 30, 'the walk found too few errors to be reading the package'
    entries = {
        (line.split('`')[1], line.rsplit('(', 1)[1].rstrip(')')) for line in page.splitlines() if line[:3] == '- `'
    }
    for param, modules in params.items():
        for module in modules:
            assert (param, module) in entries, (param, module)


def test_the_catalogue_resolves_messages_built_elsewhere() -> None:
    """A message built by a helper (the work dir's busy message, the judge check's error from qualification.py) is
    shown as the helper words it, with the module's constants filled in, not as a call."""
    errors = GENERATOR['raised_errors']()
    busy = [error for error in errors if error.param == 'work_dir']
    assert busy and all('is writing into' in error.message for error in busy)
    # The judge check's stop: its message is qualification_error_message's (raised as JudgeCheckStop).
    judge = [error for error in errors if 'failed the judge check' in error.message]
    # Its ways out as the helper's default words them (TaskConfig's form; the CLI's is in the FAQ's own answer).
    assert len(judge) == 2 and all("score without it: judge_check='fallback'" in error.message for error in judge)
    faq = (ROOT / 'docs' / 'en' / 'faq.md').read_text(encoding='utf-8')
    assert 'judge_check' in faq and "'fallback'" in faq and 'strategy' in faq
    assert not [error for error in errors if '{_WAYS_OUT}' in error.message or '{_RULE}' in error.message]
    disk = [error for error in errors if error.kind == 'message' and error.param == 'disk_full']
    assert disk and 'free space, then resume with --use-cache' in disk[0].message
    assert GENERATOR['group_of'](disk[0].module) == 'disk'


def test_a_field_without_a_comment_is_refused(tmp_path: Path) -> None:
    module = tmp_path / 'record.py'
    module.write_text(
        'from dataclasses import dataclass\n\n\n@dataclass\nclass Row:\n'
        '    # said above\n    said: int\n    beside: str  # said beside\n    silent: float\n',
        encoding='utf-8',
    )
    with pytest.raises(ValueError, match=r'Row\.silent has no comment'):
        GENERATOR['field_meanings'](module, 'Row')
    module.write_text(module.read_text(encoding='utf-8').replace('silent: float', 'silent: float  # now said'))
    assert GENERATOR['field_meanings'](module, 'Row') == [
        ('said', 'int', 'said above'),
        ('beside', 'str', 'said beside'),
        ('silent', 'float', 'now said'),
    ]


@pytest.mark.parametrize('language', LANGUAGES)
def test_the_results_page_lists_every_field(language: str) -> None:
    from dataclasses import fields

    from evalscope_niah.reporting.result_files import CELL_CSV_COLUMNS
    from evalscope_niah.reporting.sample_record import SampleResult

    page = (DOCS / language / 'results-files.md').read_text(encoding='utf-8')
    for name in [field.name for field in fields(SampleResult)] + list(CELL_CSV_COLUMNS):
        assert f'| `{name}` |' in page, name
    # The example prompt is the demo corpus's needle in a real preview sample.
    assert 'Dolores Park' in page if language == 'en' else '上海人工智能实验室' in page
    assert 'characters of haystack' in page


@pytest.mark.parametrize('language', LANGUAGES)
def test_the_cli_reference_lists_every_subcommand_and_flag(language: str) -> None:
    import argparse

    page = (DOCS / language / 'cli.md').read_text(encoding='utf-8')
    subcommands = GENERATOR['subcommands']()
    assert {'preview', 'eval', 'plot', 'compare', 'demo', 'doctor'} <= set(subcommands)
    for name, (_, parser) in subcommands.items():
        section = page.split(f'### `evalscope-niah {name}`\n', 1)[1].split('\n### ', 1)[0]
        for action in parser._actions:
            if not isinstance(action, argparse._HelpAction):
                for flag in action.option_strings or [action.metavar or action.dest]:
                    assert f'`{flag}' in section, (name, flag)


@pytest.mark.parametrize('language', LANGUAGES)
def test_the_changelog_names_the_versions_of_the_code(language: str) -> None:
    changelog = (DOCS / language / 'changelog.md').read_text(encoding='utf-8')
    version = tomllib.loads((ROOT / 'pyproject.toml').read_text(encoding='utf-8'))['project']['version']
    registration = (PACKAGE / 'integration' / 'registration.py').read_text(encoding='utf-8')
    evaluation = re.search(r"^EVALUATION_VERSION = '(v[\d.]+)'", registration, flags=re.MULTILINE).group(1)
    assert f'`{version}`' in changelog
    assert f'{evaluation} (2026-' in changelog or f'{evaluation}（2026-' in changelog, evaluation
    # The parameter notes' 'before v4' leads here.
    assert '](changelog.md' in (DOCS / language / 'parameters.md').read_text(encoding='utf-8')


def test_every_help_says_what_the_command_does(capsys: pytest.CaptureFixture[str]) -> None:
    """`--help` opens with plain text (no reStructuredText quotes), and each subcommand's with what it does."""
    from evalscope_niah.cli import main

    with pytest.raises(SystemExit):
        main(['--help'])
    top = capsys.readouterr().out
    assert '``' not in top and 'evalscope-niah: preview samples' in top
    for name, (summary, _) in GENERATOR['subcommands']().items():
        if name == 'eval':  # its --help is EvalScope's own
            continue
        with pytest.raises(SystemExit):
            main([name, '--help'])
        opening = summary[0].upper() + summary[1:]
        assert opening[:40] in ' '.join(capsys.readouterr().out.split()), name
