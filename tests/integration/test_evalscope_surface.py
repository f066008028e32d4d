"""The contract with EvalScope's private surface (integration/evalscope_surface.py): every hook is there on the
installed EvalScope, every private EvalScope name the integration code uses is listed, and the tested range is the
one pyproject.toml declares."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.metadata
import re
from pathlib import Path

import pytest

pytest.importorskip('evalscope')

from packaging.specifiers import SpecifierSet

from evalscope_niah.integration import evalscope_surface
from evalscope_niah.integration.evalscope_surface import (
    BUILTIN_ADAPTER,
    HOOKS,
    JUDGE_CONFIG,
    METRIC_OVERRIDES,
    ON_GENERATE_REPORT_END,
    REGISTRY_LOCK,
    TASK_CONFIG,
    hook_problem,
    missing_hooks,
)

INTEGRATION_DIR = Path(evalscope_surface.__file__).parent
PYPROJECT = INTEGRATION_DIR.parents[1] / 'pyproject.toml'


def test_the_installed_evalscope_has_every_hook() -> None:
    gone = missing_hooks()
    version = importlib.metadata.version('evalscope')
    assert not gone, f'EvalScope {version} no longer has what evalscope-niah relies on:\n' + '\n'.join(gone)


@pytest.mark.parametrize(
    ('hook', 'expected'),
    [
        (dataclasses.replace(BUILTIN_ADAPTER, module='evalscope.benchmarks.gone'), 'cannot be imported'),
        (dataclasses.replace(REGISTRY_LOCK, path='BENCHMARK_REGISTRY._gone'), 'has no attribute _gone'),
        (dataclasses.replace(TASK_CONFIG, path='DefaultDataAdapter._gone'), 'assigns or declares _gone'),
        (dataclasses.replace(JUDGE_CONFIG, kind='callable'), 'no longer callable'),
        (dataclasses.replace(METRIC_OVERRIDES, path='MetricEntry'), 'no longer a dict'),
        (dataclasses.replace(ON_GENERATE_REPORT_END, called_in='evalscope.evaluator.evaluator'), 'no longer calls'),
    ],
)
def test_a_changed_hook_is_reported_by_name(hook: evalscope_surface.Hook, expected: str) -> None:
    assert hook_problem(hook) is not None and expected in hook_problem(hook)
    (line,) = missing_hooks([hook, *HOOKS])
    assert line.startswith(f'{hook.name}: ')


def _class_methods(module: str, tree: ast.Module) -> dict[type, list[str]]:
    """Each class the module defines -> the private methods its body defines."""
    loaded = importlib.import_module(f'evalscope_niah.integration.{module}')
    return {
        getattr(loaded, node.name): [
            item.name
            for item in node.body
            if isinstance(item, ast.FunctionDef) and item.name.startswith('_') and not item.name.startswith('__')
        ]
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }


def _evalscope_private_names() -> dict[str, str]:
    """Private names the integration code takes from EvalScope -> where: attributes it reads that our code never
    defines, and methods it defines that override one of an EvalScope base class."""
    trees = {path.stem: ast.parse(path.read_text(encoding='utf-8')) for path in INTEGRATION_DIR.glob('*.py')}
    ours: set[str] = set()
    found: dict[str, str] = {}
    for module, tree in trees.items():
        classes = _class_methods(module, tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                ours.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                ours.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                ours.add(node.name)
        for cls, methods in classes.items():
            bases = [base for base in cls.__mro__[1:] if base.__module__.startswith('evalscope.')]
            found.update({n: f'{module}.{cls.__name__}' for n in methods if any(hasattr(b, n) for b in bases)})
    for module, tree in trees.items():
        for node in ast.walk(tree):
            private = isinstance(node, ast.Attribute) and node.attr.startswith('_') and not node.attr.startswith('__')
            if private and node.attr not in ours:
                found.setdefault(node.attr, f'{module}.py:{node.lineno}')
    return found


def test_every_private_evalscope_name_the_integration_code_uses_is_listed() -> None:
    used = _evalscope_private_names()
    assert {'_on_inference', '_task_config', '_collect_work_items', '_update'} <= used.keys()  # the scan sees them
    listed = {hook.attribute for hook in HOOKS}
    assert {name: where for name, where in used.items() if name not in listed} == {}


def _pyproject_evalscope_range() -> str:
    text = PYPROJECT.read_text(encoding='utf-8')
    match = re.search(r'^\s*"evalscope\s*([<>=!~][^"]*)",?\s*$', text, re.MULTILINE)
    assert match, 'pyproject.toml declares no evalscope requirement'
    return match.group(1).replace(' ', '')


def test_the_tested_range_is_the_one_pyproject_declares_and_the_installed_evalscope_is_in_it() -> None:
    tested = evalscope_surface.tested_evalscope_range()  # not imported by name: pytest would collect it
    assert tested is not None, 'evalscope-niah is not installed: pip install -e . reads its requirement'
    assert SpecifierSet(tested) == SpecifierSet(_pyproject_evalscope_range()), (
        'the installed metadata disagrees with pyproject.toml: reinstall (pip install -e .)'
    )
    assert SpecifierSet(tested).contains(importlib.metadata.version('evalscope'), prereleases=True)
