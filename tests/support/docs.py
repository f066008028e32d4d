"""What the docs must name, checked against the registry and the params model: every registered task is named
(`task: name`) on each language's tasks page, and the generated parameters table holds every parameter."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from evalscope_niah.tasks import task_names, without_plugins
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
    with without_plugins():  # the pages name what ships, whatever plugin is installed here
        return [name for name in task_names() if not re.search(rf'`task: {re.escape(name)}`', text)]


def missing_parameters(table: str) -> list[str]:
    """The parameters of ``tasks.compose.parameters()`` with no row in a Markdown ``table`` (first column
    `` `name` ``)."""
    rows = {match.group(1) for match in re.finditer(r'^\| `([^`]+)` \|', table, flags=re.MULTILINE)}
    with without_plugins():  # the tables list what ships, whatever plugin is installed here
        return [name for name in parameters() if name not in rows]


# The line before the development page's example task (the kit's Counting-Stars), in each language.
KIT_EXAMPLE = '<!-- kit-example -->'


def kit_example(language: str = 'en') -> str:
    """The example task's code block of the development page."""
    text = (DOCS / language / 'development.md').read_text(encoding='utf-8')
    blocks = re.findall(re.escape(KIT_EXAMPLE) + r'\n```python\n(.*?)```', text, flags=re.DOTALL)
    assert len(blocks) == 1, f'docs/{language}/development.md: expected one {KIT_EXAMPLE} python block'
    return blocks[0]


def load_kit_example(folder: Path) -> ModuleType:
    """The example run as its own module (written to ``folder``, imported by file): importing it registers the
    task, as the docs say."""
    path = folder / 'counting_stars_task.py'
    path.write_text(kit_example(), encoding='utf-8')
    spec = importlib.util.spec_from_file_location('counting_stars_task', path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look a class's module up
    spec.loader.exec_module(module)
    return module


def where_paths(language: str) -> list[str]:
    """Every path named in the development page's 'where does X live' table."""
    text = (DOCS / language / 'development.md').read_text(encoding='utf-8')
    section = text.split(WHERE_HEADING[language], 1)[1].split('\n## ', 1)[0]
    rows = [line for line in section.splitlines() if line.startswith('| ') and '---' not in line][1:]
    return [path for row in rows for path in re.findall(r'`([\w.-]+/[\w./-]+)`', row)]


WHERE_HEADING = {'en': '## Where does X live', 'zh': '## X 在哪里'}
