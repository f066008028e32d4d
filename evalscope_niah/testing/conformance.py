"""The conformance checks every task is held to, shipped so a plugin's own tests run them:

    from evalscope_niah.testing.conformance import check_task

    def test_my_task_conforms():
        check_task(MyTask)  # AssertionError listing every miss, one line each

They derive the same right and wrong answers for every task from its real samples (planned as ``preview`` plans
them, on the small corpora this package ships) and their metadata, so a task is covered the day it is written.

Per sample, from its ``SampleMeta`` and the prompt the model is shown:

* must pass (score >= CERTAIN_PASS, certain): the reference answer; a verbose right answer (preamble, the reference,
  an explanation and a polite closing line);
* must fail (score <= UNCERTAIN_SCORE_CAP): the empty answer; another entity (the answer keys of another sample of
  the same task: another pick, chain, pair or code); a negation of the keys; a paste of the prompt; a dump (every
  key of every sample of the task, when there are three or more); a name list (another sample's key, this one's
  first, a third's);
* by what the task declares (``Task.ordered_answer``, ``Task.partial_credit``), where a sample has two keys or more:
  its keys reversed and rotated pass for an unordered answer and fail for an ordered one; part of its keys earns a
  share that is not a pass with partial credit, and fails without; its first key repeated as often as it has keys
  scores no more than that key alone.

And every planned prompt has exactly its context length in tokens.

A sample whose keys every other sample shares (the subset's one fixed needle) takes another sample of the task in
the other language as its other entity; it has no dump and no name list without enough other entities.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import NiahConfigError
from ..languages import text_language
from ..making.corpus import DEMO_CORPUS_DIR, DEMO_CORPUS_FILES
from ..making.samples import iter_samples
from ..metadata import GridCell, SampleMeta
from ..scoring import PromptText, RuleScore
from ..scoring.bounds import CERTAIN_PASS, UNCERTAIN_SCORE_CAP
from ..tasks import Task, get_task, register_task, score_answer, unregister_task
from ..tasks.base import PlanContext
from ..tasks.compose import parse_params

__all__ = [
    'CATEGORIES',
    'FAIL',
    'GRID',
    'ONE_KEY',
    'PASS',
    'SHARE',
    'Answer',
    'Sample',
    'answers',
    'check_task',
    'chosen_metas',
    'conformance_misses',
    'describe',
    'meets',
    'planned_samples',
    'score',
]

PASS, FAIL, SHARE, ONE_KEY = 'pass', 'fail', 'a share', 'no more than one key'
CATEGORIES = {
    'reference': PASS,
    'verbose right': PASS,
    'empty': FAIL,
    'other entity': FAIL,
    'negation': FAIL,
    'paste': FAIL,
    'dump': FAIL,
    'name list': FAIL,
    'reversed': 'order',
    'rotated': 'order',
    'partial': 'part',
    'duplicated': 'no more than one key',
}
# Every task is planned on this grid: two lengths, three depths, two repeats, both shipped subsets.
GRID = {'context_lengths': [600, 900], 'document_depth_percents': [0, 50, 100], 'num_repeats': 2}


@dataclasses.dataclass(frozen=True)
class Sample:
    meta: SampleMeta
    prompt: PromptText
    prompt_tokens: int


@dataclasses.dataclass(frozen=True)
class Answer:
    task: str
    category: str
    answer: str
    sample: Sample

    @property
    def expected(self) -> str:
        """PASS or FAIL, or for the categories the task's declarations decide: SHARE (more than nothing, not a pass)
        or ONE_KEY (no more than the first key alone)."""
        declared = CATEGORIES[self.category]
        task = get_task(self.task)
        if declared == 'order':
            return FAIL if task.ordered_answer else PASS
        if declared == 'part':
            return SHARE if task.partial_credit else FAIL
        return ONE_KEY if declared == 'no more than one key' else declared

    @property
    def label(self) -> str:
        meta = self.sample.meta
        return f'{self.task}-{meta.language}-{self.category}-{meta.context_length}-{meta.depth_percent}-{meta.repeat}'


def chosen_metas(task: str) -> list[SampleMeta]:
    """Samples of ``task`` straight from its ``choose`` on both shipped subsets, without a corpus or tokenizer (the
    adversarial table's prompts are its own filler): three depths x two repeats per subset, a seed per cell."""
    params = parse_params({'task': task, 'num_repeats': 2})
    metas = []
    for name in ('english', 'chinese'):
        subset = params.resolve_subset(name)
        context = PlanContext(subset=subset, params=params)
        for depth in (0.0, 50.0, 100.0):
            for repeat in (0, 1):
                cell = GridCell(name, 1000, depth, repeat)
                choice = get_task(task).choose(context, cell, seed=zlib.crc32(repr(cell).encode()))
                metas.append(
                    SampleMeta(
                        subset=name,
                        language=text_language(*choice.needles, choice.question, default=subset.language),
                        task=task,
                        context_length=1000,
                        depth_percent=depth,
                        repeat=repeat,
                        pick=0,
                        needles=choice.needles,
                        question=choice.question,
                        reference_answer=choice.reference_answer,
                        answer_keys=choice.answer_keys,
                        start_token=0,
                        divergence_token=0,
                        task_data=choice.data.to_json() if choice.data is not None else {},
                    )
                )
    return metas


def planned_samples(
    task: str,
    corpus_dir: Path | None = None,
    *,
    grid: Mapping[str, Any] | None = None,
    subsets: Sequence[str] | None = None,
) -> list[Sample]:
    """The task's samples as ``preview`` makes them (on ``grid``, default GRID), with what each prompt shows.

    ``corpus_dir``: a folder with the corpus files under the dataset's own names; None plans on the small corpora
    this package ships (its demo's), so a plugin's tests need no download."""
    extra: dict[str, Any] = {'task': task, **(grid or GRID)}
    if corpus_dir is None:
        corpus_dir = DEMO_CORPUS_DIR
        extra['subsets'] = {name: {'corpus_file': file} for name, file in DEMO_CORPUS_FILES.items()}
    params = parse_params(extra)
    names = list(subsets) if subsets is not None else params.subset_names()
    samples = []
    for built in iter_samples(params, corpus_dir=Path(corpus_dir), subsets=names):
        messages = built.messages()
        system, user = messages[0]['content'], messages[-1]['content']
        shown = PromptText(shown=f'{system}\n{user}' if messages[0]['role'] == 'system' else user)
        samples.append(Sample(built.meta, shown, built.meta.prompt_tokens or 0))
    return samples


_VERBOSE = {
    'en': 'Based on the document you provided, the answer is: {reference} I read the whole text carefully; the rest '
    'of it is about other subjects and adds nothing that would change this. I hope this helps!',
    'zh': '根据你提供的文档，答案是：{reference}我仔细读了全文，其余内容讲的是别的事情，'
    '不会改变这个答案。希望这对你有帮助！',
}
_NEGATION = {'en': 'It is not {keys}; the document never says that.', 'zh': '不是{keys}，文中没有这样说。'}
_SEPARATOR = {'en': ', ', 'zh': '、'}


def _others(sample: Sample, samples: Sequence[Sample]) -> list[tuple[str, ...]]:
    """Answer keys of the task's other samples that share none of this one's, same language first."""
    keys = set(sample.meta.answer_keys)
    found: dict[tuple[str, ...], None] = {}
    for language_first in (True, False):
        for other in samples:
            if (other.meta.language == sample.meta.language) == language_first and not keys & set(
                other.meta.answer_keys
            ):
                found.setdefault(other.meta.answer_keys)
    return list(found)


def answers(task: str, samples: Sequence[Sample]) -> list[Answer]:
    """The conformance answers of every sample of ``task``."""
    table = []
    every_key = list(dict.fromkeys(key for sample in samples for key in sample.meta.answer_keys))
    for sample in samples:
        meta = sample.meta
        separator = _SEPARATOR[meta.language]
        keys = separator.join(meta.answer_keys)
        others = _others(sample, samples)

        def add(category: str, answer: str, sample: Sample = sample) -> None:
            table.append(Answer(task, category, answer, sample))

        add('reference', meta.reference_answer)
        add('verbose right', _VERBOSE[meta.language].format(reference=meta.reference_answer))
        add('empty', '')
        if others:
            add('other entity', separator.join(others[0]))
        add('negation', _NEGATION[meta.language].format(keys=keys))
        add('paste', sample.prompt.shown)
        if len(every_key) >= 3:  # a dump is many entities: a subset's one fixed key per language is not
            add('dump', separator.join(every_key))
        if len(others) >= 2:
            add('name list', separator.join([*others[0][:1], *meta.answer_keys[:1], *others[1][:1]]))
        for category, answer in _order_and_parts(meta.answer_keys, separator):
            add(category, answer)
    return table


def _order_and_parts(keys: tuple[str, ...], separator: str) -> list[tuple[str, str]]:
    """The answers whose expectation the task's declarations decide (two keys or more)."""
    if len(keys) < 2:
        return []
    made = [('reversed', separator.join(reversed(keys)))]
    if len(keys) >= 3:
        made.append(('rotated', separator.join([*keys[1:], keys[0]])))
    made.append(('partial', separator.join(keys[: len(keys) // 2])))
    made.append(('duplicated', separator.join([keys[0]] * len(keys))))
    return made


def score(answer: Answer) -> RuleScore:
    """The answer through the path a run takes: the task's rule score with the prompt the model was shown."""
    return score_answer(answer.answer, answer.sample.meta, prompt=answer.sample.prompt)


def meets(answer: Answer, verdict: RuleScore) -> bool:
    expected = answer.expected
    if expected == PASS:
        return verdict.accuracy >= CERTAIN_PASS and verdict.certain
    if expected == SHARE:
        return 0 < verdict.accuracy < CERTAIN_PASS
    if expected == ONE_KEY:
        alone = score_answer(answer.sample.meta.answer_keys[0], answer.sample.meta, prompt=answer.sample.prompt)
        return verdict.accuracy <= alone.accuracy and verdict.accuracy < CERTAIN_PASS
    return verdict.accuracy <= UNCERTAIN_SCORE_CAP


def describe(verdict: RuleScore) -> dict[str, Any]:
    return {'accuracy': verdict.accuracy, 'certain': verdict.certain, 'explanation': verdict.explanation}


def conformance_misses(task: str, samples: Sequence[Sample] | None = None) -> list[str]:
    """Every way ``task`` misses the checks, one readable line each (empty: it conforms). ``samples``: the task's
    planned samples (default: ``planned_samples(task)``)."""
    planned = list(samples) if samples is not None else planned_samples(task)
    if not planned:
        return [f'{task}: no samples were planned']
    misses = [
        f'{task}-{sample.meta.language}-{sample.meta.context_length}-{sample.meta.depth_percent}: the prompt has '
        f'{sample.prompt_tokens} tokens, not its context length {sample.meta.context_length}'
        for sample in planned
        if sample.prompt_tokens != sample.meta.context_length
    ]
    for answer in answers(task, planned):
        verdict = score(answer)
        if not meets(answer, verdict):
            misses.append(f'{answer.label} expected {answer.expected}: {answer.answer[:80]!r} -> {describe(verdict)}')
    return misses


def check_task(task: type[Task] | str, *, corpus_dir: Path | None = None) -> int:
    """Hold one task to the conformance checks: the call a task's own tests make (``check_task(MyTask)``).

    ``task``: the Task subclass (registered for the check when it is not yet, and unregistered after) or the name of
    a registered task. ``corpus_dir``: as for ``planned_samples`` (default: the corpora this package ships).
    Returns how many answers were checked; raises AssertionError listing every miss, one line each."""
    with _registered(task) as name:
        samples = planned_samples(name, corpus_dir)
        misses = conformance_misses(name, samples)
        if misses:
            raise AssertionError(f'task {name!r} misses {len(misses)} conformance checks:\n' + '\n'.join(misses))
        return len(answers(name, samples))


@contextmanager
def _registered(task: type[Task] | str) -> Iterator[str]:
    if isinstance(task, str):
        get_task(task)  # an unknown name: the registry's error, naming the tasks there are
        yield task
        return
    if not (isinstance(task, type) and issubclass(task, Task)):
        raise TypeError(f'check_task takes a Task subclass or a registered task name (got {task!r})')
    try:
        present = get_task(task.name)
    except NiahConfigError:
        present = None  # not registered (nor brought by an installed plugin): registered for the check
    if present is not None and type(present) is not task:
        raise AssertionError(
            f'task name {task.name!r} is registered by {type(present).__qualname__}, not {task.__qualname__}: '
            'give your task a name of its own'
        )
    if present is None:
        register_task(task)
    try:
        yield task.name
    finally:
        if present is None:
            unregister_task(task.name)
