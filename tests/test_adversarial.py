"""The adversarial answer table (tests/support/adversarial.py) through the four rule entry points."""

from __future__ import annotations

import collections

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.tasks.multi_retrieval.facts import (
    MAX_DISTRACTORS,
    MULTI_KEYS,
    Distractor,
    distractor_facts,
    multi_retrieval_set,
)
from tests.support.adversarial import OUTCOMES, TASKS, Case, all_cases, meets, score_case, summary

CASES = all_cases()


@pytest.mark.parametrize('case', CASES, ids=[f'{n}-{c.task}-{c.language}-{c.category}' for n, c in enumerate(CASES)])
def test_case_meets_its_expected_outcome(case: Case) -> None:
    verdict = score_case(case)
    assert meets(case, verdict), f'{case.label} expected {case.expected}, got {verdict}'
    assert verdict.explanation  # every verdict says why


def test_table_covers_every_task_language_and_the_wrong_categories() -> None:
    assert len(CASES) >= 200
    assert {case.expected for case in CASES} <= set(OUTCOMES)
    per_cell = collections.Counter((case.task, case.language) for case in CASES)
    # Both languages for every task, but a task whose facts are English on both subsets (RULER's keys and values,
    # as RULER writes them) has few Chinese cases: only where a Chinese subset makes its prompt Chinese.
    english_only = {'ruler_niah'}
    assert {cell for cell, count in per_cell.items() if count >= 20} == {
        (task, lang) for task in TASKS for lang in ('en', 'zh') if not (task in english_only and lang == 'zh')
    }
    categories = {case.category for case in CASES}
    assert categories >= {
        'right', 'paraphrase', 'partial', 'other entity', 'negation', 'retraction', 'hedge list', 'paste',
        'number dump', 'name list', 'refusal', 'guess', 'other language', 'injection',
        'verbose right', 'markdown right', 'helps right',
    }  # fmt: skip


@pytest.mark.parametrize('language', ['en', 'zh'])
def test_verbose_right_answers_are_60_to_200_words_and_pass_certain(language: str) -> None:
    verbose = [c for c in CASES if c.task == 'single' and c.language == language and c.category == 'verbose right']
    assert len(verbose) >= 10
    for case in verbose:
        # Words for English; for Chinese about 1.5 characters a word.
        size = len(case.answer.split()) if language == 'en' else len(case.answer) / 1.5
        assert 60 <= size <= 200, (size, case.answer)
        verdict = score_case(case)
        assert (verdict.accuracy, verdict.certain) == (1.0, True), verdict


@pytest.mark.parametrize('language', ['en', 'zh'])
def test_control_recognises_at_least_fifteen_abstentions_per_language(language: str) -> None:
    right = [c for c in CASES if c.task == 'control' and c.language == language and c.category == 'right']
    assert len({c.answer for c in right}) >= 15
    assert all(score_case(c).accuracy == 1.0 for c in right)


def test_summary_reports_every_task(capsys: pytest.CaptureFixture[str]) -> None:
    table = summary(CASES)
    print(table)  # pytest -s shows the figures for docs/en/scoring.md
    rows = table.splitlines()[2:]
    assert [row.split('|')[1].strip() for row in rows] == list(TASKS)


# --- distractor facts (tasks.multi_retrieval.facts.distractor_facts) --------------------------------------------------


@pytest.mark.parametrize('language', ['en', 'zh'])
def test_distractor_facts_are_other_keys_with_fresh_values(language: str) -> None:
    facts = multi_retrieval_set(language=language, count=5, seed=3)
    distractors = distractor_facts(language=language, count=40, seed=3, exclude_values=facts.values, name=facts.key)
    assert len(distractors) == 40
    values = [d.value for d in distractors]
    assert len(set(values)) == 40 and not set(values) & set(facts.values)
    assert all(len(v) == 7 and not v.startswith('0') for v in values)
    assert facts.key not in {d.key for d in distractors}
    assert {d.key for d in distractors} <= set(MULTI_KEYS[language])
    # Same sentence form as the needles, so only the key tells them apart.
    template = facts.needles[0].replace(facts.key, '{key}').replace(facts.values[0], '{value}')
    assert all(d.needle == template.format(key=d.key, value=d.value) for d in distractors)


def test_distractor_facts_are_reproducible_and_seed_dependent() -> None:
    def pick(seed: int) -> list[Distractor]:
        return distractor_facts(language='en', count=6, seed=seed, exclude_values=(), name='Quillmere')

    assert pick(1) == pick(1)
    assert pick(1) != pick(2)
    assert distractor_facts(language='en', count=0, seed=1, exclude_values=(), name='Quillmere') == []


@pytest.mark.parametrize(
    ('options', 'message'),
    [
        ({'count': -1}, 'between 0 and'),
        ({'count': MAX_DISTRACTORS + 1}, 'between 0 and'),
        ({'exclude_values': '1234567'}, 'not a string'),
    ],
)
def test_distractor_facts_reject_bad_arguments(options: dict, message: str) -> None:
    arguments = {'language': 'en', 'count': 3, 'seed': 0, 'exclude_values': (), 'name': 'Quillmere', **options}
    with pytest.raises(NiahConfigError, match=message) as raised:
        distractor_facts(**arguments)
    assert raised.value.param == 'distractors'
