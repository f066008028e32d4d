"""The reasoning task's rules and the one-candidate ladder they use (tasks/reasoning/rules.py,
scoring/candidates.py)."""

from __future__ import annotations

import pytest

from evalscope_niah.scoring import (
    PromptText,
    RuleScore,
    one_candidate_score,
    strip_reasoning,
)
from evalscope_niah.tasks.reasoning.rules import chain_candidates
from tests.support.rule_facts import (
    FILLER_EN,
    GIOSTRA,
)

# --- one_candidate_score, through the chains ---------------------------------------------------------------------


def test_chain_candidates_name_the_chain_entities() -> None:
    assert chain_candidates(GIOSTRA, keyword='Jack', language='en') == ('Jack', 'Florence', 'La Giostra')
    zh = (
        '寒烟湖里最大的岛叫作鹤汀岛。',
        '鹤汀岛上唯一的一座房子属于养蜂人柯远山。',
        '养蜂人柯远山最喜欢的乐器是唢呐。',
    )
    assert set(chain_candidates(zh, keyword='唢呐', language='zh')) == {'唢呐', '鹤汀岛', '养蜂人柯远山', '柯远山'}


def reasoning(answer: str) -> RuleScore:
    candidates = chain_candidates(GIOSTRA, keyword='Jack', language='en')
    return one_candidate_score(strip_reasoning(answer), keyword='Jack', candidates=candidates, language='en')


@pytest.mark.parametrize(
    'answer', ['Jack.', 'The chef Jack makes it.', 'Jack makes it: the best restaurant is La Giostra, made by Jack.']
)
def test_reasoning_one_asserted_candidate_passes(answer: str) -> None:
    assert reasoning(answer).accuracy == 1.0


@pytest.mark.parametrize(
    ('answer', 'flag'),
    [
        ('Jack, La Giostra, Florence', 'list'),
        ('Jack La Giostra', 'list'),
        ('Jack, Pim, Osgood, Corvin', 'list'),  # names that are not chain candidates count too
        ('It is not Jack.', 'negation'),
        ('Jackie.', 'missing'),
    ],
)
def test_reasoning_lists_negations_and_near_names_fail(answer: str, flag: str) -> None:
    verdict = reasoning(answer)
    assert verdict.accuracy <= 0.3
    assert flag in verdict.flags


def test_reasoning_pasted_chain_fails() -> None:
    shown = PromptText(shown=FILLER_EN * 40 + ' '.join(GIOSTRA) + FILLER_EN * 40)
    verdict = one_candidate_score(
        FILLER_EN * 10 + ' '.join(GIOSTRA),
        keyword='Jack',
        candidates=(),
        language='en',
        reference='Jack.',
        needles=GIOSTRA,
        prompt=shown,
    )
    assert verdict.accuracy <= 0.3 and 'paste' in verdict.flags
    # The chain alone, walked in the model's words around the quoted links, is an answer.
    walked = one_candidate_score(
        'Jack. ' + ' '.join(GIOSTRA), keyword='Jack', candidates=(), language='en', needles=GIOSTRA, prompt=shown
    )
    assert walked.accuracy == 1.0
