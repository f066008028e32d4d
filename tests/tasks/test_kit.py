"""The task author's kit (evalscope_niah.tasks.kit): every name of its __all__ resolves, is defined once in its home
module and is that very object there, and is said what it is for; a task written only against the kit (the
development page's Counting-Stars, run from the page) passes the conformance table on its real samples; the rule
glue (RuleTarget, Task.check) and the older way (overriding rule_score) both score."""

from __future__ import annotations

import ast
import dataclasses
import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import evalscope_niah
from evalscope_niah.metadata import SampleMeta
from evalscope_niah.tasks import get_task, kit, register_task, score_answer, task_names, unregister_task
from evalscope_niah.testing.conformance import CATEGORIES, answers, describe, meets, planned_samples, score
from tests.support.docs import kit_example, load_kit_example

PACKAGE = Path(evalscope_niah.__file__).parent


def _definitions() -> dict[str, list[str]]:
    """Each top-level name defined (def, class, assignment) anywhere in the package, with the modules defining it."""
    found: dict[str, list[str]] = {}
    for path in PACKAGE.rglob('*.py'):
        module = '.'.join(path.relative_to(PACKAGE.parent).with_suffix('').parts).removesuffix('.__init__')
        for node in ast.parse(path.read_text(encoding='utf-8')).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [target.id for target in node.targets if isinstance(target, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            else:
                continue
            for name in names:
                found.setdefault(name, []).append(module)
    return found


def _kit_imports() -> dict[str, str]:
    """Each name the kit imports, with the module it imports it from."""
    tree = ast.parse(Path(kit.__file__).read_text(encoding='utf-8'))
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            package = kit.__name__.rpartition('.')[0].split('.')
            base = '.'.join(package[: len(package) - node.level + 1])
            for alias in node.names:
                found[alias.name] = f'{base}.{node.module}' if node.module else base
    return found


def test_every_kit_name_is_its_homes_object_defined_once() -> None:
    definitions, imported = _definitions(), _kit_imports()
    assert len(kit.__all__) == len(set(kit.__all__))
    for name in kit.__all__:
        home = imported.get(name)
        assert home is not None, f'{name} is not imported by the kit from its home'
        assert home in definitions.get(name, []), f'{name}: {home} imports it too; import it from where it is defined'
        others = [module for module in definitions[name] if module != home]
        assert not others, f'{name} is defined again in {others}'
        assert getattr(kit, name) is getattr(importlib.import_module(home), name), f'{name} is not the object of {home}'


def test_every_kit_name_says_what_it_is_for() -> None:
    doc = kit.__doc__ or ''
    undocumented = [name for name in kit.__all__ if f'* ``{name}``: ' not in doc]
    assert not undocumented, f'the kit docstring says nothing of {undocumented}'


def test_the_kit_names_what_a_gaming_resistant_rule_needs() -> None:
    needed = {
        'Task', 'NeedleChoice', 'PlanContext', 'SampleData', 'ReportedValue', 'RuleScore', 'PromptText', 'RuleTarget',
        'register_task', 'with_levenshtein', 'cue_near', 'excluded_cue_text', 'MAX_SCAN_CHARS', 'CERTAIN_PASS',
        'UNCERTAIN_SCORE_CAP', 'RULE_PASS_THRESHOLD', 'paste_evidence', 'normalise', 'key_share', 'check_language',
        'text_language', 'one_candidate_score', 'needle_recall',
    }  # fmt: skip
    assert needed <= set(kit.__all__), sorted(needed - set(kit.__all__))


# --- the docs' example task, written only against the kit ------------------------------------------------------


@pytest.fixture(scope='module')
def counting_stars(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    module = load_kit_example(tmp_path_factory.mktemp('kit'))  # importing it registers the task, as the docs say
    try:
        yield module
    finally:
        unregister_task('counting_stars')


def test_the_example_imports_only_the_kit() -> None:
    imported = {
        node.module
        for node in ast.walk(ast.parse(kit_example()))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith('evalscope_niah')
    }
    assert imported == {'evalscope_niah.tasks.kit'}


def test_the_chinese_page_shows_the_same_example() -> None:
    """The same code; its comments are in the page's language (ast drops comments, keeps every string)."""
    assert ast.dump(ast.parse(kit_example('zh'))) == ast.dump(ast.parse(kit_example('en')))


def test_the_examples_chinese_description_reaches_the_docs(counting_stars: ModuleType) -> None:
    import runpy

    hook = runpy.run_path(str(Path(__file__).resolve().parents[2] / 'docs' / 'hooks' / 'parameters_table.py'))
    listed = hook['tasks_list']('zh')
    assert f'- `task: counting_stars`: {counting_stars.CountingStars.description_zh}' in listed


def test_the_example_passes_the_conformance_table(counting_stars: ModuleType, fixture_corpus_dir: Path) -> None:
    assert 'counting_stars' in task_names()
    samples = planned_samples('counting_stars', fixture_corpus_dir)
    assert [sample.prompt_tokens for sample in samples] == [sample.meta.context_length for sample in samples]
    # needle_depths spread the four needles: each prompt holds them in the order of the answer keys
    for sample in samples:
        shown = sample.prompt.shown
        assert sorted(shown.index(needle) for needle in sample.meta.needles) == [
            shown.index(needle) for needle in sample.meta.needles
        ]
    table = answers('counting_stars', samples)
    assert {answer.category for answer in table} == set(CATEGORIES)
    missed = [
        f'{answer.label} expected {answer.expected}: {answer.answer[:80]!r} -> {describe(verdict)}'
        for answer in table
        if not meets(answer, verdict := score(answer))
    ]
    assert not missed, '\n'.join(missed)


# --- the rule glue ----------------------------------------------------------------------------------------------


def _meta(task: str, *, depth: float | None = 50.0) -> SampleMeta:
    return SampleMeta(
        subset='english',
        language='en',
        task=task,
        context_length=1000,
        depth_percent=depth,
        repeat=0,
        pick=0,
        needles=('The beacon on the hill is teal.',),
        question='What colour is the beacon on the hill?',
        reference_answer='teal',
        answer_keys=('teal',),
        start_token=0,
        divergence_token=0,
    )


class _Checked(kit.Task):
    name = 'kit_checked'

    def choose(self, context, cell, *, seed):  # pragma: no cover - never planned here
        raise NotImplementedError

    def check(self, answer: str, target: kit.RuleTarget) -> kit.RuleScore:
        # What the target carries, read back: the sample's own fields and the prompt.
        seen = (target.needles, target.question, target.language, target.reference, target.key, target.prompt)
        return kit.RuleScore(values={'acc': float(target.key in answer)}, evidence={'seen': seen})


class _Overriding(kit.Task):  # the way before check: rule_score overridden, as older plugins do
    name = 'kit_overriding'

    def choose(self, context, cell, *, seed):  # pragma: no cover - never planned here
        raise NotImplementedError

    def rule_score(self, answer, meta, *, prompt=None):
        return kit.RuleScore(values={'acc': float(meta.answer_keys[0] in answer)})


@pytest.fixture
def glue_tasks() -> Iterator[None]:
    for task in (_Checked, _Overriding):
        register_task(task)
    try:
        yield
    finally:
        for task in (_Checked, _Overriding):
            unregister_task(task.name)


def test_check_gets_the_target_and_levenshtein_is_added_once_for_all(glue_tasks: None) -> None:
    prompt = kit.PromptText(shown='the prompt')
    meta = _meta('kit_checked')
    rule = score_answer('teal', meta, prompt=prompt)
    assert rule.values == {'acc': 1.0, 'levenshtein': 1.0}
    assert rule.evidence['seen'] == (meta.needles, meta.question, 'en', 'teal', 'teal', prompt)
    assert score_answer('It is green.', meta).values['acc'] == 0.0
    assert 0.0 < score_answer('teal!', meta).values['levenshtein'] < 1.0


def test_a_task_overriding_rule_score_still_scores(glue_tasks: None) -> None:
    assert score_answer('teal', _meta('kit_overriding')).values == {'acc': 1.0}
    assert get_task('kit_overriding').rule_score('green', _meta('kit_overriding')).accuracy == 0.0


def test_a_task_without_a_rule_is_refused() -> None:
    class Ruleless(kit.Task):
        name = 'ruleless'

        def choose(self, context, cell, *, seed):  # pragma: no cover - refused before
            raise NotImplementedError

    with pytest.raises(TypeError, match=r'does not define check;.*check\(answer, target\)'):
        register_task(Ruleless)
    assert 'ruleless' not in task_names()


def test_target_key_refuses_a_sample_without_keys() -> None:
    target = kit.RuleTarget.of(dataclasses.replace(_meta('single'), answer_keys=()))
    with pytest.raises(ValueError, match='no answer key'):
        _ = target.key


def test_the_builtin_tasks_take_the_kits_names_from_the_kit() -> None:
    """The kit is the one import path for authors, and the built-in tasks are written as an author writes one."""
    offenders = []
    for path in sorted((PACKAGE / 'tasks').glob('*/*.py')):
        for node in ast.parse(path.read_text(encoding='utf-8')).body:
            if isinstance(node, ast.ImportFrom) and node.level and node.module != 'kit':
                offenders += [f'{path.parent.name}/{path.name}: {a.name}' for a in node.names if a.name in kit.__all__]
    assert offenders == []


def test_every_kit_function_and_task_hook_has_a_docstring() -> None:
    """An author learns what a piece does, when it is called and what it returns from its docstring, not its source."""
    import inspect

    from evalscope_niah.tasks.base import Task

    missing = [name for name in kit.__all__ if callable(getattr(kit, name)) and not inspect.getdoc(getattr(kit, name))]
    hooks = [name for name, member in vars(Task).items() if inspect.isfunction(member) and not name.startswith('_')]
    missing += [f'Task.{name}' for name in hooks if not (vars(Task)[name].__doc__ or '').strip()]
    assert missing == []
