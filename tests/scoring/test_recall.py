"""Needle recall (scoring/recall.py), and the rule scores of a reply stripped of its reasoning once."""

from __future__ import annotations

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.scoring import (
    levenshtein_score,
    needle_recall,
    rule_is_certain,
    strip_reasoning,
)
from tests.support.rule_facts import (
    FILLER_EN,
    FILLER_ZH,
    SF_NEEDLE,
    SF_QUESTION,
    ZH_NEEDLE,
    ZH_QUESTION,
)


def en_recall(answer: str, needles: tuple[str, ...] = (SF_NEEDLE,), question: str = SF_QUESTION) -> float:
    return needle_recall(answer, needles=needles, question=question, language='en')


def zh_recall(answer: str, needles: tuple[str, ...] = (ZH_NEEDLE,), question: str = ZH_QUESTION) -> float:
    return needle_recall(answer, needles=needles, question=question, language='zh')


# --- needle_recall: English --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('answer', 'low', 'high'),
    [
        # The needle itself and its fact part get full marks.
        (SF_NEEDLE, 1.0, 1.0),
        ('Eat a sandwich and sit in Dolores Park on a sunny day.', 1.0, 1.0),
        ('EAT A SANDWICH, SIT IN DOLORES PARK ON A SUNNY DAY', 1.0, 1.0),
        # Paraphrases keeping the key facts score high (plural "sandwiches" still matches "sandwich").
        ('You should eat sandwiches while sitting in Dolores Park when the day is sunny.', 0.8, 1.0),
        ('Having a sandwich in Dolores Park on a sunny day.', 0.7, 1.0),
        # Partial facts: partial credit.
        ('Dolores Park.', 0.2, 0.4),
        # Echoing the question earns nothing.
        (SF_QUESTION, 0.0, 0.0),
        ('The best thing to do in San Francisco is a great question!', 0.0, 0.0),
        # Wrong or empty answers.
        ('Visit the Golden Gate Bridge.', 0.0, 0.0),
        ('I do not know.', 0.0, 0.0),
        ('', 0.0, 0.0),
    ],
)
def test_recall_english(answer: str, low: float, high: float) -> None:
    assert low <= en_recall(answer) <= high


def test_recall_english_exact_value_for_partial_answer() -> None:
    # Fact words: eat sandwich sit dolores park sunny day (7); the answer has dolores, park.
    assert en_recall('Dolores Park') == pytest.approx(2 / 7)


@pytest.mark.parametrize('filler_repeats', [10, 50, 200])
def test_recall_english_pasted_context_is_penalised(filler_repeats: int) -> None:
    half = filler_repeats // 2
    pasted = FILLER_EN * half + SF_NEEDLE + ' ' + FILLER_EN * (filler_repeats - half)
    score = en_recall(pasted)
    assert score < 0.5
    # Scaled by allowed / answer length: 63 allowed words (3 × the 21-word needle).
    assert score == pytest.approx(63 / len(pasted.split()))


def test_recall_english_answer_just_within_length_allowance_is_not_penalised() -> None:
    # Needle: 21 words -> allowance max(3 * 21, 21 + 40) = 63 words.
    answer = SF_NEEDLE + ' ' + ' '.join(['filler'] * 42)
    assert en_recall(answer) == pytest.approx(1.0)
    assert en_recall(answer + ' filler') < 1.0


def test_recall_multiple_needles_uses_union_of_facts() -> None:
    needles = ('Figs are one of the secret ingredients.', 'Prosciutto is one of the secret ingredients.')
    question = 'What are the secret ingredients needed to build the perfect pizza?'
    assert needle_recall('Figs and prosciutto.', needles=needles, question=question, language='en') == 1.0
    assert needle_recall('Figs.', needles=needles, question=question, language='en') == pytest.approx(0.5)
    assert needle_recall('Cheese.', needles=needles, question=question, language='en') == 0.0


def test_recall_needle_equal_to_question_falls_back_to_needle_words() -> None:
    needle = 'Dolores Park sunny day'
    assert en_recall('dolores park on a sunny day', needles=(needle,), question=needle) == 1.0
    assert en_recall('no idea', needles=(needle,), question=needle) == 0.0


def test_recall_digits_are_facts() -> None:
    needle = 'The secret code of the vault is 4721.'
    question = 'What is the secret code of the vault?'
    assert en_recall('4721', needles=(needle,), question=question) == 1.0
    assert en_recall('4712', needles=(needle,), question=question) == 0.0


# --- needle_recall: Chinese --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('answer', 'low', 'high'),
    [
        ('上海人工智能实验室', 1.0, 1.0),
        (ZH_NEEDLE, 1.0, 1.0),
        ('小明最喜欢的实习地点是上海人工智能实验室。', 1.0, 1.0),
        ('他最喜欢在 上海人工智能 实验室 实习', 1.0, 1.0),
        ('北京大学', 0.0, 0.1),
        ('上海交通大学', 0.0, 0.3),  # shares only the bigram 上海
        (ZH_QUESTION, 0.0, 0.0),
        ('不知道', 0.0, 0.0),
        ('', 0.0, 0.0),
    ],
)
def test_recall_chinese(answer: str, low: float, high: float) -> None:
    assert low <= zh_recall(answer) <= high


def test_recall_chinese_bigrams_reject_reordered_characters() -> None:
    needle = '小红的生日是三月十二日。'
    question = '小红的生日是哪天？'
    assert zh_recall('三月十二日', needles=(needle,), question=question) == 1.0
    # Every character of the needle's date occurs here, but in another order: single characters would give 1.0.
    assert zh_recall('三月二十一日', needles=(needle,), question=question) < 0.5


def test_recall_chinese_pasted_context_is_penalised() -> None:
    pasted = FILLER_ZH * 30 + ZH_NEEDLE + FILLER_ZH * 30
    assert zh_recall(pasted) < 0.2


def test_recall_chinese_full_width_digits_match() -> None:
    needle = '保险柜的密码是４７２１。'
    assert zh_recall('4721', needles=(needle,), question='保险柜的密码是什么？') == 1.0


# --- needle_recall: argument checks ------------------------------------------------------------------------------


@pytest.mark.parametrize('language', ['fr', 'EN', ''])
def test_recall_unknown_language_raises(language: str) -> None:
    with pytest.raises(NiahConfigError, match=r'language: .* is not one of en, zh'):
        needle_recall('x', needles=('y',), question='q', language=language)


def test_recall_rejects_empty_needles_and_bare_string() -> None:
    with pytest.raises(ValueError, match='needles'):
        needle_recall('x', needles=(), question='q', language='en')
    with pytest.raises(TypeError, match='needles'):
        needle_recall('x', needles='a needle', question='q', language='en')


# --- rule_scores and thresholds ----------------------------------------------------------------------------------


def rule_scores(reply: str, needles: list[str], question: str) -> tuple[float, float]:
    """Recall and Levenshtein of a reply the way a run scores it: its reasoning stripped first (once)."""
    final = strip_reasoning(reply)
    return needle_recall(final, needles=needles, question=question, language='en'), levenshtein_score(
        final, '\n'.join(needles)
    )


def test_rule_scores_strip_reasoning_first() -> None:
    # The reasoning repeats the needle; only the final answer (wrong) may be scored.
    reply = f'<think>The document says: {SF_NEEDLE}</think>Visit the Golden Gate Bridge.'
    recall, levenshtein = rule_scores(reply, [SF_NEEDLE], SF_QUESTION)
    assert recall == 0.0
    assert levenshtein < 0.5


def test_rule_scores_exact_answer() -> None:
    assert rule_scores(f'<think>…</think>{SF_NEEDLE}', [SF_NEEDLE], SF_QUESTION) == (1.0, 1.0)


def test_rule_scores_reference_joins_needles_with_newlines() -> None:
    assert rule_scores('abc def', ['abc', 'def'], '?') == (1.0, 1.0)


def test_rule_scores_unfinished_reasoning_scores_zero() -> None:
    assert rule_scores(f'<think>{SF_NEEDLE}', [SF_NEEDLE], SF_QUESTION) == (0.0, 0.0)


@pytest.mark.parametrize(
    ('recall', 'certain'),
    [(0.0, True), (0.1, True), (0.11, False), (0.5, False), (0.89, False), (0.9, True), (1.0, True)],
)
def test_rule_is_certain(recall: float, certain: bool) -> None:
    assert rule_is_certain(recall) is certain
