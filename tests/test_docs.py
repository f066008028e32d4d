"""The docs site (docs/en, docs/zh, mkdocs.yml): it builds strictly (a broken link, anchor or missing page fails),
its parameter tables list every parameter in both languages and are committed as the code makes them, every Chinese
description names a real parameter, and every command block marked runnable runs."""

from __future__ import annotations

import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from mkdocs.utils.yaml import yaml_load  # reads mkdocs.yml's !ENV and !!python tags

from evalscope_niah.tasks import without_plugins
from evalscope_niah.tasks.compose import parameters
from tests.support.docs import where_paths

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / 'docs'
HOOK = runpy.run_path(str(DOCS / 'hooks' / 'parameters_table.py'))
# A bash block is run by the tests when the line before it is this marker; the others are examples needing a model.
RUNNABLE = '<!-- runnable -->'
LANGUAGES = ('en', 'zh')


def _runnable_blocks() -> list[tuple[str, str]]:
    found = []
    for page in sorted(DOCS.glob('*/*.md')):
        text = page.read_text(encoding='utf-8')
        for block in re.findall(re.escape(RUNNABLE) + r'\n```bash\n(.*?)```', text, flags=re.DOTALL):
            found.append((str(page.relative_to(ROOT)), block))
    return found


def test_every_parameter_has_a_chinese_description() -> None:
    zh = HOOK['zh_descriptions']()
    names = set(parameters())
    assert not names - set(zh), f'no Chinese description: {sorted(names - set(zh))}'
    table = HOOK['table_zh_descriptions']()
    assert not set(table) - names, f'Chinese descriptions of no parameter: {sorted(set(table) - names)}'
    assert all(text.strip() for text in zh.values())


def test_a_task_brings_its_own_chinese(vault_registered: None) -> None:
    """A task registered from its folder needs no edit of the docs: its parameters' Chinese come from their fields,
    its description joins the task list and the Chinese description of `task`."""
    zh = HOOK['zh_descriptions']()
    from tests.support.vault_code.task import VaultParams

    assert zh['vault_floor'] == VaultParams.model_fields['vault_floor'].json_schema_extra['description_zh']
    assert "'vault_code'" in zh['task']
    assert '- `task: vault_code`:' in HOOK['render']('<!-- generated: tasks -->\n<!-- /generated -->', 'zh')


@pytest.mark.parametrize('language', LANGUAGES)
def test_where_does_x_live_points_at_real_files(language: str) -> None:
    paths = where_paths(language)
    assert len(paths) >= 13, paths  # insertion, window, resume, judge prompt, a rule, heatmap, live pages, ...
    assert not [path for path in paths if not (ROOT / path).exists()]


@pytest.mark.parametrize('language', LANGUAGES)
def test_parameters_table_lists_every_parameter(language: str) -> None:
    table = HOOK['parameters_table'](language)
    rows = [line for line in table.splitlines()[2:]]
    with without_plugins():  # the docs list what ships, whatever plugin is installed here
        shipped = parameters()
    assert [row.split('|')[1].strip() for row in rows] == [f'`{name}`' for name in shipped]
    assert all(row.count(' | ') == 3 for row in rows), 'a description broke a table row'
    page = (DOCS / language / 'parameters.md').read_text(encoding='utf-8')
    assert HOOK['block_names'](page) == ['parameters']
    assert HOOK['block_names']((DOCS / language / 'tasks.md').read_text(encoding='utf-8')) == ['tasks']


def test_generated_text_is_committed_as_the_code_makes_it() -> None:
    """GitHub shows the Markdown as committed: a parameter or task added without regenerating fails here."""
    stale = HOOK['stale_pages']()
    diffs = '\n\n'.join(f'{page.relative_to(ROOT)}:\n{diff}' for page, diff in stale.items())
    assert not stale, f'generated docs text is stale; run `{HOOK["COMMAND"]}` and commit:\n{diffs[:6000]}'


def test_another_generators_section_is_left_alone() -> None:
    page = '<!-- generated: cli-reference -->\nwhatever it wrote\n<!-- /generated -->\n'
    assert HOOK['render'](page, 'en') == page and HOOK['block_names'](page) == []


def test_a_stale_table_is_caught(vault_registered: None) -> None:
    """A newly registered task's parameter makes the committed table stale, named with the command that fixes it."""
    stale = HOOK['stale_pages']()
    assert {page.relative_to(DOCS).as_posix() for page in stale} == {
        f'{language}/{page}.md' for language in LANGUAGES for page in ('parameters', 'tasks')
    }
    assert '+| `vault_floor` |' in stale[DOCS / 'en' / 'parameters.md']


def test_site_builds_strictly(tmp_path: Path) -> None:
    site = tmp_path / 'site'
    env = {**os.environ, 'PYTHONPATH': str(ROOT), 'NO_MKDOCS_2_WARNING': '1'}
    done = subprocess.run(
        [
            sys.executable,
            '-m',
            'mkdocs',
            'build',
            '--strict',
            '--config-file',
            str(ROOT / 'mkdocs.yml'),
            '-d',
            str(site),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    for language in LANGUAGES:
        prefix = site if language == 'en' else site / language
        html = (prefix / 'parameters' / 'index.html').read_text(encoding='utf-8')
        for name in parameters():
            assert f'<code>{name}</code>' in html, (language, name)
    # The language switch links under site_url's path (a project page is served below /<project>/, not at /).
    with (ROOT / 'mkdocs.yml').open(encoding='utf-8') as config:
        base = urlsplit(yaml_load(config)['site_url']).path.rstrip('/')
    home = (site / 'index.html').read_text(encoding='utf-8')
    assert f'href="{base}/zh/"' in home and 'hreflang="zh"' in home
    # Each language's pages are its own: a Chinese page never falls back to the English text.
    for page in sorted((DOCS / 'en').glob('*.md')):
        assert (DOCS / 'zh' / page.name).is_file(), f'docs/zh/{page.name} is missing'


def test_the_docs_mark_runnable_commands() -> None:
    pages = {page for page, _ in _runnable_blocks()}
    assert {'docs/en/getting-started.md', 'docs/zh/getting-started.md'} <= pages


@pytest.mark.parametrize(('page', 'block'), _runnable_blocks())
def test_runnable_block_runs(page: str, block: str, tmp_path: Path) -> None:
    if shutil.which('evalscope-niah') is None:
        pytest.skip('evalscope-niah is not on PATH (install the package)')
    env = {**os.environ, 'PYTHONPATH': str(ROOT), 'EVALSCOPE_NIAH_CACHE': str(tmp_path / 'cache')}
    done = subprocess.run(
        ['bash', '-euo', 'pipefail', '-c', block], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f'{page}:\n{block}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}'


@pytest.mark.parametrize(('readme', 'other'), [('README.md', 'README_zh.md'), ('README_zh.md', 'README.md')])
def test_readmes_link_each_other_and_into_existing_pages(readme: str, other: str) -> None:
    text = (ROOT / readme).read_text(encoding='utf-8')
    # The language link is at the top, before the first section.
    assert f']({other})' in text.split('\n## ', 1)[0]
    targets = re.findall(r'\]\(([^)#\s]+)(?:#[^)]*)?\)', text)
    local = [target for target in targets if '://' not in target]
    assert any(target.startswith('docs/') for target in local)
    missing = [target for target in local if not (ROOT / target).exists()]
    assert not missing, f'{readme} links to missing files: {missing}'


@pytest.mark.parametrize(('readme', 'language'), [('README.md', 'en'), ('README_zh.md', 'zh')])
def test_readmes_list_every_page_of_the_site(readme: str, language: str) -> None:
    with (ROOT / 'mkdocs.yml').open(encoding='utf-8') as config:
        nav = [next(iter(entry.values())) for entry in yaml_load(config)['nav']]
    text = (ROOT / readme).read_text(encoding='utf-8')
    listed = set(re.findall(rf'\]\(docs/{language}/([^)#]+)', text))
    assert set(nav) - {'index.md'} <= listed, sorted(set(nav) - {'index.md'} - listed)


def test_the_site_loads_no_web_fonts() -> None:
    """Material fetches fonts from Google unless told not to: a host many readers in China cannot reach."""
    with (ROOT / 'mkdocs.yml').open(encoding='utf-8') as config:
        assert yaml_load(config)['theme']['font'] is False
