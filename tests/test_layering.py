"""The package's shape, checked by reading its source: EvalScope stays in integration/, no import circles, no
long functions, no module over the bound."""

from __future__ import annotations

import ast
from pathlib import Path

import evalscope_niah

PACKAGE_DIR = Path(evalscope_niah.__file__).parent
INTEGRATION = 'evalscope_niah.integration'
MAX_FUNCTION_LINES = 60
# Past this a module does several jobs.
MAX_MODULE_LINES = 500


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def _modules() -> dict[str, ast.Module]:
    return {_module_name(path): ast.parse(path.read_text(encoding='utf-8')) for path in PACKAGE_DIR.rglob('*.py')}


def _is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and 'TYPE_CHECKING' in ast.unparse(node.test)


def _imports(module: str, tree: ast.Module, *, type_checking: bool = False) -> set[str]:
    """Every module imported anywhere in the file (function bodies too), relative imports resolved; imports that
    exist only for type checkers are left out (they never run) unless ``type_checking``."""
    package = module if module.endswith('__init__') else module.rpartition('.')[0]
    is_package = (PACKAGE_DIR.parent / module.replace('.', '/') / '__init__.py').is_file()
    if is_package:
        package = module
    found: set[str] = set()
    skipped = (
        set()
        if type_checking
        else {id(child) for node in ast.walk(tree) if _is_type_checking_block(node) for child in ast.walk(node)}
    )
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split('.')
                base = base[: len(base) - node.level + 1]
                prefix = '.'.join(base)
                target = f'{prefix}.{node.module}' if node.module else prefix
            else:
                target = node.module or ''
            found.add(target)
            # `from . import x` imports the submodule x.
            found.update(f'{target}.{alias.name}' for alias in node.names)
    return found


def test_only_the_integration_package_imports_evalscope() -> None:
    offenders = {
        module: sorted(name for name in _imports(module, tree) if name == 'evalscope' or name.startswith('evalscope.'))
        for module, tree in _modules().items()
        if not module.startswith(INTEGRATION)
    }
    assert {module: names for module, names in offenders.items() if names} == {}


def test_no_module_imports_back_into_a_module_that_imports_it() -> None:
    """Imports for type checkers count: a circle they close still ties the two modules together."""
    modules = _modules()
    graph = {
        module: {name for name in _imports(module, tree, type_checking=True) if name in modules and name != module}
        for module, tree in modules.items()
    }
    # A package importing its own submodules is how a package's public face works, not a circle.
    cycles = []
    for start in graph:
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for nxt in graph[node]:
                if nxt == start and not all(part.startswith(start + '.') for part in path[1:]):
                    cycles.append([*path, start])
                elif nxt not in seen and not nxt.startswith(start + '.') and not start.startswith(nxt + '.'):
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    assert cycles == []


# The only long functions allowed: each is being split by another change right now. Key: path under
# evalscope_niah/, a colon, the qualified name (Class.method, outer.inner).
LONG_FUNCTIONS_OWNED_ELSEWHERE: frozenset[str] = frozenset()


def _function_lengths(tree: ast.Module) -> dict[str, int]:
    """Every function and method by qualified name, with its length: from the `def` line to the last line of its
    body, decorators excluded (a nested function counts in its outer one too, and on its own)."""
    lengths: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lengths[prefix + child.name] = child.end_lineno - child.lineno + 1
                visit(child, f'{prefix}{child.name}.')
            elif isinstance(child, ast.ClassDef):
                visit(child, f'{prefix}{child.name}.')
            else:
                visit(child, prefix)

    visit(tree, '')
    return lengths


def _long_functions() -> dict[str, int]:
    return {
        f'{path.relative_to(PACKAGE_DIR).as_posix()}:{name}': length
        for path in sorted(PACKAGE_DIR.rglob('*.py'))
        for name, length in _function_lengths(ast.parse(path.read_text(encoding='utf-8'))).items()
        if length > MAX_FUNCTION_LINES
    }


def test_no_function_is_long() -> None:
    """No function or method is over MAX_FUNCTION_LINES (60) lines, counted from its `def` line to the last line
    of its body, decorators excluded; split a longer one into named steps. No excuse is accepted: only the
    functions another change is splitting right now are listed (LONG_FUNCTIONS_OWNED_ELSEWHERE), and an entry
    that is no longer long must go, so the list only shrinks."""
    long_ones = _long_functions()
    assert (
        sorted(
            f'{name} ({length} lines)'
            for name, length in long_ones.items()
            if name not in LONG_FUNCTIONS_OWNED_ELSEWHERE
        )
        == []
    )
    assert sorted(LONG_FUNCTIONS_OWNED_ELSEWHERE - set(long_ones)) == [], 'no longer long: remove from the list'


def test_the_function_length_reader_can_fail() -> None:
    """Decorators are left out, methods and nested functions are named by their path, the body's last line counts."""
    source = (
        '@decorator\n@another\ndef top():\n    def inner():\n        return 1\n\n    return inner\n'
        'class Box:\n    @property\n    def size(self):\n        return (\n            1\n        )\n'
    )
    assert _function_lengths(ast.parse(source)) == {'top': 5, 'top.inner': 2, 'Box.size': 4}


def test_no_module_is_long() -> None:
    """A module over the bound does several jobs: split it by job (no excuse is accepted for a module, unlike a
    function whose steps read best as one sequence)."""
    long_ones = []
    for path in PACKAGE_DIR.rglob('*.py'):
        lines = path.read_text(encoding='utf-8').splitlines()
        if len(lines) > MAX_MODULE_LINES:
            long_ones.append(f'{path.relative_to(PACKAGE_DIR)} ({len(lines)} lines)')
    assert long_ones == []


def test_the_checks_above_can_fail(tmp_path: Path) -> None:
    """The import reader sees function-level and relative imports, and skips TYPE_CHECKING blocks."""
    source = (
        'from typing import TYPE_CHECKING\n'
        'from ..integration import adapter\n'
        'if TYPE_CHECKING:\n    from ..samples import SampleMeta\n'
        'def f():\n    import evalscope.api\n'
    )
    found = _imports('evalscope_niah.tasks.base', ast.parse(source))
    assert 'evalscope.api' in found
    assert 'evalscope_niah.integration' in found and 'evalscope_niah.integration.adapter' in found
    assert 'evalscope_niah.samples' not in found
    assert 'evalscope_niah.samples' in _imports('evalscope_niah.tasks.base', ast.parse(source), type_checking=True)


# The floors of the package, lowest first: a module imports only from its own floor or a lower one. The order is
# the pipeline's: shared words and files; then scoring texts and talking to servers (neither needs a parameter);
# the parameters; the tasks (they read the run's parameters, and compose them with their own, so composition is
# tasks.compose); making samples (asks the tasks); judging; reporting (reads the tasks' reported values, the judge's
# prompt) and the test server (plays a model and a judge); the EvalScope integration; the entry points.
FLOORS: tuple[frozenset[str], ...] = (
    frozenset(
        {
            'errors',
            'vocabulary',
            'metadata',
            'atomic',
            'disk_space',
            'work_dir_lock',
            'escaping',
            'safe_names',
            'safe_files',
            'cache_home',
            'torn_lines',
            'languages',
            'corpus_format',
            'length_verdict',
        }
    ),
    frozenset({'scoring', 'serving'}),
    frozenset({'params'}),
    frozenset({'tasks'}),
    frozenset({'making'}),
    frozenset({'judging'}),
    frozenset({'reporting', 'testing'}),
    frozenset({'integration'}),
    frozenset({'cli', 'cli_args', 'demo', '_autoload'}),
)


def _floor(module: str) -> int | None:
    """The floor of a package module by its first name under the package; None for the package root, which Python
    loads before any module of the package (importing its ``__version__`` adds no dependency)."""
    parts = module.split('.')
    if len(parts) == 1:
        return None
    found = [index for index, floor in enumerate(FLOORS) if parts[1] in floor]
    assert found, f'{module} is on no floor: add its folder to FLOORS'
    return found[0]


def _upward_imports(modules: dict[str, ast.Module]) -> list[str]:
    upward = []
    for module, tree in modules.items():
        floor = _floor(module)
        for name in _imports(module, tree, type_checking=True):
            target = name if name in modules else name.rpartition('.')[0]
            if target not in modules or floor is None:
                continue
            target_floor = _floor(target)
            if target_floor is not None and target_floor > floor:
                upward.append(f'{module} -> {target}')
    return sorted(set(upward))


def test_every_module_imports_only_its_floor_or_lower() -> None:
    """No exceptions: an upward import means the lower module does a higher floor's job (move it, or the shared
    value it needs, down)."""
    assert _upward_imports(_modules()) == []


def test_the_floor_check_can_fail() -> None:
    source = 'from ..tasks import get_task\nfrom ..errors import NiahConfigError\n'
    modules = {
        'evalscope_niah.params.bad': ast.parse(source),
        'evalscope_niah.tasks': ast.parse(''),
        'evalscope_niah.errors': ast.parse(''),
    }
    assert _upward_imports(modules) == ['evalscope_niah.params.bad -> evalscope_niah.tasks']


# What every task builds on; each task folder (tasks/single/, ...) sits above them, so none of them imports one.
TASK_FOUNDATION = ('evalscope_niah.tasks.base', 'evalscope_niah.tasks.registry', 'evalscope_niah.tasks.answer_format')


def test_the_task_type_knows_no_task() -> None:
    """A task is its folder: the task type, the registry and the guide name none (the package registers them)."""
    modules = _modules()
    folders = {
        module.split('.')[2]
        for module in modules
        if module.startswith('evalscope_niah.tasks.') and len(module.split('.')) > 3
    }
    found = {
        module: sorted(
            name
            for name in _imports(module, modules[module], type_checking=True)
            if name.startswith('evalscope_niah.tasks.') and name.split('.')[2] in folders
        )
        for module in TASK_FOUNDATION
    }
    assert folders >= {'single', 'multi_retrieval', 'reasoning', 'associative', 'control'}
    assert {module: names for module, names in found.items() if names} == {}
