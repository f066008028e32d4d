"""The hooks only the single task has are a capability it implements, asked for by type; every other task gets what
the base contract implies."""

from __future__ import annotations

from pathlib import Path

from evalscope_niah.metadata import SampleMeta
from evalscope_niah.tasks import Task, get_task, task_names
from evalscope_niah.tasks.compose import parse_params
from evalscope_niah.tasks.single.hooks import (
    NeedleSourceHooks,
    calibration_values,
    check_run_params,
    corpus_folder_params,
    picks_for_subset,
    sent_texts,
)

HOOKS = (
    'asks_user_needles',
    'check_params',
    'needles_per_cell',
    'picks',
    'with_corpus_folder',
    'calibration_values',
    'sent_texts',
)


def test_the_base_contract_has_none_of_the_single_tasks_hooks() -> None:
    assert [hook for hook in HOOKS if hasattr(Task, hook)] == []
    assert [name for name in task_names() if isinstance(get_task(name), NeedleSourceHooks)] == ['single']


def test_a_task_without_the_hooks_gets_the_plain_answers(tmp_path: Path) -> None:
    task = get_task('multi_retrieval')
    params = parse_params({'task': 'multi_retrieval'})
    assert check_run_params(task, params) is None
    assert picks_for_subset(task, params.resolve_subset('english'), params) == ()
    assert corpus_folder_params(task, params, tmp_path) is params
    assert sent_texts(task, params) is None


def test_calibration_values_are_the_answer_keys_when_there_are_several() -> None:
    def meta(**fields: object) -> SampleMeta:
        given = {'task': 'multi_retrieval', 'answer_keys': ('x', 'y'), **fields}
        return SampleMeta(
            subset='english', language='en', context_length=1000, depth_percent=50.0, repeat=0, pick=0,
            needles=('a', 'b'), question='q', reference_answer='r', start_token=0, divergence_token=0, **given,
        )  # fmt: skip

    assert calibration_values(get_task('multi_retrieval'), meta()) == ('x', 'y')
    assert calibration_values(get_task('multi_retrieval'), meta(answer_keys=('x',))) == ()
    # Several needles and no short answer (EvalScope's multi-needle example): single's answer is every needle.
    assert calibration_values(get_task('single'), meta(task='single', answer_keys=())) == ('a', 'b')
