"""The generated sections of the docs pages, committed between ``<!-- generated: NAME -->`` and ``<!-- /generated -->``
so GitHub shows them as MkDocs does: the error catalogue (faq.md), the results files field by field with an example
row and an example prompt (results-files.md), and the CLI reference (cli.md), each built from the code.

Regenerate every page after a code change (tests/test_docs_pages.py fails with the diff and this command when a
committed section drifts)::

    PYTHONPATH=. python docs/hooks/generated_pages.py

``--check`` prints the diff and exits 1 instead of writing. Imported by path (``runpy``), like parameters_table.py.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import io
import json
import re
import sys
import tempfile
import tokenize
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / 'evalscope_niah'
DOCS = ROOT / 'docs'
COMMAND = 'PYTHONPATH=. python docs/hooks/generated_pages.py'
SECTION = re.compile(r'(<!-- generated: ([a-z0-9-]+) -->\n)(.*?)(<!-- /generated -->)', flags=re.DOTALL)


def parser() -> argparse.ArgumentParser:
    """The CLI's parser: the one place the reference reaches into cli.py (adjust here if the parser moves)."""
    from evalscope_niah import cli

    return cli._parser()


# ---- the error catalogue -------------------------------------------------------------------------------------------

# Error types a user meets, and the parameter each is about when the call does not name one.
CONFIG_ERRORS = ('NiahConfigError',)
FIXED_PARAM = {'EndpointError': 'tokenizer_path'}
# Raised for programming mistakes, not for anything a user gives: left out of the catalogue.
INTERNAL_ERRORS = {'TypeError', 'AssertionError', 'NotImplementedError', 'AttributeError', 'RuntimeError'}
# What the user was doing, by the module that raises (first prefix that matches wins).
GROUPS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ('judge', 'The judge check', '裁判模型检查', ('judging/', 'integration/judge')),
    (
        'resume',
        'Stopping and resuming a run',
        '中断与断点续评',
        ('making/resume_match.py', 'integration/resume_cache.py', 'integration/interrupt.py', 'torn_lines'),
    ),
    ('window', "The model's window", '模型窗口', ('making/window_fit.py', 'integration/window_check.py')),
    (
        'tokenizer',
        'Tokenizer and server counts',
        '分词器与服务端计数',
        ('making/tokenization.py', 'making/haystack.py', 'serving/endpoint.py', 'serving/token_bytes.py'),
    ),
    ('corpus', 'Corpus and needle files', '语料与 needle 文件', ('making/', 'tasks/single/bank.py')),
    ('plugins', 'Tasks and plugins', '任务与插件', ('tasks/registry.py', 'tasks/plugins.py', 'tasks/base.py')),
    ('server', 'Server faults and the local model', '服务端故障与本地模型', ('serving/', 'integration/')),
    ('disk', 'Disk and the work dir', '磁盘与工作目录', ('disk_space.py', 'work_dir_lock.py', 'atomic.py')),
    ('reading', 'Reports, plotting and comparing result files', '报告、绘图与比较结果文件', ('reporting/',)),
    ('cli', 'Command-line flags', '命令行参数', ('cli.py', 'demo.py')),
    ('config', 'Parameters (extra_params, dataset_args)', '参数（extra_params、dataset_args）', ('',)),
)


@dataclass(frozen=True)
class RaisedError:
    module: str  # path under evalscope_niah/
    kind: str  # the error type
    param: str  # the parameter named (a template, with {placeholders} where the code computes it)
    message: str  # the message template


# A helper that builds a message: its definition and the text constants of its module.
Helper = tuple[ast.FunctionDef, dict[str, ast.expr]]


def _constants(tree: ast.Module) -> dict[str, ast.expr]:
    """The module's top-level text and number constants (``_WAYS_OUT = '...'``): a message quoting one shows it."""
    return {
        node.targets[0].id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant | ast.JoinedStr)
        and not (isinstance(node.value, ast.Constant) and type(node.value.value) not in (str, int, float))
    }


def _placeholder(node: ast.expr, constants: dict[str, ast.expr]) -> str:
    if isinstance(node, ast.Name) and node.id in constants:
        value = constants[node.id]
        if isinstance(value, ast.Constant) and isinstance(value.value, int):
            return f'{value.value:,}'
        if isinstance(value, ast.Constant) and isinstance(value.value, float):
            return f'{value.value:g}'
        return _template(value, {}, constants)[0]
    return '{' + ast.unparse(node) + '}'


def _template(node: ast.expr, helpers: dict[str, Helper], constants: dict[str, ast.expr]) -> list[str]:
    """The text(s) a message expression builds: f-string parts as {placeholders}, a module constant's text, a
    helper's returned texts."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        parts = [
            part.value if isinstance(part, ast.Constant) else _placeholder(part.value, constants)
            for part in node.values
        ]
        return [''.join(parts)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [
            left + right
            for left in _template(node.left, helpers, constants)
            for right in _template(node.right, helpers, constants)
        ]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers:
        function, own = helpers[node.func.id]
        returned = [
            text
            for child in ast.walk(function)
            if isinstance(child, ast.Return)
            and child.value is not None
            and not (isinstance(child.value, ast.Constant) and child.value.value is None)
            for text in _template(child.value, {}, own)
        ]
        if returned:
            return returned
    return [_placeholder(node, constants)]


def _validated_fields(function: ast.FunctionDef | None) -> str | None:
    """The fields a pydantic ``@field_validator('a', 'b')`` checks: its ValueError reaches the user under them."""
    for decorator in function.decorator_list if function else ():
        if isinstance(decorator, ast.Call) and getattr(decorator.func, 'id', '') == 'field_validator':
            names = [arg.value for arg in decorator.args if isinstance(arg, ast.Constant)]
            return ', '.join(names)
    return None


def _checked_for(trees: Iterable[ast.Module]) -> dict[str, str]:
    """function name -> the fields of the validator that calls it (``check_max_reply_bytes`` -> ``max_reply_bytes``):
    a ValueError it raises reaches the user under those fields."""
    found = {}
    for tree in trees:
        for node in ast.walk(tree):
            fields = _validated_fields(node) if isinstance(node, ast.FunctionDef) else None
            for call in ast.walk(node) if fields else ():
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
                    found[call.func.id] = fields
    return found


def _calls(tree: ast.Module) -> Iterator[tuple[ast.Call, ast.FunctionDef | None, bool]]:
    """Every call in the module, with its enclosing function and whether it is what a ``raise`` raises."""
    raised = {id(node.exc) for node in ast.walk(tree) if isinstance(node, ast.Raise) and node.exc is not None}

    def visit(
        node: ast.AST, function: ast.FunctionDef | None
    ) -> Iterator[tuple[ast.Call, ast.FunctionDef | None, bool]]:
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else function
            if isinstance(child, ast.Call):
                yield child, function, id(child) in raised
            yield from visit(child, inner)

    yield from visit(tree, None)


def _module_errors(
    path: Path, tree: ast.Module, shared: dict[str, Helper], imported: dict[str, ast.expr], checked: dict[str, str]
) -> Iterator[RaisedError]:
    """The errors ``path`` raises (a message built by a helper: the helper's texts, this module's own first), then
    the messages its public ``*_message`` functions build (what a run prints when it stops or warns). ``imported``:
    the package's constants, for a name the module imports (``MAX_GRID_AXIS``)."""
    constants = {**imported, **_constants(tree)}
    own = {node.name: (node, constants) for node in tree.body if isinstance(node, ast.FunctionDef)}
    helpers = {**shared, **own}
    module = path.relative_to(PACKAGE).as_posix()
    for name in own:
        if name.endswith('_message') and not name.startswith('_'):
            call = ast.Call(func=ast.Name(id=name), args=[], keywords=[])
            for text in _template(call, helpers, constants):
                yield RaisedError(module, 'message', name.removesuffix('_message'), text)
    for call, function, is_raised in _calls(tree):
        kind = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, 'attr', '')
        if not kind.endswith('Error') or kind in INTERNAL_ERRORS or not call.args:
            continue
        if kind in CONFIG_ERRORS and len(call.args) == 2:
            params, message = _template(call.args[0], {}, constants), call.args[1]
        elif is_raised and kind not in CONFIG_ERRORS:
            called = checked.get(function.name) if function else None
            params, message = [FIXED_PARAM.get(kind) or _validated_fields(function) or called or kind], call.args[0]
        else:
            continue
        for text in _template(message, helpers, constants):
            yield RaisedError(module, kind, params[0], text)


def raised_errors() -> list[RaisedError]:
    """Every error message a user can meet, from the code (the test server's own errors are not the user's)."""
    trees = {
        path: ast.parse(path.read_text(encoding='utf-8'))
        for path in sorted(PACKAGE.rglob('*.py'))
        if 'testing' not in path.relative_to(PACKAGE).parts
    }
    # Public helpers that build a message, wherever they live (a module may raise what another module words).
    shared = {
        node.name: (node, _constants(tree))
        for tree in trees.values()
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.endswith('_message')
    }
    # A constant's name defined in one module only: an import of it can only mean that one.
    defined: dict[str, list[ast.expr]] = {}
    for tree in trees.values():
        for name, value in _constants(tree).items():
            defined.setdefault(name, []).append(value)
    imported = {name: values[0] for name, values in defined.items() if len(values) == 1}
    checked = _checked_for(trees.values())
    found: list[RaisedError] = []
    for path, tree in trees.items():
        found.extend(_module_errors(path, tree, shared, imported, checked))
    raised = {error.message for error in found if error.kind != 'message'}
    # A message function whose text an error already carries is listed once, under the error.
    return [error for error in found if error.kind != 'message' or error.message not in raised]


def group_of(module: str) -> str:
    return next(key for key, _, _, prefixes in GROUPS if any(module.startswith(prefix) for prefix in prefixes))


def _code(text: str) -> str:
    """``text`` as one inline code span, whatever backticks it holds."""
    text = ' '.join(text.split())
    fence = '``' if '`' in text else '`'
    return f'{fence} {text} {fence}' if fence == '``' else f'`{text}`'


def error_catalogue(language: str) -> str:
    errors = raised_errors()
    intro = {
        'en': 'Each entry: the parameter (or error type) the message names, the message as the code builds it '
        '(`{...}` is filled in when it is raised) and the module that raises it.',
        'zh': '每一条：消息所指的参数（或错误类型）、代码构造的消息原文（`{...}` 在抛出时填入）以及抛出它的模块。',
    }[language]
    lines = [intro]
    for key, english, chinese, _ in GROUPS:
        members = sorted({error for error in errors if group_of(error.module) == key}, key=_error_order)
        if members:
            lines += ['', f'### {english if language == "en" else chinese}', '']
            lines += [f'- {_code(error.param)}: {_code(error.message)} ({error.module})' for error in members]
    return '\n'.join(lines)


def _error_order(error: RaisedError) -> tuple[str, str, str]:
    return error.param.lower(), error.message, error.module


# ---- the files a run writes ----------------------------------------------------------------------------------------


def _comments(source: str) -> dict[int, tuple[str, bool]]:
    """line -> (comment text, whether the comment stands alone on its line)."""
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            alone = not token.line[: token.start[1]].strip()
            found[token.start[0]] = (token.string.lstrip('#').strip(), alone)
    return found


def field_meanings(path: Path, class_name: str) -> list[tuple[str, str, str]]:
    """(name, type, meaning) of each field of a dataclass: the meaning is the field's comment, on its line or the
    comment lines just above it. A field without one is an error: the page is generated from the code."""
    source = path.read_text(encoding='utf-8')
    comments = _comments(source)
    body = next(node for node in ast.parse(source).body if getattr(node, 'name', '') == class_name).body
    found = []
    for node in body:
        if not isinstance(node, ast.AnnAssign):
            continue
        line, above = node.lineno, []
        while (line - 1 - len(above)) in comments and comments[line - 1 - len(above)][1]:
            above.insert(0, comments[line - 1 - len(above)][0])
        text, alone = comments.get(node.end_lineno, ('', True))
        meaning = ' '.join(above) if above else (text if not alone else '')
        if not meaning:
            raise ValueError(f'{path.name}: {class_name}.{node.target.id} has no comment saying what it means')
        found.append((node.target.id, ast.unparse(node.annotation), meaning))
    return found


FIELD_HEADERS = {'en': ('field', 'type', 'meaning'), 'zh': ('字段', '类型', '含义（取自代码注释）')}


def _cell(text: str) -> str:
    return ' '.join(text.split()).replace('|', '\\|').replace('<', '&lt;').replace('*', '\\*')


def _field_table(rows: list[tuple[str, str, str]], language: str) -> str:
    header = FIELD_HEADERS[language]
    lines = [f'| {header[0]} | {header[1]} | {header[2]} |', '| --- | --- | --- |']
    # 'float | None' as 'float or None': a pipe, even in a code span, would end the cell on GitHub.
    lines += [f'| `{name}` | `{kind.replace(" | ", " or ")}` | {_cell(meaning)} |' for name, kind, meaning in rows]
    return '\n'.join(lines)


def results_fields(language: str) -> str:
    return _field_table(field_meanings(PACKAGE / 'reporting' / 'records.py', 'SampleResult'), language)


def cells_fields(language: str) -> str:
    """The cells CSV's columns in file order: CellSummary's fields as results.write_cells_csv writes them."""
    from evalscope_niah.reporting.results import CELL_CSV_COLUMNS, NO_ANSWER_COLUMN, TOKENIZER_COLUMN

    fields = {row[0]: row for row in field_meanings(PACKAGE / 'reporting' / 'stats.py', 'CellSummary')}
    order = [*CELL_CSV_COLUMNS, NO_ANSWER_COLUMN, TOKENIZER_COLUMN, 'task_values']
    missing = set(fields) ^ set(order)
    if missing:
        raise ValueError(f'CellSummary fields and the cells CSV columns differ: {sorted(missing)}')
    return _field_table([fields[name] for name in order], language)


def progress_fields(language: str) -> str:
    return _field_table(field_meanings(PACKAGE / 'reporting' / 'live.py', 'PlannedSample'), language)


def example_result():
    from evalscope_niah.reporting.records import SampleResult

    return SampleResult(
        subset='english',
        context_length=1000,
        depth_percent=50.0,
        accuracy=1.0,
        rule_recall=1.0,
        levenshtein=0.93,
        judge_accuracy=1.0,
        judge_status='ok',
        answer='Eat a sandwich and sit in Dolores Park on a sunny day.',
        judge_rating=10.0,
        served_prompt_tokens=1000,
        served_completion_tokens=16,
        scoring='judge',
        tokenizer='Qwen/Qwen3-0.6B',
    )


def example_row(language: str) -> str:
    """A results line and the cells CSV it gives, written and read back by the package's own writers."""
    from evalscope_niah.inert import json_text
    from evalscope_niah.reporting.results import read_results, write_cells_csv, write_results
    from evalscope_niah.reporting.stats import summarize_cells

    with tempfile.TemporaryDirectory() as folder:
        results = write_results(Path(folder) / 'results.jsonl', [example_result()])
        row = read_results(results)[0]
        cells = Path(folder) / 'cells.csv'
        write_cells_csv(cells, summarize_cells([row]))
        csv_text = cells.read_text(encoding='utf-8').strip()
    line = json.dumps(json.loads(json_text(row.to_dict())), indent=2, ensure_ascii=False)
    caption = {
        'en': ('A results line (shown indented):', 'The cells CSV it gives:'),
        'zh': ('结果文件的一行（缩进显示）：', '由它得到的单元格 CSV：'),
    }
    return '\n'.join(
        [caption[language][0], '', '```json', line, '```', '', caption[language][1], '', '```text', csv_text, '```']
    )


# The example prompt: a small sample of the shipped demo corpus, as `evalscope-niah preview` builds it.
PROMPT_LENGTH = 1000
PROMPT_DEPTH = 50
KEPT_CHARS = 240  # of the haystack shown on each side of the elisions


def _elided(text: str, needle: str) -> str:
    """``text`` with the haystack cut down to its start, the needle with what surrounds it, and its end."""
    at = text.index(needle)
    spans = [(0, KEPT_CHARS), (max(0, at - KEPT_CHARS // 2), at + len(needle) + KEPT_CHARS // 2)]
    spans.append((len(text) - KEPT_CHARS, len(text)))
    shown, end = [], 0
    for start, stop in spans:
        if start > end:
            shown.append(f' […{start - end} characters of haystack…] ')
        shown.append(text[max(start, end) : stop])
        end = max(end, stop)
    return ''.join(shown)


def example_prompt(language: str) -> str:
    from evalscope_niah.making.corpus import DEMO_CORPUS_DIR, DEMO_CORPUS_FILES
    from evalscope_niah.making.prompts import PromptSpec
    from evalscope_niah.making.samples import iter_samples
    from evalscope_niah.tasks.compose import parse_params

    subset = 'english' if language == 'en' else 'chinese'
    extra_params = {
        'context_lengths': [PROMPT_LENGTH],
        'document_depth_percents': [PROMPT_DEPTH],
        'subsets': {subset: {'corpus_file': DEMO_CORPUS_FILES[subset]}},
    }
    params = parse_params(extra_params)
    sample = next(
        iter(iter_samples(params, corpus_dir=DEMO_CORPUS_DIR, subsets=[subset], prompt=PromptSpec(), limit=1))
    )
    record = sample.to_record()
    config = json.dumps({'extra_params': extra_params}, ensure_ascii=False)
    lines = [f"`evalscope-niah preview --dataset-args '{config}' --limit 1` on the demo corpus (`{subset}`):", '']
    for message in record['messages']:
        content = message['content']
        shown = _elided(content, record['needles'][0]) if message['role'] == 'user' else content
        lines += [f'**{message["role"]}**', '', '```text', shown, '```', '']
    lines.append(
        {
            'en': f'The needle, `{record["needles"][0]}`, sits at {record["achieved_depth_percent"]}% of the '
            f'{record["haystack_tokens"]}-token haystack; the prompt is {record["prompt_tokens"]} tokens of '
            f'`{record["tokenizer"]}`.',
            'zh': f'needle `{record["needles"][0]}` 位于 {record["haystack_tokens"]} 个 token 的 haystack 的 '
            f'{record["achieved_depth_percent"]}% 处；整个提示为 {record["prompt_tokens"]} 个 '
            f'`{record["tokenizer"]}` token。',
        }[language]
    )
    return '\n'.join(lines)


# ---- the CLI reference ---------------------------------------------------------------------------------------------

CLI_HEADERS = {'en': ('argument', 'default', 'what it does'), 'zh': ('参数', '默认值', '作用（命令行帮助原文）')}
EVAL_NOTE = {
    'en': "Takes `evalscope eval`'s own arguments (see `evalscope eval --help`), with this package's benchmarks "
    'loaded.',
    'zh': '接受 `evalscope eval` 自己的参数（见 `evalscope eval --help`），并加载本包的基准。',
}


def subcommands() -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """name -> (help line, parser) of every subcommand, in the parser's order."""
    action = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help or '' for choice in action._choices_actions}
    return {name: (helps.get(name, ''), sub) for name, sub in action.choices.items()}


def _argument(action: argparse.Action) -> str:
    if not action.option_strings:
        return f'`{action.metavar or action.dest}`' + (' …' if action.nargs in ('*', '+') else '')
    value = '' if action.nargs == 0 else ' ' + (action.metavar or action.dest.upper())
    if action.choices:
        value = ' {' + ','.join(str(choice) for choice in action.choices) + '}'
    if action.nargs in ('*', '+'):
        value += ' …'
    return ', '.join(f'`{flag}{value}`' for flag in action.option_strings)


def _default(action: argparse.Action) -> str:
    if action.default in (None, False, argparse.SUPPRESS) or action.nargs == 0:
        return ''
    return f'`{action.default.as_posix() if isinstance(action.default, Path) else json.dumps(action.default)}`'


def cli_reference(language: str) -> str:
    header = CLI_HEADERS[language]
    lines = []
    for name, (summary, sub) in subcommands().items():
        lines += [f'### `evalscope-niah {name}`', '', _cell(summary) + ('.' if summary else '')]
        if sub.description:
            lines[-1] += ' ' + _cell(sub.description)
        actions = [a for a in sub._actions if not isinstance(a, argparse._HelpAction)]
        if name == 'eval':
            lines += ['', EVAL_NOTE[language]]
        if actions:
            lines += ['', f'| {header[0]} | {header[1]} | {header[2]} |', '| --- | --- | --- |']
            lines += [f'| {_argument(a)} | {_default(a)} | {_cell(a.help or "")} |' for a in actions]
        lines.append('')
    return '\n'.join(lines).rstrip('\n')


# ---- the pages -----------------------------------------------------------------------------------------------------

SECTIONS: dict[str, Callable[[str], str]] = {
    'errors': error_catalogue,
    'results-fields': results_fields,
    'cells-fields': cells_fields,
    'progress-fields': progress_fields,
    'example-row': example_row,
    'example-prompt': example_prompt,
    'cli': cli_reference,
}


def regenerate(text: str, language: str) -> str:
    """The page with every generated section as the code makes it now."""

    def replace(match: re.Match) -> str:
        name = match.group(2)
        if name not in SECTIONS:
            raise ValueError(f'unknown generated section {name!r}; known: {", ".join(SECTIONS)}')
        return f'{match.group(1)}{SECTIONS[name](language)}\n{match.group(4)}'

    return SECTION.sub(replace, text)


def pages() -> list[Path]:
    return [page for page in sorted(DOCS.glob('*/*.md')) if SECTION.search(page.read_text(encoding='utf-8'))]


def drift() -> dict[Path, str]:
    """page -> unified diff, for each page whose committed sections differ from what the code makes now."""
    found = {}
    for page in pages():
        committed = page.read_text(encoding='utf-8')
        fresh = regenerate(committed, page.parent.name)
        if fresh != committed:
            diff = difflib.unified_diff(
                committed.splitlines(keepends=True), fresh.splitlines(keepends=True), str(page), 'generated now'
            )
            found[page] = ''.join(diff)
    return found


def main(argv: list[str]) -> int:
    if argv == ['--check']:
        found = drift()
        for diff in found.values():
            sys.stdout.write(diff)
        return 1 if found else 0
    for page in pages():
        committed = page.read_text(encoding='utf-8')
        fresh = regenerate(committed, page.parent.name)
        if fresh != committed:
            page.write_text(fresh, encoding='utf-8')
            print(f'rewrote {page.relative_to(ROOT)}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main(sys.argv[1:]))
