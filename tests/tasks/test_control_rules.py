"""The needle-absent control's rule (tasks/control/rules.py)."""

from __future__ import annotations

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.scoring import (
    RuleScore,
    strip_reasoning,
)
from evalscope_niah.tasks.control.rules import absent_control_score

# --- absent_control_score ----------------------------------------------------------------------------------------

SF_FACTS = ('Dolores Park', 'eat a sandwich')
ZH_FACTS = ('上海人工智能实验室',)


def en_control(answer: str) -> RuleScore:
    return absent_control_score(strip_reasoning(answer), language='en', needle_answers=SF_FACTS)


def zh_control(answer: str) -> RuleScore:
    return absent_control_score(strip_reasoning(answer), language='zh', needle_answers=ZH_FACTS)


def control_outcome(result: RuleScore) -> tuple[bool, bool, float]:
    """A control score as (abstained, guessed, acc)."""
    return result.values['abstained'] == 1.0, result.values['guessed'] == 1.0, result.accuracy


@pytest.mark.parametrize(
    'answer',
    [
        'The document does not mention the best thing to do in San Francisco.',
        "The essays don't say what the best thing to do in San Francisco is.",
        'The essays don’t say anything about San Francisco.',  # typographic apostrophe
        'The text does not explicitly state this.',
        'The provided documents do not contain any information about San Francisco.',
        'This is not mentioned in the text.',
        "It isn't specified anywhere in the essays.",
        'There is no information about San Francisco in the document.',
        'There is no mention of the best thing to do in San Francisco.',
        'I cannot find the answer in the provided text.',
        "I can't determine that from the essays.",
        'I am unable to answer this question based on the document.',
        "I don't know.",
        'Unknown.',
        'Nowhere in the essays is San Francisco discussed.',
        'None of the essays talk about San Francisco.',
        'THE DOCUMENT DOES NOT PROVIDE THIS INFORMATION.',
        '<think>Let me look for San Francisco... Dolores Park? No, that is my own knowledge.</think>'
        'The document does not say.',
    ],
)
def test_control_english_clean_abstention(answer: str) -> None:
    assert control_outcome(en_control(answer)) == (True, False, 1.0)


@pytest.mark.parametrize(
    'answer',
    [
        'The document does not mention it, but the best thing is to eat a sandwich in Dolores Park',
        'This is not stated in the text. However, many people enjoy sitting in dolores  park on a sunny day.',
        "I don't know for sure; probably eat a sandwich and relax.",
    ],
)
def test_control_english_abstain_then_guess_scores_zero(answer: str) -> None:
    assert control_outcome(en_control(answer)) == (True, True, 0.0)


@pytest.mark.parametrize(
    'answer',
    [
        'The best thing to do in San Francisco is to eat a sandwich and sit in Dolores Park on a sunny day.',
        'Dolores Park.',
        'DOLORES PARK',
    ],
)
def test_control_english_guess_without_abstaining(answer: str) -> None:
    assert control_outcome(en_control(answer)) == (False, True, 0.0)


@pytest.mark.parametrize(
    'answer',
    [
        'The best thing to do in San Francisco is to visit the Golden Gate Bridge.',
        'There is no doubt: ride a cable car.',  # "there is no doubt" asserts, it does not abstain
        '',
        '<think>The document does not mention it.</think>Visit Alcatraz.',  # only the final answer counts
        '<think>The document does not mention it, so I will say',  # unfinished reasoning: no final answer
    ],
)
def test_control_english_neither(answer: str) -> None:
    assert control_outcome(en_control(answer)) == (False, False, 0.0)


def test_control_guess_in_reasoning_only_is_not_a_guess() -> None:
    reply = '<think>Maybe Dolores Park, but that is not in the text.</think>The text does not mention this.'
    assert en_control(reply).accuracy == 1.0


def test_control_english_guess_needs_word_edges() -> None:
    score = absent_control_score(
        'The essays do not say; they only mention 2042.', language='en', needle_answers=('42',)
    )
    assert control_outcome(score) == (True, False, 1.0)
    assert absent_control_score('Not stated; maybe 42.', language='en', needle_answers=('42',)).values['guessed'] == 1.0


@pytest.mark.parametrize(
    'answer',
    [
        '文中没有提到小明最喜欢的实习地点。',
        '文章中没有相关信息。',
        '根据提供的文章，无法确定小明最喜欢的实习地点。',
        '文中并未提到这一点。',
        '原文未提及小明的实习地点。',
        '文章没有涉及小明的实习经历。',
        '不知道。',
        '抱歉，我无法回答这个问题，因为文中没有说明。',
        '文档中没有关于小明实习地点的描述。',
        'The document does not mention where Xiao Ming likes to intern.',  # English reply to a Chinese prompt
        '<think>上海人工智能实验室？不，这不在文中。</think>文中未说明。',
    ],
)
def test_control_chinese_clean_abstention(answer: str) -> None:
    assert control_outcome(zh_control(answer)) == (True, False, 1.0)


@pytest.mark.parametrize(
    ('answer', 'expected'),
    [
        ('小明最喜欢的实习地点是上海人工智能实验室。', (False, True, 0.0)),
        ('上海 人工智能 实验室', (False, True, 0.0)),
        ('文章并未提及，但可能是上海人工智能实验室。', (True, True, 0.0)),
        ('小明最喜欢的实习地点是北京大学。', (False, False, 0.0)),
    ],
)
def test_control_chinese_guesses_and_wrong_answers(answer: str, expected: tuple[bool, bool, float]) -> None:
    assert control_outcome(zh_control(answer)) == expected


def test_control_any_needle_answer_counts_as_guess() -> None:
    score = absent_control_score(
        'Not mentioned, but figs are great on pizza.',
        language='en',
        needle_answers=('prosciutto', 'figs', 'goat cheese'),
    )
    assert score.values['guessed'] == 1.0
    assert score.accuracy == 0.0


def test_control_no_needle_answers_means_no_guess() -> None:
    assert absent_control_score('The text does not say.', language='en', needle_answers=()).accuracy == 1.0


@pytest.mark.parametrize('language', ['fr', 'EN', ''])
def test_control_unknown_language_raises(language: str) -> None:
    with pytest.raises(NiahConfigError, match=r'language: .* is not one of en, zh'):
        absent_control_score('I do not know.', language=language, needle_answers=SF_FACTS)


def test_control_rejects_bare_string_needle_answers() -> None:
    with pytest.raises(TypeError, match='needle_answers'):
        absent_control_score('I do not know.', language='en', needle_answers='Dolores Park')


# --- control: more phrasings, guesses after abstaining -----------------------------------------------------------


@pytest.mark.parametrize(
    'answer',
    [
        "I'm not sure.",
        'The answer cannot be determined from the text.',
        'The essays are silent on this.',
        'There is not enough information.',
        'Sorry, I can’t help with that.',
        'N/A',
        '信息不足。',
        '文中只字未提。',
        '我没有找到相关记载。',
        'Probably the document does not say.',  # a hedge before the abstention is no guess
    ],
)
def test_control_more_abstentions_count(answer: str) -> None:
    assert en_control(answer).accuracy == 1.0


@pytest.mark.parametrize(
    'answer',
    [
        'Not stated. Probably a picnic somewhere.',
        'The text does not say, but maybe a sandwich in Dolores Park.',
        '文中没有提到，估计是去公园。',
        'It is not mentioned; my guess would be a museum.',
    ],
)
def test_control_guess_after_abstention_fails_with_a_reason(answer: str) -> None:
    score = en_control(answer)
    assert score.values['guessed'] == 1.0 and score.accuracy == 0.0
    assert 'guess' in score.explanation or 'paraphrase' in score.explanation


def test_control_paraphrase_of_the_fact_is_a_guess() -> None:
    score = en_control('No information in the text; people love a sandwich on a sunny day in Dolores Park.')
    assert score.values['guessed'] == 1.0
