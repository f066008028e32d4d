"""Behavioural tests for the rule scores."""

from __future__ import annotations

import time

import pytest

from evalscope_niah.scoring import (
    UNCERTAIN_SCORE_CAP,
    ControlScore,
    MultiRetrievalScores,
    PromptText,
    RuleScores,
    RuleVerdict,
    absent_control_score,
    chain_candidates,
    keyword_score,
    levenshtein_score,
    multi_retrieval_scores,
    needle_recall,
    paste_evidence,
    reasoning_answer_score,
    rule_is_certain,
    rule_scores,
    score_control,
    score_multi,
    score_reasoning,
    score_single,
    single_needle_score,
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
    ('recall', 'certain'),
    [(0.0, True), (0.1, True), (0.11, False), (0.5, False), (0.89, False), (0.9, True), (1.0, True)],
)
def test_rule_is_certain(recall: float, certain: bool) -> None:
    assert rule_is_certain(recall) is certain


# --- multi_retrieval_scores --------------------------------------------------------------------------------------

VALUES = ('4821937', '1234567', '7654321', '9081726')


def multi(answer: str, values: tuple[str, ...] = VALUES) -> MultiRetrievalScores:
    return multi_retrieval_scores(answer, values=values)


def test_multi_all_values_found() -> None:
    reply = 'The special magic numbers mentioned are: 4821937, 1234567, 7654321 and 9081726.'
    assert multi(reply) == MultiRetrievalScores(recall=1.0, precision=1.0, f1=1.0, found=VALUES)


def test_multi_found_is_in_needle_order_not_answer_order() -> None:
    scores = multi('9081726 and 4821937')
    assert scores.found == ('4821937', '9081726')
    assert scores.recall == 0.5
    assert scores.precision == 1.0
    assert scores.f1 == pytest.approx(2 / 3)


def test_multi_partial_recall() -> None:
    scores = multi('I found these numbers in the text:\n- 4821937\n- 7654321')
    assert scores.recall == 0.5
    assert scores.precision == 1.0
    assert scores.found == ('4821937', '7654321')


def test_multi_extra_numbers_lower_precision() -> None:
    right = multi('4821937, 1234567, 7654321, 9081726')
    one_guess = multi('4821937, 1234567, 7654321, 9081726, 5555555')
    many_guesses = multi('4821937, 1234567, 7654321, 9081726, 5555555, 6666666, 3141592, 2718281')
    assert right.recall == one_guess.recall == many_guesses.recall == 1.0
    assert one_guess.precision == pytest.approx(4 / 5)
    assert many_guesses.precision == pytest.approx(4 / 8)
    assert right.f1 > one_guess.f1 > many_guesses.f1


def test_multi_listing_every_number_is_not_rewarded() -> None:
    # A model that dumps every 7-digit number it saw in the haystack finds all needles but earns a low F1.
    dump = ', '.join([*VALUES, *(str(1000000 + 37 * i) for i in range(36))])
    scores = multi_retrieval_scores(dump, values=VALUES)
    assert scores.recall == 1.0
    # Its wrong numbers sink it, not its length: nothing of it is pasted prose, so nothing else is scaled.
    assert scores.precision == pytest.approx(4 / 40)
    assert scores.length_factor == 1.0
    assert scores.f1 < 0.2


def test_multi_wrong_numbers_only() -> None:
    assert multi('The numbers are 1111111 and 2222222.') == MultiRetrievalScores(
        0.0, 0.0, 0.0, (), wrong=('1111111', '2222222')
    )


def test_multi_repeated_value_counts_once() -> None:
    scores = multi('4821937. To repeat: 4821937! Again 4821937, plus 5555555.')
    assert scores.found == ('4821937',)
    assert scores.precision == pytest.approx(1 / 2)


@pytest.mark.parametrize(
    'answer',
    [
        'No numbers here.',
        'I could not find any special magic numbers.',
        '',
        '<think>The numbers are 4821937 and 1234567.</think>I am not sure.',
        '<think>I recall 4821937 and 1234567 but I ran out of',  # unfinished reasoning: no final answer
    ],
)
def test_multi_no_candidates(answer: str) -> None:
    assert multi(answer) == MultiRetrievalScores(recall=0.0, precision=0.0, f1=0.0, found=())


def test_multi_scores_final_answer_only() -> None:
    reply = (
        '<think>Candidates: 4821937, 1234567, 7654321, 9081726, 5555555.</think>\nThe numbers are 4821937 and 5555555.'
    )
    scores = multi(reply)
    assert scores.found == ('4821937',)
    assert scores.recall == 0.25
    assert scores.precision == 0.5


def test_multi_numbers_of_other_lengths_are_not_candidates() -> None:
    reply = 'There are 4 numbers for the 2 cities in 2024: 4821937, 1234567, 7654321 and 9081726 (3 of them odd).'
    assert multi(reply).precision == 1.0


@pytest.mark.parametrize(
    'answer',
    [
        'The numbers are 4,821,937 and 1,234,567.',
        'The numbers are 4 821 937 and 1 234 567.',
        'The numbers are 4.821.937 and 1.234.567.',
        "The numbers are 4'821'937 and 1'234'567.",
        'The numbers are 4\u202f821\u202f937 and 1\u00a0234\u00a0567.',
    ],
)
def test_multi_thousands_separators_are_tolerated(answer: str) -> None:
    scores = multi(answer)
    assert scores.found == ('4821937', '1234567')
    assert scores.precision == 1.0


@pytest.mark.parametrize(
    'answer',
    [
        '4821937, 1234567',
        '4821937,1234567',  # no space: still two numbers, a 7-digit group is no thousands group
        '4821937 1234567',
        '4,821,937, 1,234,567',  # grouped numbers in a comma-separated list
        '4821937;1234567',
    ],
)
def test_multi_separators_never_merge_two_numbers(answer: str) -> None:
    scores = multi(answer)
    assert scores.found == ('4821937', '1234567')
    assert scores.precision == 1.0


def test_multi_short_values_separated_by_a_separator_stay_separate() -> None:
    # With 3-digit values, '123,456' is a list of two values, not the number 123456.
    assert multi_retrieval_scores('123,456', values=('123', '456')).recall == 1.0
    assert multi_retrieval_scores('123 456', values=('123', '456')).precision == 1.0


def test_multi_mixed_separators_do_not_merge() -> None:
    # '4,821 937' is not a consistent grouping; its runs are too short to be candidates.
    assert multi('4,821 937').found == ()


def test_multi_number_glued_into_longer_run_does_not_count() -> None:
    # Concatenating values is not stating them.
    assert multi('48219371234567').found == ()
    assert multi('Code: 482193712').found == ()


def test_multi_numbers_next_to_letters_and_full_width_digits() -> None:
    assert multi('Number#1: 4821937; id=A1234567B').found == ('4821937', '1234567')
    assert multi('数字是４８２１９３７和１２３４５６７。').found == ('4821937', '1234567')


def test_multi_chinese_reply() -> None:
    reply = '<think>让我找一下文中的特殊数字。</think>文中的特殊魔法数字有：4821937、1234567、7654321。另有9999999。'
    scores = multi(reply)
    assert scores.found == ('4821937', '1234567', '7654321')
    assert scores.recall == 0.75
    assert scores.precision == 0.75
    assert scores.f1 == pytest.approx(0.75)


def test_multi_values_of_different_lengths() -> None:
    scores = multi_retrieval_scores(
        'The codes are 12345 and 4821937, and there are 2 of them.', values=('12345', '4821937')
    )
    assert scores.recall == 1.0
    assert scores.precision == 1.0


def test_multi_duplicate_values_count_once() -> None:
    scores = multi_retrieval_scores('4821937', values=('4821937', '4821937', '1234567'))
    assert scores.recall == 0.5
    assert scores.found == ('4821937',)


def test_multi_scores_are_in_unit_range() -> None:
    for answer in ('', '4821937', '4821937 5555555 6666666', ', '.join(VALUES)):
        scores = multi(answer)
        for value in (scores.recall, scores.precision, scores.f1):
            assert 0.0 <= value <= 1.0


def test_multi_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match='values'):
        multi_retrieval_scores('4821937', values=())
    with pytest.raises(TypeError, match='values'):
        multi_retrieval_scores('4821937', values='4821937')
    with pytest.raises(ValueError, match='digit strings'):
        multi_retrieval_scores('4821937', values=('4821937', 'abc'))


# --- absent_control_score ----------------------------------------------------------------------------------------

SF_FACTS = ('Dolores Park', 'eat a sandwich')
ZH_FACTS = ('上海人工智能实验室',)


def en_control(answer: str) -> ControlScore:
    return absent_control_score(answer, language='en', needle_answers=SF_FACTS)


def zh_control(answer: str) -> ControlScore:
    return absent_control_score(answer, language='zh', needle_answers=ZH_FACTS)


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
    assert en_control(answer) == ControlScore(abstained=True, guessed=False, score=1.0)


@pytest.mark.parametrize(
    'answer',
    [
        'The document does not mention it, but the best thing is to eat a sandwich in Dolores Park',
        'This is not stated in the text. However, many people enjoy sitting in dolores  park on a sunny day.',
        "I don't know for sure; probably eat a sandwich and relax.",
    ],
)
def test_control_english_abstain_then_guess_scores_zero(answer: str) -> None:
    assert en_control(answer) == ControlScore(abstained=True, guessed=True, score=0.0)


@pytest.mark.parametrize(
    'answer',
    [
        'The best thing to do in San Francisco is to eat a sandwich and sit in Dolores Park on a sunny day.',
        'Dolores Park.',
        'DOLORES PARK',
    ],
)
def test_control_english_guess_without_abstaining(answer: str) -> None:
    assert en_control(answer) == ControlScore(abstained=False, guessed=True, score=0.0)


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
    assert en_control(answer) == ControlScore(abstained=False, guessed=False, score=0.0)


def test_control_guess_in_reasoning_only_is_not_a_guess() -> None:
    reply = '<think>Maybe Dolores Park, but that is not in the text.</think>The text does not mention this.'
    assert en_control(reply).score == 1.0


def test_control_english_guess_needs_word_edges() -> None:
    score = absent_control_score(
        'The essays do not say; they only mention 2042.', language='en', needle_answers=('42',)
    )
    assert score == ControlScore(abstained=True, guessed=False, score=1.0)
    assert absent_control_score('Not stated; maybe 42.', language='en', needle_answers=('42',)).guessed is True


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
    assert zh_control(answer) == ControlScore(abstained=True, guessed=False, score=1.0)


@pytest.mark.parametrize(
    ('answer', 'expected'),
    [
        ('小明最喜欢的实习地点是上海人工智能实验室。', ControlScore(abstained=False, guessed=True, score=0.0)),
        ('上海 人工智能 实验室', ControlScore(abstained=False, guessed=True, score=0.0)),
        ('文章并未提及，但可能是上海人工智能实验室。', ControlScore(abstained=True, guessed=True, score=0.0)),
        ('小明最喜欢的实习地点是北京大学。', ControlScore(abstained=False, guessed=False, score=0.0)),
    ],
)
def test_control_chinese_guesses_and_wrong_answers(answer: str, expected: ControlScore) -> None:
    assert zh_control(answer) == expected


def test_control_any_needle_answer_counts_as_guess() -> None:
    score = absent_control_score(
        'Not mentioned, but figs are great on pizza.',
        language='en',
        needle_answers=('prosciutto', 'figs', 'goat cheese'),
    )
    assert score.guessed is True
    assert score.score == 0.0


def test_control_no_needle_answers_means_no_guess() -> None:
    assert absent_control_score('The text does not say.', language='en', needle_answers=()).score == 1.0


@pytest.mark.parametrize('language', ['fr', 'EN', ''])
def test_control_unknown_language_raises(language: str) -> None:
    with pytest.raises(ValueError, match=r"language must be one of \('en', 'zh'\)"):
        absent_control_score('I do not know.', language=language, needle_answers=SF_FACTS)


def test_control_rejects_bare_string_needle_answers() -> None:
    with pytest.raises(TypeError, match='needle_answers'):
        absent_control_score('I do not know.', language='en', needle_answers='Dolores Park')


# --- strip_reasoning on hostile input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('reply', 'expected'),
    [
        ('<think>a</thinking>b</think>c', 'c'),  # a block closes only on its own tag name
        ('<think>x<thinking>y</thinking>z', ''),  # unclosed <think>: everything from it is dropped
        ('<thinking>p</thinking><think>q</think>answer', 'answer'),
        ('<thi<think>x</think>nk>tail', ''),  # removing a block joins '<thi' and 'nk>' into a new opening tag
        ('< think >spaced</ think >done', 'done'),
    ],
)
def test_strip_reasoning_edge_cases(reply: str, expected: str) -> None:
    assert strip_reasoning(reply) == expected


@pytest.mark.parametrize('unit', ['<think>', '<thinking>', '</think>', '<think>a</thinking>', '< think'])
def test_strip_reasoning_is_linear_on_a_megabyte(unit: str) -> None:
    # The old regex rescanned to the end for every unclosed '<think>': 280 kB of them took about 50 s.
    reply = unit * (1_000_000 // len(unit))
    started = time.perf_counter()
    strip_reasoning(reply)
    assert time.perf_counter() - started < 2.0


# --- distractors and length in multi-value retrieval ------------------------------------------------------------


def test_multi_distractor_values_count_as_wrong_and_are_named() -> None:
    scores = multi_retrieval_scores(
        '4821937, 1234567, 3333333', values=('4821937', '1234567'), distractor_values=('3333333', '4444444')
    )
    assert scores.precision == pytest.approx(2 / 3)
    assert scores.wrong == ('3333333',)
    assert scores.distractors_named == ('3333333',)
    assert scores.score == pytest.approx(2 / 3)
    assert 'distractor' in scores.explanation


def test_multi_distractors_of_another_length_are_still_candidates() -> None:
    scores = multi_retrieval_scores('4821937 and 12345678', values=('4821937',), distractor_values=('12345678',))
    assert scores.distractors_named == ('12345678',)
    assert scores.precision == 0.5


def test_multi_score_is_recall_times_precision_and_stricter_than_f1_on_a_dump() -> None:
    dump = multi_retrieval_scores('4821937, 1111111, 2222222, 3333333', values=('4821937',))
    assert dump.score == pytest.approx(0.25)
    assert dump.f1 == pytest.approx(0.4)


MULTI_NEEDLES = tuple(f'One of the special magic numbers for Quillmere is: {v}.' for v in VALUES)


def test_multi_pasted_context_is_penalised_by_evidence() -> None:
    pasted = FILLER_EN * 20 + ' '.join(MULTI_NEEDLES) + FILLER_EN * 20
    shown = PromptText(shown=FILLER_EN * 50 + ' '.join(MULTI_NEEDLES) + FILLER_EN * 50)
    scores = multi_retrieval_scores(pasted, values=VALUES, needles=MULTI_NEEDLES, prompt=shown)
    assert scores.recall == 1.0
    assert scores.length_factor < 0.15  # the share of the answer that is not copied filler
    assert scores.score < 0.15
    # The needles quoted with an explanation of any length are no paste: nothing beyond them is copied.
    chatty = multi_retrieval_scores(
        'The document gives four of them, one per sentence: ' + ' '.join(MULTI_NEEDLES) + ' ' + OWN_WORDS,
        values=VALUES,
        needles=MULTI_NEEDLES,
        prompt=shown,
    )
    assert chatty.length_factor == 1.0 and chatty.score == 1.0


def test_multi_without_a_prompt_only_the_last_resort_bound_scales() -> None:
    pasted = FILLER_EN * 8 + ' '.join(MULTI_NEEDLES) + FILLER_EN * 8  # ~330 words: under the last resort
    assert multi_retrieval_scores(pasted, values=VALUES).length_factor == 1.0
    dump = FILLER_EN * 40 + ' '.join(MULTI_NEEDLES)  # ~740 words
    scores = multi_retrieval_scores(dump, values=VALUES)
    assert scores.length_factor == pytest.approx(400 / len(dump.split()), rel=0.01)


def test_multi_rejects_bad_distractor_values() -> None:
    with pytest.raises(ValueError, match='distractor_values'):
        multi_retrieval_scores('1', values=('1',), distractor_values=('12a',))
    with pytest.raises(TypeError, match='distractor_values'):
        multi_retrieval_scores('1', values=('1',), distractor_values='1234567')


# --- single_needle_score -----------------------------------------------------------------------------------------


def single(answer: str, **overrides: object) -> RuleVerdict:
    options: dict = {
        'needles': (SF_NEEDLE,),
        'question': SF_QUESTION,
        'language': 'en',
        'answer_keys': ('eat a sandwich and sit in Dolores Park on a sunny day',),
    }
    options.update(overrides)
    return single_needle_score(answer, **options)


def zh_single(answer: str) -> RuleVerdict:
    return single_needle_score(
        answer, needles=(ZH_NEEDLE,), question=ZH_QUESTION, language='zh', answer_keys=('上海人工智能实验室',)
    )


def test_single_plain_key_is_a_certain_pass() -> None:
    verdict = single('Eat a sandwich and sit in Dolores Park on a sunny day.')
    assert verdict == RuleVerdict(1.0, True, 'states the key plainly', ('exact',))


@pytest.mark.parametrize(
    ('answer', 'flag'),
    [
        ("It's not to eat a sandwich and sit in Dolores Park on a sunny day.", 'negation'),
        ('Eat a sandwich and sit in Dolores Park on a sunny day. Wait, I misread: ride a cable car.', 'retraction'),
        ('Maybe eat a sandwich and sit in Dolores Park on a sunny day.', 'hedge'),
    ],
)
def test_single_cue_near_the_key_is_uncertain_and_no_pass(answer: str, flag: str) -> None:
    verdict = single(answer)
    assert verdict.certain is False
    assert verdict.score <= UNCERTAIN_SCORE_CAP
    assert flag in verdict.flags
    assert 'a judge decides' in verdict.explanation


def test_single_cue_words_of_the_needle_itself_do_not_count() -> None:
    needle = 'The ferry to Oskvik never sails on Sundays and leaves at 6:42.'
    verdict = single(
        'It never sails on Sundays and leaves at 6:42.',
        needles=(needle,),
        question='When does the ferry to Oskvik leave?',
        answer_keys=('6:42',),
    )
    assert verdict.score == 1.0 and verdict.certain


def test_single_cue_far_from_the_key_is_ignored() -> None:
    answer = 'Eat a sandwich and sit in Dolores Park on a sunny day. ' + 'It is a lovely city to visit in spring. ' * 2
    assert single(answer + 'Not every day is sunny there.').score == 1.0


def test_single_chinese_other_institution_sharing_bigrams_is_no_pass() -> None:
    # It shares 5 of the key's 8 bigrams: needle_recall gave it 0.67.
    verdict = zh_single('上海人工智能研究院。')
    assert verdict.score <= 0.3
    assert verdict.certain is False  # a near miss: a judge may look


@pytest.mark.parametrize('answer', ['上海人工智能实验室', '上海 人工智能，实验室', '是“上海人工智能实验室”。'])
def test_single_chinese_key_matches_whole_with_spacing_and_punctuation(answer: str) -> None:
    assert zh_single(answer).score == 1.0


@pytest.mark.parametrize(
    ('answer', 'language', 'keys'),
    [
        ('The Shanghai AI Laboratory.', 'zh', ('上海人工智能实验室',)),
        ('在多洛雷斯公园吃三明治。', 'en', ('Dolores Park',)),
    ],
)
def test_single_answer_in_the_other_language_is_uncertain_not_a_certain_zero(
    answer: str, language: str, keys: tuple[str, ...]
) -> None:
    needle = ZH_NEEDLE if language == 'zh' else SF_NEEDLE
    verdict = single_needle_score(answer, needles=(needle,), question='?', language=language, answer_keys=keys)
    assert verdict.certain is False
    assert 'other_language' in verdict.flags


SF_PROMPT = PromptText(shown=FILLER_EN * 60 + SF_NEEDLE + ' ' + FILLER_EN * 60 + SF_QUESTION)
# A model's own explanation, ~60 words in no sentence of the haystack.
OWN_WORDS = (
    'This sentence is the only one in the text that speaks to the question, and it answers it directly: the author '
    'recommends a simple afternoon outdoors, a meal in the open air and a seat in a well known park when the weather '
    'is good. Everything else in the document concerns other subjects entirely.'
)


def test_single_key_inside_a_pasted_context_is_not_a_certain_pass() -> None:
    verdict = single(FILLER_EN * 10 + SF_NEEDLE + FILLER_EN * 10, prompt=SF_PROMPT)
    assert verdict.certain is False
    assert verdict.score < 0.3
    assert 'paste' in verdict.flags
    assert 'copied verbatim from the prompt' in verdict.explanation


@pytest.mark.parametrize('repeats', [1, 3, 6])
def test_single_verbose_right_answer_passes_whatever_its_length(repeats: int) -> None:
    # Preamble, the quoted needle, and 60-360 words of the model's own explanation: quoting is not pasting.
    answer = f'Based on the document, the answer is to eat a sandwich and sit in Dolores Park. It says: "{SF_NEEDLE}" '
    verdict = single(answer + ' '.join([OWN_WORDS] * repeats), prompt=SF_PROMPT)
    assert (verdict.score, verdict.certain, verdict.flags) == (1.0, True, ('exact',))
    # Without the prompt the same answers stay under the last-resort bound.
    assert single(answer + ' '.join([OWN_WORDS] * repeats)).score == 1.0


def test_single_one_quoted_sentence_of_the_haystack_is_no_paste_two_paragraphs_are() -> None:
    quote = f'The answer is to eat a sandwich and sit in Dolores Park on a sunny day. {FILLER_EN}{SF_NEEDLE}'
    assert single(quote, prompt=SF_PROMPT).score == 1.0
    assert 'paste' in single(FILLER_EN * 3 + SF_NEEDLE, prompt=SF_PROMPT).flags


def test_single_echoing_the_question_and_template_is_no_paste() -> None:
    template = 'You are a careful reader. Answer only from the document, in one short sentence, and do not guess.'
    shown = PromptText(shown=template + FILLER_EN * 30 + SF_NEEDLE + SF_QUESTION, template=(template,))
    answer = f'{template} {SF_QUESTION} {template} {SF_QUESTION} {template} {SF_NEEDLE}'
    assert single(answer, prompt=shown).score == 1.0


def test_single_without_a_prompt_a_very_long_answer_is_left_to_the_judge() -> None:
    verdict = single(FILLER_EN * 30 + SF_NEEDLE)  # ~500 words, over the last-resort 400
    assert verdict.certain is False and verdict.score < 0.3
    assert 'long' in verdict.flags and 'last-resort' in verdict.explanation


def test_paste_evidence_counts_only_text_beyond_the_allowed_texts() -> None:
    answer = FILLER_EN * 5 + SF_NEEDLE
    evidence = paste_evidence(answer, allowed=(SF_NEEDLE,), prompt=SF_PROMPT, language='en')
    assert evidence.pasted and evidence.pasted_units == len(FILLER_EN.split()) * 5
    assert evidence.factor == pytest.approx(1 - evidence.pasted_units / len(answer.split()), rel=0.01)
    quoted = paste_evidence(SF_NEEDLE * 5, allowed=(SF_NEEDLE,), prompt=SF_PROMPT, language='en')
    assert not quoted.pasted and quoted.factor == 1.0


def test_paste_evidence_in_chinese_counts_characters() -> None:
    shown = PromptText(shown=FILLER_ZH * 80 + ZH_NEEDLE + FILLER_ZH * 80)
    pasted = paste_evidence(FILLER_ZH * 6 + ZH_NEEDLE, allowed=(ZH_NEEDLE,), prompt=shown, language='zh')
    assert pasted.pasted and pasted.pasted_units >= 80
    own = (
        '这句话是文中唯一回答这个问题的地方，它说得很清楚：小明最喜欢的实习地点就是上海人工智能实验室，其余部分讲的都是别的事情。'
        * 3
    )
    assert not paste_evidence(own + ZH_NEEDLE, allowed=(ZH_NEEDLE,), prompt=shown, language='zh').pasted


def test_single_key_in_a_short_list_of_alternatives_is_no_pass() -> None:
    verdict = single_needle_score(
        'Saffron, teal, crimson', needles=('x',), question='?', language='en', answer_keys=('saffron',)
    )
    assert verdict.score <= 0.3 and 'list' in verdict.flags


def test_single_missing_key_is_a_certain_zero() -> None:
    assert single('Ride a cable car to Coit Tower.') == RuleVerdict(
        0.0, True, 'the key is not in the answer', ('missing',)
    )


def test_single_spelled_out_number_is_left_to_the_judge() -> None:
    verdict = single_needle_score(
        'Three hundred and seventeen.', needles=('x',), question='?', language='en', answer_keys=('317',)
    )
    assert verdict.certain is False


def test_single_without_keys_falls_back_to_needle_recall() -> None:
    verdict = single('Eat a sandwich and sit in Dolores Park on a sunny day.', answer_keys=())
    assert verdict.score == 1.0 and verdict.certain and verdict.flags == ('recall',)
    assert single('Never eat a sandwich and sit in Dolores Park on a sunny day.', answer_keys=()).certain is False


def test_single_reasoning_is_stripped_and_bad_keys_rejected() -> None:
    assert single('<think>Maybe not.</think>Eat a sandwich and sit in Dolores Park on a sunny day.').score == 1.0
    assert single('<think>eat a sandwich and sit in Dolores Park on a sunny day').score == 0.0
    with pytest.raises(TypeError, match='answer_keys'):
        single('x', answer_keys='Dolores Park')
    with pytest.raises(ValueError, match='language'):
        single('x', language='fr')


# --- reasoning_answer_score --------------------------------------------------------------------------------------

GIOSTRA = (
    'Of all the restaurants in Florence, La Giostra is considered the best.',
    'The dish La Giostra is best known for is its truffle macaroni.',
    'The truffle macaroni served at La Giostra is made by a chef named Jack.',
)


def test_chain_candidates_name_the_chain_entities() -> None:
    assert chain_candidates(GIOSTRA, keyword='Jack', language='en') == ('Jack', 'Florence', 'La Giostra')
    zh = (
        '寒烟湖里最大的岛叫作鹤汀岛。',
        '鹤汀岛上唯一的一座房子属于养蜂人柯远山。',
        '养蜂人柯远山最喜欢的乐器是唢呐。',
    )
    assert set(chain_candidates(zh, keyword='唢呐', language='zh')) == {'唢呐', '鹤汀岛', '养蜂人柯远山', '柯远山'}


def reasoning(answer: str) -> RuleVerdict:
    candidates = chain_candidates(GIOSTRA, keyword='Jack', language='en')
    return reasoning_answer_score(answer, keyword='Jack', candidates=candidates, language='en')


@pytest.mark.parametrize(
    'answer', ['Jack.', 'The chef Jack makes it.', 'Jack makes it: the best restaurant is La Giostra, made by Jack.']
)
def test_reasoning_one_asserted_candidate_passes(answer: str) -> None:
    assert reasoning(answer).score == 1.0


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
    assert verdict.score <= 0.3
    assert flag in verdict.flags


def test_reasoning_pasted_chain_fails() -> None:
    shown = PromptText(shown=FILLER_EN * 40 + ' '.join(GIOSTRA) + FILLER_EN * 40)
    verdict = reasoning_answer_score(
        FILLER_EN * 10 + ' '.join(GIOSTRA),
        keyword='Jack',
        candidates=(),
        language='en',
        reference='Jack.',
        needles=GIOSTRA,
        prompt=shown,
    )
    assert verdict.score <= 0.3 and 'paste' in verdict.flags
    # The chain alone, walked in the model's words around the quoted links, is an answer.
    walked = reasoning_answer_score(
        'Jack. ' + ' '.join(GIOSTRA), keyword='Jack', candidates=(), language='en', needles=GIOSTRA, prompt=shown
    )
    assert walked.score == 1.0


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
    assert en_control(answer).score == 1.0


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
    assert score.guessed is True and score.score == 0.0
    assert 'guess' in score.explanation or 'paraphrase' in score.explanation


def test_control_paraphrase_of_the_fact_is_a_guess() -> None:
    score = en_control('No information in the text; people love a sandwich on a sunny day in Dolores Park.')
    assert score.guessed is True


# --- all four entry points stay fast on hostile input ------------------------------------------------------------


@pytest.mark.parametrize('hostile', ['not ' * 250_000, ' ' * 1_000_000, '不是' * 500_000, 'Jack, ' * 160_000])
def test_entry_points_are_fast_on_a_megabyte(hostile: str) -> None:
    started = time.perf_counter()
    score_single(
        hostile, needles=(SF_NEEDLE,), question=SF_QUESTION, reference=SF_NEEDLE, answer_keys=('Jack',), language='en'
    )
    score_reasoning(hostile, needles=GIOSTRA, reference='Jack.', answer_keys=('Jack',), language='en')
    score_multi(hostile, reference='4821937', answer_keys=('4821937',), language='en', distractor_values=('1234567',))
    score_control(hostile, answer_keys=('Jack',), language='zh')
    assert time.perf_counter() - started < 5.0


def test_single_cue_excuse_is_by_whole_word() -> None:
    # The needle's 'door' holds the letters 'or' but does not excuse the hedge 'or' in the answer.
    verdict = single_needle_score(
        'saffron or teal',
        needles=('The keeper of the Varnholt Point lighthouse repaints her front door saffron every April.',),
        question='What colour?',
        language='en',
        answer_keys=('saffron',),
    )
    assert verdict.certain is False and 'hedge' in verdict.flags


@pytest.mark.parametrize(
    ('answer', 'passes'),
    [
        # A right answer that rambles on: a negation in the next sentence is not about the key.
        (
            'The best thing to do in San Francisco is to eat a sandwich and sit in Dolores Park on a sunny day. If '
            "there is a lesson in all this, it's that you can't tell which small things will matter.",
            True,
        ),
        # A retraction reaches back across the sentence end.
        ('Eat a sandwich and sit in Dolores Park on a sunny day. No wait, that is not right.', False),
        ('Eat a sandwich and sit in Dolores Park on a sunny day. That is wrong.', False),
        # Inside the key's sentence a negation still counts.
        ('It is not true that you should eat a sandwich and sit in Dolores Park on a sunny day.', False),
    ],
)
def test_cues_count_in_the_keys_sentence_and_retractions_after_it(answer: str, passes: bool) -> None:
    from evalscope_niah.scoring import score_single
    from evalscope_niah.subsets import EN_ANSWER, EN_NEEDLE, EN_QUESTION

    verdict = score_single(
        answer, needles=(EN_NEEDLE,), question=EN_QUESTION, reference=EN_NEEDLE, answer_keys=(EN_ANSWER,), language='en'
    )
    assert (verdict.score >= 0.9 and verdict.certain) is passes, verdict
