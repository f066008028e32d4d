"""What the docs must name, checked against the registry and the params model: every registered task is named
(`task: name`) on each language's tasks page, and the generated parameters table holds every parameter."""

from __future__ import annotations

import re
from pathlib import Path

from evalscope_niah.tasks import task_names
from evalscope_niah.tasks.compose import parameters

DOCS = Path(__file__).resolve().parents[2] / 'docs'


def tasks_page(language: str, *, generated: bool = True) -> str:
    """The tasks page with its generated list made again from the registry now; ``generated=False``: without that
    list, only what the page itself says."""
    import runpy

    hook = runpy.run_path(str(DOCS / 'hooks' / 'parameters_table.py'))
    text = (DOCS / language / 'tasks.md').read_text(encoding='utf-8')
    return hook['render'](text, language, empty=not generated)


def unnamed_tasks(text: str) -> list[str]:
    """The registered tasks ``text`` never names as ``task: <name>`` (how the pages show a task's switch)."""
    return [name for name in task_names() if not re.search(rf'`task: {re.escape(name)}`', text)]


def missing_parameters(table: str) -> list[str]:
    """The parameters of ``tasks.compose.parameters()`` with no row in a Markdown ``table`` (first column
    `` `name` ``)."""
    rows = {match.group(1) for match in re.finditer(r'^\| `([^`]+)` \|', table, flags=re.MULTILINE)}
    return [name for name in parameters() if name not in rows]
