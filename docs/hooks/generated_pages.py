"""The generated sections of the docs pages, committed between ``<!-- generated: NAME -->`` and ``<!-- /generated -->``
so GitHub shows them as MkDocs does: the error catalogue (faq.md), the results files field by field with an example
row and an example prompt (results-files.md), and the CLI reference (cli.md), each built from the code (the error
catalogue by error_catalogue.py beside this file).

Regenerate every page after a code change (tests/test_docs_pages.py fails with the diff and this command when a
committed section drifts)::

    PYTHONPATH=. python docs/hooks/generated_pages.py

``--check`` prints the diff and exits 1 instead of writing. Imported by path (``runpy``), like parameters_table.py.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PACKAGE = ROOT / 'evalscope_niah'
DOCS = ROOT / 'docs'
COMMAND = 'PYTHONPATH=. python docs/hooks/generated_pages.py'
SECTION = re.compile(
    r'^(<!-- generated: ([a-z0-9-]+) -->\n)(.*?)^(<!-- /generated -->)$', flags=re.DOTALL | re.MULTILINE
)


def _load(name: str):
    """A module beside this file, by path: MkDocs and the tests load these hooks as files, not as a package."""
    spec = importlib.util.spec_from_file_location(f'niah_docs_{name}', HERE / f'{name}.py')
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


CATALOGUE = _load('error_catalogue')
SCHEMA = _load('results_schema')
field_meanings = SCHEMA.field_meanings
error_catalogue, raised_errors, group_of = CATALOGUE.error_catalogue, CATALOGUE.raised_errors, CATALOGUE.group_of


def parser() -> argparse.ArgumentParser:
    """The CLI's parser: the one place the reference reaches into cli.py (adjust here if the parser moves)."""
    from evalscope_niah import cli

    return cli._parser()


# ---- the files a run writes ----------------------------------------------------------------------------------------


FIELD_HEADERS = {'en': ('field', 'type', 'meaning'), 'zh': ('字段', '类型', '含义（取自代码注释）')}


def _cell(text: str) -> str:
    return ' '.join(text.split()).replace('|', '\\|').replace('<', '&lt;').replace('*', '\\*')


OPTIONAL = {'en': ' (optional)', 'zh': '（可选）'}


def _key_table(keys, language: str) -> str:
    """One row per key of a file (results_schema.Key), optional ones marked."""
    keys = SCHEMA.in_tree_order(keys)
    rows = [(key.path, key.kind, key.meaning + (OPTIONAL[language] if key.optional else '')) for key in keys]
    header = FIELD_HEADERS[language]
    lines = [f'| {header[0]} | {header[1]} | {header[2]} |', '| --- | --- | --- |']
    for name, kind, meaning in rows:
        shown = f'`{kind.replace(" | ", " or ")}`' if kind else ''
        lines.append(f'| `{name}` | {shown} | {_cell(meaning)} |')
    return '\n'.join(lines)


def results_fields(language: str) -> str:
    return _key_table(SCHEMA.results_keys(), language)


def cells_fields(language: str) -> str:
    """The cells CSV's columns in file order, as results.write_cells_csv writes them for a run."""
    return _key_table(SCHEMA.cells_columns(), language)


def progress_fields(language: str) -> str:
    return _key_table(SCHEMA.progress_keys(), language)


def summary_fields(language: str) -> str:
    return _key_table(SCHEMA.summary_keys(), language)


def judge_check_fields(language: str) -> str:
    return _key_table(SCHEMA.judge_check_keys(), language)


def sweep_plan_fields(language: str) -> str:
    return _key_table(SCHEMA.sweep_plan_keys(), language)


def example_result():
    from evalscope_niah.reporting.sample_record import SampleResult

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
    from evalscope_niah.escaping import json_text
    from evalscope_niah.reporting.result_files import read_results, write_cells_csv, write_results
    from evalscope_niah.reporting.stats import summarize_cells
    from evalscope_niah.tasks import reported_values

    with tempfile.TemporaryDirectory() as folder:
        results = write_results(Path(folder) / 'results.jsonl', [example_result()])
        row = read_results(results)[0]
        cells = Path(folder) / 'cells.csv'
        write_cells_csv(cells, summarize_cells([row]), value_columns=reported_values())
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
    # The command as shown runs from the repository root (the tests run it): the demo corpus by its path.
    shown_params = {'local_path': DEMO_CORPUS_DIR.relative_to(ROOT).as_posix(), 'extra_params': extra_params}
    config = json.dumps(shown_params, ensure_ascii=False)
    command = f"`evalscope-niah preview --dataset-args '{config}' --subset {subset} --limit 1`"
    lead = {'en': f'{command} on the demo corpus (`{subset}`):', 'zh': f'在演示语料（`{subset}`）上运行 {command}：'}
    lines = [lead[language], '']
    for message in record['messages']:
        content = message['content']
        shown = _elided(content, record['needles'][0]) if message['role'] == 'user' else content
        lines += [f'**{message["role"]}**', '', '```text', shown, '```', '']
    lines.append(
        {
            'en': f'The needle, `{record["needles"][0]}`, sits at {record["achieved_depth_percent"]}% of the '
            f'{record["haystack_tokens"]}-token haystack; the prompt is {record["prompt_tokens"]} tokens of '
            f'`{record["tokenizer"]}`.',
            'zh': f'针 `{record["needles"][0]}` 位于干草堆（共 {record["haystack_tokens"]} 个 token）的 '
            f'{record["achieved_depth_percent"]}% 处；整个提示共 {record["prompt_tokens"]} 个 token'
            f'（按 `{record["tokenizer"]}` 计）。',
        }[language]
    )
    return '\n'.join(lines)


# ---- the CLI reference ---------------------------------------------------------------------------------------------

CLI_HEADERS = {'en': ('argument', 'default', 'what it does'), 'zh': ('参数', '默认值', '说明（命令行帮助原文）')}
EVAL_NOTE = {
    'en': "Takes `evalscope eval`'s own arguments (see `evalscope eval --help`), with this package's benchmarks "
    'loaded.',
    'zh': '参数与 `evalscope eval` 相同（见 `evalscope eval --help`），运行时加载本包的基准。',
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
        # The subcommand's description opens with its summary (cli_args._add_command): its --help's first lines.
        lines += [f'### `evalscope-niah {name}`', '', _cell(sub.description or summary)]
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
    'error-catalogue': error_catalogue,
    'results-fields': results_fields,
    'cells-fields': cells_fields,
    'progress-fields': progress_fields,
    'summary-fields': summary_fields,
    'judge-check-fields': judge_check_fields,
    'sweep-plan-fields': sweep_plan_fields,
    'example-row': example_row,
    'example-prompt': example_prompt,
    'cli-reference': cli_reference,
}


def regenerate(text: str, language: str) -> str:
    """The page with each of our generated sections as the code makes it now. A section of another name is another
    generator's (docs/hooks/parameters_table.py fills ``parameters`` and ``tasks``) and is left as it is; every name
    here has a hyphen, which that generator's names have not, so neither reads the other's."""

    def replace(match: re.Match) -> str:
        name = match.group(2)
        if name not in SECTIONS:
            return match.group(0)
        # Blank lines around the text: Python-Markdown would otherwise read a table as part of the comment's block.
        return f'{match.group(1)}\n{SECTIONS[name](language)}\n\n{match.group(4)}'

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
                committed.splitlines(keepends=True),
                fresh.splitlines(keepends=True),
                str(page.relative_to(ROOT)),
                'generated now',
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
