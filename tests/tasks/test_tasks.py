"""Task types: the registry, each built-in task's planning and rule score, and a fourth task added as one class."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalscope_niah.cli import main
from evalscope_niah.errors import NiahConfigError
from evalscope_niah.metadata import GridCell, SampleMeta
from evalscope_niah.scoring import PromptText
from evalscope_niah.tasks import (
    ABSENT_CONTROL,
    get_task,
    score_answer,
    task_for,
    task_names,
    unregister_task,
)
from evalscope_niah.tasks.compose import parse_params
from evalscope_niah.tasks.kit import NeedleChoice, PlanContext, ReportedValue, RuleScore, Task, register_task


class AccessCode(Task):
    """A tiny fourth task: one invented access code per depth, scored by the code's presence."""

    name = 'access_code'
    description = 'one invented access code, scored by its presence'

    def choose(self, context: PlanContext, cell: GridCell, *, seed: int) -> NeedleChoice:
        code = f'{seed % 900_000 + 100_000}'
        return NeedleChoice(
            needles=(f'The access code of the vault is {code}.',),
            question='What is the access code of the vault?',
            reference_answer=code,
            answer_keys=(code,),
        )

    def rule_score(self, answer: str, meta: SampleMeta, *, prompt: PromptText | None = None) -> RuleScore:
        found = meta.answer_keys[0] in answer
        return RuleScore(values={'acc': float(found)}, explanation='code stated' if found else 'code missing')


@pytest.fixture
def access_code_task() -> Iterator[None]:
    register_task(AccessCode)
    try:
        yield
    finally:
        unregister_task(AccessCode.name)


def _meta(task: str, **overrides) -> SampleMeta:
    values = dict(
        subset='english',
        language='en',
        task=task,
        context_length=1000,
        depth_percent=50.0,
        repeat=0,
        pick=0,
        needles=('The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.',),
        question='What is the best thing to do in San Francisco?',
        reference_answer='eat a sandwich and sit in Dolores Park on a sunny day',
        answer_keys=('eat a sandwich and sit in Dolores Park on a sunny day',),
        start_token=0,
        divergence_token=500,
    )
    values.update(overrides)
    return SampleMeta(**values)


def test_a_fourth_task_is_one_class_and_runs_through_preview(
    access_code_task: None, fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    assert 'access_code' in task_names()
    output = tmp_path / 'samples.jsonl'
    dataset_args = {
        'local_path': str(fixture_corpus_dir),
        'extra_params': {'task': 'access_code', 'context_lengths': [600], 'document_depth_percents': [0, 100]},
    }
    assert main(['preview', '--dataset-args', json.dumps(dataset_args), '--output', str(output)]) == 0
    rows = [json.loads(line) for line in output.read_text(encoding='utf-8').splitlines()]
    assert len(rows) == 4  # 2 subsets x 2 depths
    for row in rows:
        assert row['task'] == 'access_code'
        assert row['prompt_tokens'] == 600
        user = row['messages'][-1]['content']
        assert row['needles'][0] in user and 'What is the access code of the vault?' in user
        meta = SampleMeta.from_dict(row)
        assert score_answer(f'It is {row["answer_keys"][0]}.', meta).accuracy == 1.0
        assert score_answer('I do not know.', meta).accuracy == 0.0


def test_unknown_task_names_the_registered_ones() -> None:
    with pytest.raises(NiahConfigError) as error:
        parse_params({'task': 'access_code'})
    assert error.value.param == 'task'
    names = task_names()
    assert ', '.join(map(repr, names[:-1])) + f' or {names[-1]!r}' in str(error.value)
    assert 'access_code' not in names
    with pytest.raises(NiahConfigError):
        get_task('nope')


def test_a_second_class_cannot_take_a_registered_name() -> None:
    class Impostor(AccessCode):
        name = 'single'

    with pytest.raises(ValueError, match='already registered'):
        register_task(Impostor)
    assert type(get_task('single')).__name__ == 'SingleNeedle'


def test_which_tasks_are_judged() -> None:
    assert get_task('single').is_judged(_meta('single'))
    assert not get_task('single').is_judged(_meta('single', depth_percent=None))  # a control is scored by rule
    assert not get_task('multi_retrieval').is_judged(_meta('multi_retrieval'))
    assert not get_task('reasoning').is_judged(_meta('reasoning'))
    # Every registered task: judged exactly when it says so, never on a control cell.
    for name in task_names():
        task = get_task(name)
        assert task.is_judged(_meta(name)) is task.judged, name
        assert not task.is_judged(_meta(name, depth_percent=None)), name


def test_control_cells_are_scored_by_the_control_whatever_their_task() -> None:
    control = _meta('reasoning', depth_percent=None, answer_keys=('Jack',))
    assert task_for(control) is ABSENT_CONTROL
    assert score_answer('The document does not say.', control).values['abstained'] == 1.0
    assert score_answer('Jack.', control).values['guessed'] == 1.0


def test_single_needle_rule_score_and_certainty() -> None:
    meta = _meta('single')
    right = score_answer('Eat a sandwich and sit in Dolores Park on a sunny day.', meta)
    assert right.accuracy >= 0.9 and right.certain
    wrong = score_answer('Go to the Golden Gate Bridge.', meta)
    assert wrong.accuracy <= 0.3


def test_single_needle_reported_recall_follows_evidence_not_length() -> None:
    meta = _meta('single')
    needle = meta.needles[0]
    filler = 'The harbour town traded wool, salt and timber with ports far across the grey northern sea. '
    shown = PromptText(shown=filler * 40 + needle + ' ' + filler * 40 + meta.question)
    verbose = (
        f'Based on the document, the answer is to eat a sandwich and sit in Dolores Park on a sunny day. It says: '
        f'"{needle}" That sentence is the only one about the city, and it answers the question directly, so there is '
        'little else to add: a simple afternoon outdoors with a meal in a well loved park is what the author means.'
    )
    right = score_answer(verbose, meta, prompt=shown)
    assert (right.accuracy, right.values['rule_recall'], right.certain) == (1.0, 1.0, True)
    pasted = score_answer(filler * 5 + needle + ' ' + filler * 5, meta, prompt=shown)
    assert pasted.accuracy <= 0.3 and pasted.values['rule_recall'] <= pasted.accuracy


def test_multi_retrieval_rule_score_counts_each_value() -> None:
    meta = _meta('multi_retrieval', answer_keys=('1234567', '7654321'), reference_answer='1234567, 7654321')
    both = score_answer('1234567 and 7654321', meta)
    one = score_answer('1234567', meta)
    assert both.accuracy == 1.0 and both.values['rule_recall'] == 1.0
    assert one.values['rule_recall'] == 0.5 and one.accuracy < 1.0


def test_reasoning_rule_score_needs_the_keyword() -> None:
    meta = _meta('reasoning', answer_keys=('Jack',), reference_answer='Jack')
    assert score_answer('Jack', meta).accuracy == 1.0
    assert score_answer('Jackie', meta).accuracy < 1.0


def test_metadata_round_trips_through_json() -> None:
    meta = _meta('single').with_build(prompt_tokens=1000, achieved_depth_percents=(49.5,), tokenizer='Qwen')
    again = SampleMeta.from_dict(json.loads(json.dumps(meta.to_dict())))
    assert again == meta
    assert again.cell == GridCell('english', 1000, 50.0, 0, 0)


def test_task_data_round_trips_and_metadata_of_older_versions_still_reads() -> None:
    from evalscope_niah.tasks.associative.task import AssociativeData
    from evalscope_niah.tasks.multi_retrieval.task import MultiRetrievalData

    meta = _meta('associative', task_data=AssociativeData(candidates=('Yuki', 'Omar'), judge_hint='hop').to_json())
    again = SampleMeta.from_dict(json.loads(json.dumps(meta.to_dict())))
    assert again == meta and AssociativeData.of(again) == AssociativeData(candidates=('Yuki', 'Omar'), judge_hint='hop')
    assert get_task('associative').judge_reference(again) == f'{meta.reference_answer} (hop)'
    # Metadata cached by a version before task_data: the task's fields at the top level, the hop in `extra`.
    old = {k: v for k, v in meta.to_dict().items() if k != 'task_data'}
    old.update(candidates=['Yuki', 'Omar'], distractor_values=['1234567'], extra={'judge_context': 'hop'})
    restored = SampleMeta.from_dict(old)
    assert AssociativeData.of(restored) == AssociativeData(candidates=('Yuki', 'Omar'), judge_hint='hop')
    assert MultiRetrievalData.of(restored) == MultiRetrievalData(distractor_values=('1234567',))
    # Metadata comes back from EvalScope's files: a value of the wrong kind is refused, not iterated character-wise.
    for wrong in ({'candidates': 'Yuki'}, {'judge_hint': ['hop']}):
        with pytest.raises(ValueError, match=f'AssociativeData.{next(iter(wrong))} must be'):
            AssociativeData.of(dataclasses.replace(meta, task_data=wrong))


def test_a_task_parameter_name_has_one_owner() -> None:
    from pydantic import Field, create_model

    from evalscope_niah.params.run_params import TaskParams

    for taken in ('diff', 'context_lengths_min', 'min_context'):  # another task's, the run's, an alias
        clashing = create_model('Clashing', __base__=TaskParams, **{taken: (float, Field(1.0, description='x'))})

        class Clash(AccessCode):
            name = 'clash'
            params_model = clashing

        with pytest.raises(ValueError, match=f'parameter {taken!r} is already a parameter of'):
            register_task(Clash)
        assert 'clash' not in task_names()


def test_a_reported_value_name_has_one_meaning() -> None:
    # multi_retrieval reports 'precision' (higher is better): another task may share it only with the same meaning.
    class SamePrecision(AccessCode):
        name = 'same_precision'
        reported_values = (ReportedValue('precision', 'Precision', measure='precision'),)

    class OtherPrecision(AccessCode):
        name = 'other_precision'
        reported_values = (ReportedValue('precision', 'Share wrong', measure='error_rate'),)

    register_task(SamePrecision)
    try:
        with pytest.raises(ValueError, match="reported value 'precision' is already declared by task"):
            register_task(OtherPrecision)
        assert 'other_precision' not in task_names()
    finally:
        unregister_task(SamePrecision.name)
