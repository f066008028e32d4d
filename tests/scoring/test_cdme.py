"""OpenCompass CDME's Levenshtein and keyword scores (scoring/cdme.py)."""

from __future__ import annotations

import time

import pytest

from evalscope_niah.scoring import (
    keyword_score,
    levenshtein_score,
)
from tests.support.rule_facts import (
    FILLER_EN,
    SF_NEEDLE,
)

# --- levenshtein_score -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('answer', 'reference', 'expected'),
    [
        ('kitten', 'sitting', 1 - 3 / 7),
        ('sitting', 'kitten', 1 - 3 / 7),
        ('flaw', 'lawn', 1 - 2 / 4),
        ('abc', 'abc', 1.0),
        ('a b\nc', 'abc', 1.0),  # all whitespace is removed first
        ('abc', 'xyz', 0.0),
        ('', 'abc', 0.0),  # empty answer: nothing found
        ('', '', 1.0),  # both empty: identical strings, as CDME
        ('   ', '\n', 1.0),
        ('上海人工智能实验室', '上海人工智能实验室。', 1 - 1 / 10),
    ],
)
def test_levenshtein_score(answer: str, reference: str, expected: float) -> None:
    assert levenshtein_score(answer, reference) == pytest.approx(expected)


def test_levenshtein_huge_answer_is_fast_and_near_zero() -> None:
    reference = SF_NEEDLE
    answer = SF_NEEDLE + FILLER_EN * 5000  # ~450k characters
    start = time.perf_counter()
    score = levenshtein_score(answer, reference)
    assert time.perf_counter() - start < 2.0
    ref_len = len(reference.replace(' ', ''))
    ans_len = len(answer.replace(' ', ''))
    # The answer starts with the reference, so the truncated computation is exact: only deletions remain.
    assert score == pytest.approx(ref_len / ans_len)
    assert score < 0.001


def test_levenshtein_longer_paste_never_scores_higher() -> None:
    scores = [levenshtein_score(FILLER_EN * n + SF_NEEDLE, SF_NEEDLE) for n in (1, 10, 100)]
    assert scores == sorted(scores, reverse=True)


# --- keyword_score -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('answer', 'keyword', 'expected'),
    [
        ('The answer is Dolores Park.', 'Dolores Park', 1.0),
        ('the answer is DOLORESPARK', 'Dolores Park', 1.0),  # case- and whitespace-insensitive
        ('上海 人工智能 实验室', '上海人工智能实验室', 1.0),
        ('kitten', 'Dolores', 0.2 * (1 - 3 / 7)),  # reference 'sitting' below
        ('', 'Dolores', 0.0),
        ("It is Jack's dish.", 'Jack', 1.0),
        ('Chef jack.', 'Jack', 1.0),
        ('他叫杰克吧', '杰克', 1.0),  # Chinese has no word boundaries: a plain substring
    ],
)
def test_keyword_score(answer: str, keyword: str, expected: float) -> None:
    assert keyword_score(answer, keyword=keyword, reference='sitting') == pytest.approx(expected)


@pytest.mark.parametrize('answer', ['Jackie makes it.', 'It is HiJack.', 'Jack2 does'])
def test_a_longer_word_holding_the_keyword_is_not_the_keyword(answer: str) -> None:
    # CDME's substring test would give these 1.0; the essays corpus has a 'Jackie' a model may copy.
    expected = 0.2 * levenshtein_score(answer, 'sitting')
    assert expected < 1.0
    assert keyword_score(answer, keyword='Jack', reference='sitting') == pytest.approx(expected)


def test_keyword_score_rejects_blank_keyword() -> None:
    with pytest.raises(ValueError, match='keyword'):
        keyword_score('anything', keyword='  ', reference='x')
