"""One conformance suite over every registered task, the built-in ones and any a test registers (here the
vault_code folder task): its real samples (as preview plans them) have exactly their lengths; the reference and a
verbose right answer pass, the empty answer, another entity, a negation, a paste of the prompt, a dump and a name
list do not (evalscope_niah/testing/conformance.py derives them from each sample: the checks a plugin runs with
check_task); a run answering every sample right carries the task's declared values into the results file, the
cells CSV and the report. A task is covered the day it is registered."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalscope_niah.tasks import get_task, plugin_tasks, register_task, task_names, unregister_task
from evalscope_niah.testing.conformance import (
    CATEGORIES,
    Sample,
    answers,
    conformance_misses,
    meets,
    planned_samples,
    score,
)
from tests.support.vault_code.task import VaultCode

# Registered by this module's fixture; every other task comes from the registry as it stands, less the tasks of
# other installed packages (a plugin runs this suite in its own tests: a weak one must not fail ours).
TEST_TASKS = (VaultCode,)
TASKS = (*(name for name in task_names() if name not in plugin_tasks()), *(task.name for task in TEST_TASKS))
# Categories every task gets whatever its samples (a dump and a name list need enough distinct entities).
ALWAYS = {'reference', 'verbose right', 'empty', 'other entity', 'negation', 'paste'}


@pytest.fixture(scope='module', autouse=True)
def registered() -> Iterator[None]:
    added = [task for task in TEST_TASKS if task.name not in task_names()]
    for task in added:
        register_task(task)
    try:
        yield
    finally:
        for task in added:
            unregister_task(task.name)


@pytest.fixture(scope='module')
def samples(fixture_corpus_dir: Path) -> dict[str, list[Sample]]:
    return {task: planned_samples(task, fixture_corpus_dir) for task in TASKS}


def test_every_registered_task_is_in_the_suite() -> None:
    assert set(task_names()) - set(plugin_tasks()) == set(TASKS)


@pytest.mark.parametrize('task', TASKS)
def test_preview_lengths_are_exact(task: str, samples: dict[str, list[Sample]]) -> None:
    planned = samples[task]
    assert len(planned) == 2 * 2 * 3 * 2  # subsets x lengths x depths x repeats
    assert {sample.meta.task for sample in planned} == {task}
    assert [sample.prompt_tokens for sample in planned] == [sample.meta.context_length for sample in planned]


@pytest.mark.parametrize('task', TASKS)
def test_right_answers_pass_and_wrong_ones_fail(task: str, samples: dict[str, list[Sample]]) -> None:
    assert {answer.category for answer in answers(task, samples[task])} >= ALWAYS
    missed = conformance_misses(task, samples[task])
    assert not missed, '\n'.join(missed)


def test_the_table_has_every_category_somewhere(samples: dict[str, list[Sample]]) -> None:
    found = {answer.category for task in TASKS for answer in answers(task, samples[task])}
    assert found == set(CATEGORIES)


# --- declared values reach the results, the cells CSV and the report ----------------------------------------------


@pytest.mark.parametrize('task', TASKS)
def test_declared_values_reach_results_cells_and_report(task: str, fixture_corpus_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip('evalscope')
    from evalscope import TaskConfig, run_task

    from evalscope_niah.reporting.outputs import CELLS_FILE, RESULTS_FILE
    from evalscope_niah.reporting.result_files import read_cells_csv, read_results
    from evalscope_niah.testing.openai_server import OpenAICompatServer
    from tests.support.tasks import task_settings

    grid = {'context_lengths': [600], 'document_depth_percents': [0, 100]}
    # The run plans the same samples as preview on the same grid: the reader answers each from them.
    planned = planned_samples(task, fixture_corpus_dir, grid=grid, subsets=['english'])
    references = [(sample.meta.question, sample.meta.needles, sample.meta.reference_answer) for sample in planned]

    def reader(messages: list[dict]) -> str:
        """A model that retrieves: the reference of the sample whose question and needles the prompt shows."""
        user = messages[-1]['content']
        (answer,) = {
            ref for question, needles, ref in references if question in user and all(n in user for n in needles)
        }
        return answer

    with OpenAICompatServer({'mock-model': reader}) as server:
        settings = task_settings(
            server,
            fixture_corpus_dir,
            tmp_path / 'run',
            model='mock-model',
            extra={'task': task, **grid},
            subsets=['english'],
            generation_config={'retries': 0},
        )
        run_task(TaskConfig(**settings))
    declared = {value.name: value for value in get_task(task).reported_values}
    results = read_results(next((tmp_path / 'run').rglob(RESULTS_FILE)))
    assert len(results) == 2 and all(result.accuracy == 1.0 for result in results), results
    assert all(set(result.task_values) == set(declared) for result in results)
    (cells_csv,) = (tmp_path / 'run').rglob(CELLS_FILE)
    header = cells_csv.read_text(encoding='utf-8').splitlines()[0].split(',')
    assert set(declared) <= set(header)
    assert all(set(declared) <= set(cell.task_values) for cell in read_cells_csv(cells_csv))
    report = json.loads(next((tmp_path / 'run').rglob('needle_haystack.json')).read_text(encoding='utf-8'))
    semantics = {metric['identity']['name']: metric['semantics'] for metric in report['metrics']}
    for name in declared:
        assert semantics[name]['display_unit'] == '%', (name, semantics[name])
    assert 'accuracy' in semantics  # the shared value is reported beside them


# --- the suite sees order and parts -------------------------------------------------------------------------------


def test_an_order_blind_rule_on_an_ordered_answer_is_caught(
    samples: dict[str, list[Sample]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task whose answer is an ordered list but whose rule ignores order (multi_retrieval's rule, declared ordered
    here): reversed and rotated answers score 1.0, and the suite names them as misses."""
    from evalscope_niah.tasks import MultiRetrieval

    monkeypatch.setattr(MultiRetrieval, 'ordered_answer', True)
    table = answers('multi_retrieval', samples['multi_retrieval'])
    assert {answer.category for answer in table if not meets(answer, score(answer))} == {'reversed', 'rotated'}


def test_credit_for_parts_is_held_to_the_declaration(
    samples: dict[str, list[Sample]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Declared without partial credit, a rule that gives a share for part of the keys is caught; the duplicated
    answer (one key said three times) never scores more than the key alone, either way."""
    from evalscope_niah.tasks import MultiRetrieval

    monkeypatch.setattr(MultiRetrieval, 'partial_credit', False)
    table = answers('multi_retrieval', samples['multi_retrieval'])
    assert {answer.category for answer in table if not meets(answer, score(answer))} == {'partial'}
