"""Behavioural tests for the rule scores."""

from __future__ import annotations

import time

import pytest

from evalscope_niah.scoring import (
    RULE_PASS_THRESHOLD,
    RuleScores,
    is_pass,
    keyword_score,
    levenshtein_score,
    needle_recall,
    rule_is_certain,
    rule_scores,
    strip_reasoning,
)

SF_NEEDLE = 'The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.'
SF_QUESTION = 'What is the best thing to do in San Francisco?'
ZH_NEEDLE = '小明最喜欢的实习的地点就是上海人工智能实验室。'
ZH_QUESTION = '小明最喜欢的实习地点是哪里？'
FILLER_EN = 'The history of the city is long and its harbour saw many ships arrive from distant shores. '
FILLER_ZH = '这座城市的历史非常悠久，港口见证了许多来自远方的船只。'


def en_recall(answer: str, needles: tuple[str, ...] = (SF_NEEDLE,), question: str = SF_QUESTION) -> float:
    return needle_recall(answer, needles=needles, question=question, language='en')


def zh_recall(answer: str, needles: tuple[str, ...] = (ZH_NEEDLE,), question: str = ZH_QUESTION) -> float:
    return needle_recall(answer, needles=needles, question=question, language='zh')


# --- strip_reasoning ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('reply', 'expected'),
    [
        ('Dolores Park.', 'Dolores Park.'),
        ('  padded answer \n', 'padded answer'),
        ('<think>the needle says Dolores Park</think>\nEat a sandwich.', 'Eat a sandwich.'),
        ('<thinking>hmm\nmultiline</thinking> Final.', 'Final.'),
        ('<THINK>caps</THINK>Answer', 'Answer'),
        ('<think>a</think>one <think>b</think>two', 'one two'),
        ('<think>still thinking, the answer is Dolores Park', ''),
        ('Answer first. <think>trailing unfinished', 'Answer first.'),
        # Templates that put the opening tag in the prompt: only the closing tag reaches the output.
        ('reasoning without an opening tag</think>The answer.', 'The answer.'),
        ('', ''),
    ],
)
def test_strip_reasoning(reply: str, expected: str) -> None:
    assert strip_reasoning(reply) == expected


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
    with pytest.raises(ValueError, match=r"language must be one of \('en', 'zh'\)"):
        needle_recall('x', needles=('y',), question='q', language=language)


def test_recall_rejects_empty_needles_and_bare_string() -> None:
    with pytest.raises(ValueError, match='needles'):
        needle_recall('x', needles=(), question='q', language='en')
    with pytest.raises(TypeError, match='needles'):
        needle_recall('x', needles='a needle', question='q', language='en')


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
    ],
)
def test_keyword_score(answer: str, keyword: str, expected: float) -> None:
    assert keyword_score(answer, keyword=keyword, reference='sitting') == pytest.approx(expected)


def test_keyword_score_rejects_blank_keyword() -> None:
    with pytest.raises(ValueError, match='keyword'):
        keyword_score('anything', keyword='  ', reference='x')


# --- rule_scores and thresholds ----------------------------------------------------------------------------------


def test_rule_scores_strip_reasoning_first() -> None:
    # The reasoning repeats the needle; only the final answer (wrong) may be scored.
    reply = f'<think>The document says: {SF_NEEDLE}</think>Visit the Golden Gate Bridge.'
    scores = rule_scores(reply, needles=[SF_NEEDLE], question=SF_QUESTION, language='en')
    assert scores.recall == 0.0
    assert scores.levenshtein < 0.5


def test_rule_scores_exact_answer() -> None:
    scores = rule_scores(f'<think>…</think>{SF_NEEDLE}', needles=[SF_NEEDLE], question=SF_QUESTION, language='en')
    assert scores == RuleScores(recall=1.0, levenshtein=1.0)


def test_rule_scores_reference_joins_needles_with_newlines() -> None:
    needles = ['abc', 'def']
    scores = rule_scores('abc def', needles=needles, question='?', language='en')
    assert scores.levenshtein == 1.0
    assert scores.recall == 1.0


def test_rule_scores_unfinished_reasoning_scores_zero() -> None:
    scores = rule_scores(f'<think>{SF_NEEDLE}', needles=[SF_NEEDLE], question=SF_QUESTION, language='en')
    assert scores == RuleScores(recall=0.0, levenshtein=0.0)


@pytest.mark.parametrize(
    ('score', 'passed'),
    [(0.0, False), (0.49, False), (RULE_PASS_THRESHOLD, True), (0.5, True), (1.0, True)],
)
def test_is_pass(score: float, passed: bool) -> None:
    assert is_pass(score) is passed


@pytest.mark.parametrize(
    ('recall', 'certain'),
    [(0.0, True), (0.1, True), (0.11, False), (0.5, False), (0.89, False), (0.9, True), (1.0, True)],
)
def test_rule_is_certain(recall: float, certain: bool) -> None:
    assert rule_is_certain(recall) is certain
