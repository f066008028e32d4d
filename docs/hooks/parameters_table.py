"""The generated parts of the docs: the table of every ``extra_params`` name, generated from the params model
(``evalscope_niah.tasks.compose.parameters()``: the run's model, then each registered task's), and the list of
registered tasks. They are committed into the Markdown between ``<!-- generated: parameters -->`` (or ``tasks``)
and ``<!-- /generated -->``, so GitHub shows the same text as the site; ``python docs/hooks/parameters_table.py``
rewrites them, and tests/test_docs.py fails with a diff when the committed text drifts from the code. As an MkDocs
hook this module fills nothing: it stops the build when a page's generated text is stale.

English pages get each field's own description; Chinese pages (``zh/``) get names, defaults and owners from the
model and descriptions from the field itself (``json_schema_extra={'description_zh': ...}``, where a task keeps the
Chinese of its own parameters, so a new task needs no edit here), else from ``parameters_zh.py`` beside this file,
keyed by parameter name; ``task`` lists the registered tasks, each with its ``description_zh``. A parameter without
a Chinese description fails (and tests/test_docs.py names it).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent
COMMAND = 'python docs/hooks/parameters_table.py'
# A generated block: its markers on lines of their own (a page may name a marker in prose or code), its text between.
BLOCK = re.compile(
    r'^(?P<open><!-- generated: (?P<name>[a-z-]+) -->)\n(?P<body>.*?)^(?P<close><!-- /generated -->)$',
    flags=re.MULTILINE | re.DOTALL,
)
LANGUAGES = ('en', 'zh')

HEADERS = {
    'en': ('parameter', 'default', 'declared by', 'meaning'),
    'zh': ('参数', '默认值', '声明者', '含义'),
}
RUN_OWNER = {'en': 'the run', 'zh': '整个运行'}
TASK_OWNER = {'en': 'task `{}`', 'zh': '任务 `{}`'}
NO_DEFAULT = {'en': 'none', 'zh': '无'}


def table_zh_descriptions() -> dict[str, str]:
    """The Chinese descriptions kept in ``parameters_zh.py`` (loaded by path: MkDocs loads hooks as files, not as a
    package)."""
    spec = importlib.util.spec_from_file_location('niah_docs_parameters_zh', HERE / 'parameters_zh.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ZH_DESCRIPTIONS


def task_description(name: str, language: str) -> str:
    from evalscope_niah.tasks import get_task

    task = get_task(name)
    return (task.description_zh if language == 'zh' else '') or task.description


def zh_descriptions() -> dict[str, str]:
    """The Chinese description of each parameter: the field's own, else the table's; ``task`` from the registry."""
    from evalscope_niah.tasks import task_names
    from evalscope_niah.tasks.compose import parameters

    table = table_zh_descriptions()
    found = {}
    for name, parameter in parameters().items():
        extra = parameter.field.json_schema_extra
        own = extra.get('description_zh') if isinstance(extra, dict) else None
        text = own or table.get(name)
        if text:
            found[name] = text
    found['task'] = '；'.join(f"'{name}'：{task_description(name, 'zh')}" for name in task_names()) + '。'
    return found


def _shipped_only(make: Callable[[str], str]) -> Callable[[str], str]:
    """The docs list what this package ships (and what a test registers): a task plugin installed where they are
    generated is no part of them."""

    @functools.wraps(make)
    def made(language: str) -> str:
        from evalscope_niah.tasks import without_plugins

        with without_plugins():
            return make(language)

    return made


@_shipped_only
def tasks_list(language: str) -> str:
    """The registered tasks (the control cells are no task a user picks), each with its description."""
    from evalscope_niah.tasks import task_names

    return '\n'.join(f'- `task: {name}`: {_cell(task_description(name, language))}' for name in task_names())


def format_default(value: Any, language: str) -> str:
    if value is None:
        return NO_DEFAULT[language]
    if isinstance(value, str):
        return f'`{value!r}`'
    return f'`{json.dumps(value, ensure_ascii=False)}`'


def _cell(text: str, *, html_escape: bool = False) -> str:
    # One line per row; a pipe would end the cell. In prose '<encoding>' would read as an HTML tag (inside a code
    # span, as a default is, it would not, and an escape would show).
    text = ' '.join(text.split()).replace('|', '\\|')
    return text.replace('<', '&lt;') if html_escape else text


@_shipped_only
def parameters_table(language: str) -> str:
    from evalscope_niah.tasks.compose import parameters

    found = parameters()
    descriptions = zh_descriptions() if language == 'zh' else {name: p.description for name, p in found.items()}
    missing = sorted(set(found) - set(descriptions))
    if missing:
        raise ValueError(f'docs/hooks/parameters_zh.py has no Chinese description for: {", ".join(missing)}')
    rows = ['| ' + ' | '.join(HEADERS[language]) + ' |', '| --- | --- | --- | --- |']
    for name, parameter in found.items():
        owner = RUN_OWNER[language] if parameter.owner is None else TASK_OWNER[language].format(parameter.owner)
        default = format_default(parameter.default, language)
        rows.append(f'| `{name}` | {_cell(default)} | {owner} | {_cell(descriptions[name], html_escape=True)} |')
    return '\n'.join(rows)


# The sections this module generates; a section of another name is another generator's.
MAKERS = {'parameters': parameters_table, 'tasks': tasks_list}


def page_language(src_uri: str) -> str:
    return 'zh' if src_uri.startswith('zh/') else 'en'


def generated(name: str, language: str) -> str:
    return MAKERS[name](language)


def render(markdown: str, language: str, *, empty: bool = False) -> str:
    """A page with each generated block's text made again from the registry and the params model (``empty``: with
    nothing between its markers, i.e. only what the page itself says)."""

    def fill(match: re.Match) -> str:
        if match['name'] not in MAKERS:
            return match[0]  # another generator's section (docs/hooks/generated_pages.py): left to it
        # Blank lines around the text: Python-Markdown would otherwise read a table as part of the comment's block.
        body = '' if empty else generated(match['name'], language) + '\n\n'
        return f'{match["open"]}\n\n{body}{match["close"]}'

    return BLOCK.sub(fill, markdown)


def block_names(markdown: str) -> list[str]:
    """The generated blocks of ``markdown`` this module makes."""
    return [match['name'] for match in BLOCK.finditer(markdown) if match['name'] in MAKERS]


def stale_pages() -> dict[Path, str]:
    """Each page whose committed generated text differs from what the code makes now, with a unified diff."""
    import difflib

    found = {}
    for language in LANGUAGES:
        for page in sorted((DOCS / language).glob('*.md')):
            text = page.read_text(encoding='utf-8')
            fresh = render(text, language)
            if fresh != text:
                lines = difflib.unified_diff(
                    text.splitlines(), fresh.splitlines(), 'committed', 'generated', lineterm='', n=1
                )
                found[page] = '\n'.join(lines)
    return found


def write() -> list[Path]:
    """Rewrites the generated blocks of every page that is stale; returns those pages."""
    stale = stale_pages()
    for page in stale:
        language = page.parent.name
        page.write_text(render(page.read_text(encoding='utf-8'), language), encoding='utf-8')
    return list(stale)


def on_page_markdown(markdown: str, page, config, files) -> str:  # MkDocs' hook signature
    if render(markdown, page_language(page.file.src_uri)) != markdown:
        from mkdocs.exceptions import PluginError

        raise PluginError(f'{page.file.src_uri}: its generated text is stale; run {COMMAND} and commit the result')
    return markdown


if __name__ == '__main__':
    for written in write():
        print(f'rewrote {written.relative_to(DOCS.parent)}')
