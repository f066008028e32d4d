"""The schema of every file a run writes, read from the code that writes it: each key with its type and meaning, so
the results-files page lists exactly what the files hold (tests/test_docs_results_schema.py runs a real run and
compares its files with this, both ways). Loaded by path by generated_pages.py, which renders the tables.

Where a meaning comes from: a record that is a dataclass (``SampleResult``, ``CellSummary``, the summary's
``EffectiveLength`` ...) gives each field's comment, on its line or just above it; a record built as a dict literal
(the judge check's, the progress file's, the sweep's) gives the comment on each key's line or just above it. A field
or key without one is an error naming it: a field added to a record fails the docs test until it says what it means.

Paths: ``a.b`` is key ``b`` inside ``a``, ``a[]`` each element of the list ``a``, ``<subset>`` a key that is a subset's
name (``effective_context_length.<subset>.length``).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parents[2] / 'evalscope_niah'
SUBSET = '<subset>'


@dataclass(frozen=True)
class Key:
    path: str  # where the key sits in the file ('controls[].n')
    kind: str  # its type as the code declares it ('' where a dict literal builds it)
    meaning: str  # what it means, from the code's comment
    # written only by some runs or only when it has a value (an optional results field, the sweep's keys, ...)
    optional: bool = False
    # a mapping whose keys are data (task value names, settings): documented as one key, not walked into
    opaque: bool = False


# ---- meanings from comments ----------------------------------------------------------------------------------------


def _comments(source: str) -> dict[int, tuple[str, bool]]:
    """line -> (comment text, whether the comment stands alone on its line)."""
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            alone = not token.line[: token.start[1]].strip()
            found[token.start[0]] = (token.string.lstrip('#').strip(), alone)
    return found


def _meaning(comments: Mapping[int, tuple[str, bool]], first_line: int, last_line: int) -> str:
    """The comment lines standing just above ``first_line``, else the comment ending ``last_line`` (or ``first_line``:
    a key whose value spans lines carries its comment on its first)."""
    above: list[str] = []
    while (first_line - 1 - len(above)) in comments and comments[first_line - 1 - len(above)][1]:
        above.insert(0, comments[first_line - 1 - len(above)][0])
    if above:
        return ' '.join(above)
    for line in dict.fromkeys((last_line, first_line)):
        text, alone = comments.get(line, ('', True))
        if text and not alone:
            return text
    return ''


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
        meaning = _meaning(comments, node.lineno, node.end_lineno)
        if not meaning:
            raise ValueError(f'{path.name}: {class_name}.{node.target.id} has no comment saying what it means')
        found.append((node.target.id, ast.unparse(node.annotation), meaning))
    return found


def dict_meanings(path: Path, function: str, first_key: str) -> list[tuple[str, str]]:
    """(key, meaning) of the dict literal in ``function`` (a function or method of ``path``) whose first key is
    ``first_key``: each key's comment, on its line or just above it; a key without one is an error."""
    source = path.read_text(encoding='utf-8')
    comments = _comments(source)
    functions = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function
    ]
    literals = [
        node
        for scope in functions
        for node in ast.walk(scope)
        if isinstance(node, ast.Dict)
        and node.keys
        and isinstance(node.keys[0], ast.Constant)
        and node.keys[0].value == first_key
    ]
    if len(literals) != 1:
        raise ValueError(f'{path.name}: {function} has {len(literals)} dict literals starting with {first_key!r}')
    found = []
    for key, value in zip(literals[0].keys, literals[0].values, strict=True):
        if not isinstance(key, ast.Constant) or not isinstance(key.value, str):
            raise ValueError(f'{path.name}: {function} builds a key that is not a plain string')
        meaning = _meaning(comments, key.lineno, value.end_lineno if value.lineno == key.lineno else key.lineno)
        if not meaning:
            raise ValueError(f"{path.name}: {function}'s key {key.value!r} has no comment saying what it means")
        found.append((key.value, meaning))
    return found


# ---- the files -----------------------------------------------------------------------------------------------------

STATS = PACKAGE / 'reporting' / 'stats.py'


def _dataclass_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding='utf-8'))
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef) and any('dataclass' in ast.unparse(d) for d in node.decorator_list)
    }


def _record_keys(path: Path, class_name: str, prefix: str, *, optional: Iterable[str] = ()) -> list[Key]:
    """The keys a dataclass of ``path`` writes under ``prefix`` (``asdict``), walking into the dataclasses it holds:
    ``tuple[X, ...]`` / ``list[X]`` as ``[]``, ``dict[str, X]`` as a subset-keyed mapping."""
    records = _dataclass_names(path)
    keys = []
    for name, kind, meaning in field_meanings(path, class_name):
        inner = next((word for word in re.findall(r'\w+', kind) if word in records), None)
        keys.append(Key(prefix + name, kind, meaning, optional=name in set(optional)))
        if inner is None:
            continue
        if kind.startswith(('tuple[', 'list[')):
            keys += _record_keys(path, inner, f'{prefix}{name}[].')
        elif kind.startswith('dict['):
            keys += _record_keys(path, inner, f'{prefix}{name}.{SUBSET}.')
        else:
            keys += _record_keys(path, inner, f'{prefix}{name}.')
    return keys


def _literal_keys(
    path: Path, function: str, first_key: str, prefix: str, *, optional: bool = False, opaque: Iterable[str] = ()
) -> list[Key]:
    return [
        Key(prefix + key, '', meaning, optional=optional, opaque=key in set(opaque))
        for key, meaning in dict_meanings(path, function, first_key)
    ]


def results_keys(prefix: str = '') -> list[Key]:
    """A results line (``SampleResult.to_dict``): the optional fields only when they have a value."""
    records = PACKAGE / 'reporting' / 'sample_record.py'
    tree = ast.parse(records.read_text(encoding='utf-8'))
    omitted = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], 'id', '') == '_OMIT_WHEN_NONE'
    )
    optional = {*ast.literal_eval(omitted), 'task_values'}
    return [
        Key(prefix + name, kind, meaning, optional=name in optional, opaque=name == 'task_values')
        for name, kind, meaning in field_meanings(records, 'SampleResult')
    ]


def summary_keys() -> list[Key]:
    outputs = PACKAGE / 'reporting' / 'outputs.py'
    sweep = ast.get_docstring(
        next(
            node
            for node in ast.parse(outputs.read_text(encoding='utf-8')).body
            if getattr(node, 'name', '') == 'sweep_summary'
        )
    )
    return [
        *_record_keys(STATS, 'RunSummary', ''),
        Key('sweep', '', 'only with sweep: adaptive. ' + sweep.split('\n\n')[0].replace('\n', ' '), optional=True),
        *_literal_keys(outputs, 'sweep_summary', 'stop', f'sweep.{SUBSET}.', optional=True),
    ]


def judge_check_keys() -> list[Key]:
    judging = PACKAGE / 'judging'
    check = _literal_keys(judging / 'qualification.py', 'to_dict', 'judge', f'{SUBSET}.')
    items = _literal_keys(judging / 'qualification.py', 'to_dict', 'category', f'{SUBSET}.items[].')

    def failure(prefix: str) -> list[Key]:
        # Written when a call brought no reply: a run whose judge answered has none.
        return _literal_keys(judging / 'judge_failures.py', 'to_dict', 'kind', prefix, optional=True)

    return [*check, *failure(f'{SUBSET}.failure.'), *items, *failure(f'{SUBSET}.items[].failure.')]


def progress_keys() -> list[Key]:
    live = PACKAGE / 'reporting' / 'live.py'
    return [
        # Each finished sample is a results-file row: its keys are the results file's (results_keys).
        *_literal_keys(live, 'to_dict', 'format', '', opaque=('results',)),
        *_record_keys(live, 'PlannedSample', 'planned[].'),
    ]


def sweep_plan_keys() -> list[Key]:
    plan = PACKAGE / 'reporting' / 'sweep_plan.py'
    subset = f'subsets.{SUBSET}.'
    return [
        *_literal_keys(plan, 'write_sweep_plan', 'format', '', opaque=('settings',)),
        *_literal_keys(plan, 'subset_plan', 'context_lengths', subset),
        *_literal_keys(plan, 'subset_plan', 'context_length', f'{subset}cells[].'),
    ]


def cells_columns() -> list[Key]:
    """The cells CSV's header as ``write_cells_csv`` writes it for a run (a column per task value the registered tasks
    report), each column with its ``CellSummary`` field's meaning, or the task value's."""
    import csv
    import tempfile

    from evalscope_niah.reporting.result_files import write_cells_csv
    from evalscope_niah.reporting.stats import CellSummary
    from evalscope_niah.tasks import reported_value_declarations, reported_values

    with tempfile.TemporaryDirectory() as folder:
        path = write_cells_csv(
            Path(folder) / 'cells.csv', [CellSummary.accuracy_only('s', 1, 0.0)], value_columns=reported_values()
        )
        header = next(csv.reader(io.StringIO(path.read_text(encoding='utf-8'))))
    fields = {name: (kind, meaning) for name, kind, meaning in field_meanings(STATS, 'CellSummary')}
    declared = {value.name: value for value in reported_value_declarations()}
    keys = []
    for column in header:
        if column in fields:
            keys.append(Key(column, *fields[column]))
        elif column in declared:
            value = declared[column]
            keys.append(
                Key(
                    column,
                    'float | None',
                    f'a task value (task_values): the mean {value.label} ({value.measure}) of the cell, empty where '
                    'its task does not report it',
                )
            )
        else:
            raise ValueError(f'the cells CSV writes a column {column!r}, neither a CellSummary field nor a task value')
    unwritten = set(fields) - set(header) - {'task_values'}
    if unwritten:
        raise ValueError(f'CellSummary fields the cells CSV does not write: {sorted(unwritten)}')
    return keys


def in_tree_order(keys: Iterable[Key]) -> list[Key]:
    """``keys`` with each one's children right after it (a parent first, in the order the code writes them)."""
    keys = list(keys)
    paths = {key.path for key in keys}

    def parent(path: str) -> str:
        for cut in (f'.{SUBSET}.', '[].', '.'):
            head = path.rsplit('.', 1)[0] if cut == '.' else path.rsplit(cut, 1)[0]
            if cut in path and head in paths:
                return head
        return ''

    children: dict[str, list[Key]] = {}
    for key in keys:
        children.setdefault(parent(key.path), []).append(key)
    ordered: list[Key] = []

    def visit(path: str) -> None:
        for key in children.get(path, []):
            ordered.append(key)
            visit(key.path)

    visit('')
    return ordered


FILES = {
    'results': results_keys,
    'summary': summary_keys,
    'judge-check': judge_check_keys,
    'progress': progress_keys,
    'sweep-plan': sweep_plan_keys,
}


# ---- a written file's keys, in the same notation -------------------------------------------------------------------


def written_keys(data: Any, schema: Iterable[Key]) -> set[str]:
    """Every key path ``data`` (a parsed JSON file) holds, as the schema writes them: a mapping the schema keys by
    subset is walked as ``<subset>``, an opaque one is not walked into, lists are walked element by element."""
    schema = list(schema)
    by_subset = {key.path.rsplit(f'.{SUBSET}', 1)[0] for key in schema if f'.{SUBSET}' in key.path}
    top_by_subset = any(key.path.startswith(f'{SUBSET}.') for key in schema)
    opaque = {key.path for key in schema if key.opaque}
    found: set[str] = set()

    def walk(value: Any, path: str) -> Iterator[str]:
        if path in opaque:
            return
        if isinstance(value, dict):
            keyed = (path in by_subset) if path else top_by_subset
            for name, inner in value.items():
                child = SUBSET if keyed else name
                child = f'{path}.{child}' if path else child
                if not keyed:
                    yield child
                yield from walk(inner, child)
        elif isinstance(value, list):
            for inner in value:
                yield from walk(inner, f'{path}[]')

    found.update(walk(data, ''))
    return found
