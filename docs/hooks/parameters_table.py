"""MkDocs hook: replaces the marker ``<!-- parameters-table -->`` on a page with the table of every ``extra_params``
name, generated from the params model (``evalscope_niah.tasks.compose.parameters()``: the run's model, then each
registered task's), so the table can never drift from the code.

English pages get each field's own description; Chinese pages (``zh/``) get names, defaults and owners from the
model and descriptions from the field itself (``json_schema_extra={'description_zh': ...}``, where a task keeps the
Chinese of its own parameters, so a new task needs no edit here), else from ``parameters_zh.py`` beside this file,
keyed by parameter name; ``task`` lists the registered tasks, each with its ``description_zh``. A parameter without
a Chinese description fails the build (and tests/test_docs.py names it).

The marker ``<!-- tasks-list -->`` becomes the list of registered tasks, from the registry, in the page's language.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

MARKER = '<!-- parameters-table -->'
TASKS_MARKER = '<!-- tasks-list -->'
# Only a marker on a line of its own: a page may name the marker in prose or code.
MARKER_LINE = re.compile(r'^' + re.escape(MARKER) + r'$', flags=re.MULTILINE)
TASKS_MARKER_LINE = re.compile(r'^' + re.escape(TASKS_MARKER) + r'$', flags=re.MULTILINE)
HERE = Path(__file__).resolve().parent

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


def page_language(src_uri: str) -> str:
    return 'zh' if src_uri.startswith('zh/') else 'en'


def on_page_markdown(markdown: str, page, config, files) -> str:  # MkDocs' hook signature
    return render(markdown, page_language(page.file.src_uri))


def render(markdown: str, language: str) -> str:
    """A page with its markers replaced by what the registry and the params model say."""
    if MARKER_LINE.search(markdown):
        table = parameters_table(language)
        markdown = MARKER_LINE.sub(lambda _: table, markdown)
    if TASKS_MARKER_LINE.search(markdown):
        tasks = tasks_list(language)
        markdown = TASKS_MARKER_LINE.sub(lambda _: tasks, markdown)
    return markdown
