"""What a page documenting the benchmark must name, checked against the registry and the params model: one
function taking the page's text, so the check can point at README.md today and at the docs site's page later."""

from __future__ import annotations

import re

from evalscope_niah.tasks import task_names
from evalscope_niah.tasks.compose import parameters


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find('\n## ', start + len(heading))
    return text[start : end if end != -1 else len(text)]


def _table_names(table: str) -> dict[str, str]:
    """Parameter name -> its row, from a Markdown table whose first column names parameters in backticks; a
    `_suffix` after a name is that name with its last part replaced (`context_lengths_min` / `_max`)."""
    rows: dict[str, str] = {}
    for line in table.splitlines():
        if not line.startswith('| `'):
            continue
        first = line.split('|')[1]
        names: list[str] = []
        for name in re.findall(r'`([^`]+)`', first):
            if name.startswith('_') and names:
                name = names[0].rsplit('_', 1)[0] + name
            names.append(name)
        rows.update(dict.fromkeys(names, line))
    return rows


def undocumented(text: str, *, parameters_heading: str = '## Parameters') -> list[str]:
    """What ``text`` fails to name: every parameter of ``tasks.compose.parameters()`` needs a row of its
    Parameters table, and the ``task`` row names every registered task (in backticks)."""
    rows = _table_names(_section(text, parameters_heading))
    missing = [f'parameter {name}' for name in parameters() if name not in rows]
    task_row = rows.get('task', '')
    missing += [f'task {name}' for name in task_names() if f'`{name}`' not in task_row]
    return missing
