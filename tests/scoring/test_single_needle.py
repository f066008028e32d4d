"""The single-needle task's rule ladder (scoring/single_needle.py)."""

from __future__ import annotations

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.scoring import (
    UNCERTAIN_SCORE_CAP,
    PromptText,
    RuleScore,
    strip_reasoning,
)
from evalscope_niah.scoring.single_needle import single_needle_score
from tests.support.rule_facts import (
    FILLER_EN,
    OWN_WORDS,
    SF_NEEDLE,
    SF_PROMPT,
    SF_QUESTION,
    ZH_NEEDLE,
    ZH_QUESTION,
)

# --- single_needle_score -----------------------------------------------------------------------------------------


def single(answer: str, **overrides: object) -> RuleScore:
    options: dict = {
        'needles': (SF_NEEDLE,),
        'question': SF_QUESTION,
        'language': 'en',
        'answer_keys': ('eat a sandwich and sit in Dolores Park on a sunny day',),
    }
    options.update(overrides)
    return single_needle_score(strip_reasoning(answer), **options)


def zh_single(answer: str) -> RuleScore:
    return single_needle_score(
        answer, needles=(ZH_NEEDLE,), question=ZH_QUESTION, language='zh', answer_keys=('上海人工智能实验室',)
    )


def test_single_plain_key_is_a_certain_pass() -> None:
    verdict = single('Eat a sandwich and sit in Dolores Park on a sunny day.')
    assert verdict == RuleScore.verdict(1.0, True, 'states the key plainly', ('exact',))


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
    assert verdict.accuracy <= UNCERTAIN_SCORE_CAP
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
    assert verdict.accuracy == 1.0 and verdict.certain


def test_single_cue_far_from_the_key_is_ignored() -> None:
    answer = 'Eat a sandwich and sit in Dolores Park on a sunny day. ' + 'It is a lovely city to visit in spring. ' * 2
    assert single(answer + 'Not every day is sunny there.').accuracy == 1.0


def test_single_chinese_other_institution_sharing_bigrams_is_no_pass() -> None:
    # It shares 5 of the key's 8 bigrams: needle_recall gave it 0.67.
    verdict = zh_single('上海人工智能研究院。')
    assert verdict.accuracy <= 0.3
    assert verdict.certain is False  # a near miss: a judge may look


@pytest.mark.parametrize('answer', ['上海人工智能实验室', '上海 人工智能，实验室', '是“上海人工智能实验室”。'])
def test_single_chinese_key_matches_whole_with_spacing_and_punctuation(answer: str) -> None:
    assert zh_single(answer).accuracy == 1.0


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


def test_single_key_inside_a_pasted_context_is_not_a_certain_pass() -> None:
    verdict = single(FILLER_EN * 10 + SF_NEEDLE + FILLER_EN * 10, prompt=SF_PROMPT)
    assert verdict.certain is False
    assert verdict.accuracy < 0.3
    assert 'paste' in verdict.flags
    assert 'copied verbatim from the prompt' in verdict.explanation


@pytest.mark.parametrize('repeats', [1, 3, 6])
def test_single_verbose_right_answer_passes_whatever_its_length(repeats: int) -> None:
    # Preamble, the quoted needle, and 60-360 words of the model's own explanation: quoting is not pasting.
    answer = f'Based on the document, the answer is to eat a sandwich and sit in Dolores Park. It says: "{SF_NEEDLE}" '
    verdict = single(answer + ' '.join([OWN_WORDS] * repeats), prompt=SF_PROMPT)
    assert (verdict.accuracy, verdict.certain, verdict.flags) == (1.0, True, ('exact',))
    # Without the prompt the same answers stay under the last-resort bound.
    assert single(answer + ' '.join([OWN_WORDS] * repeats)).accuracy == 1.0


def test_single_one_quoted_sentence_of_the_haystack_is_no_paste_two_paragraphs_are() -> None:
    quote = f'The answer is to eat a sandwich and sit in Dolores Park on a sunny day. {FILLER_EN}{SF_NEEDLE}'
    assert single(quote, prompt=SF_PROMPT).accuracy == 1.0
    assert 'paste' in single(FILLER_EN * 3 + SF_NEEDLE, prompt=SF_PROMPT).flags


def test_single_echoing_the_question_and_template_is_no_paste() -> None:
    template = 'You are a careful reader. Answer only from the document, in one short sentence, and do not guess.'
    shown = PromptText(shown=template + FILLER_EN * 30 + SF_NEEDLE + SF_QUESTION, template=(template,))
    answer = f'{template} {SF_QUESTION} {template} {SF_QUESTION} {template} {SF_NEEDLE}'
    assert single(answer, prompt=shown).accuracy == 1.0


def test_single_without_a_prompt_a_very_long_answer_is_left_to_the_judge() -> None:
    verdict = single(FILLER_EN * 30 + SF_NEEDLE)  # ~500 words, over the last-resort 400
    assert verdict.certain is False and verdict.accuracy < 0.3
    assert 'long' in verdict.flags and 'last-resort' in verdict.explanation


def test_single_key_in_a_short_list_of_alternatives_is_no_pass() -> None:
    verdict = single_needle_score(
        'Saffron, teal, crimson', needles=('x',), question='?', language='en', answer_keys=('saffron',)
    )
    assert verdict.accuracy <= 0.3 and 'list' in verdict.flags


def test_single_missing_key_is_a_certain_zero() -> None:
    assert single('Ride a cable car to Coit Tower.') == RuleScore.verdict(
        0.0, True, 'the key is not in the answer', ('missing',)
    )


def test_single_spelled_out_number_is_left_to_the_judge() -> None:
    verdict = single_needle_score(
        'Three hundred and seventeen.', needles=('x',), question='?', language='en', answer_keys=('317',)
    )
    assert verdict.certain is False


def test_single_without_keys_falls_back_to_needle_recall() -> None:
    verdict = single('Eat a sandwich and sit in Dolores Park on a sunny day.', answer_keys=())
    assert verdict.accuracy == 1.0 and verdict.certain and verdict.flags == ('recall',)
    assert single('Never eat a sandwich and sit in Dolores Park on a sunny day.', answer_keys=()).certain is False


def test_single_reasoning_is_stripped_and_bad_keys_rejected() -> None:
    assert single('<think>Maybe not.</think>Eat a sandwich and sit in Dolores Park on a sunny day.').accuracy == 1.0
    assert single('<think>eat a sandwich and sit in Dolores Park on a sunny day').accuracy == 0.0
    with pytest.raises(TypeError, match='answer_keys'):
        single('x', answer_keys='Dolores Park')
    with pytest.raises(NiahConfigError, match='language'):
        single('x', language='fr')


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
    from evalscope_niah.params.subsets import EN_ANSWER, EN_NEEDLE, EN_QUESTION

    verdict = single_needle_score(
        answer, needles=(EN_NEEDLE,), question=EN_QUESTION, reference=EN_NEEDLE, answer_keys=(EN_ANSWER,), language='en'
    )
    assert (verdict.accuracy >= 0.9 and verdict.certain) is passes, verdict


# --- several needles, one key fact each (all_keys) ---------------------------------------------------------------

PIZZA = (
    'Figs are one of the secret ingredients needed to build the perfect pizza.',
    'Prosciutto is one of the secret ingredients needed to build the perfect pizza.',
    'Goat cheese is one of the secret ingredients needed to build the perfect pizza.',
)
PIZZA_KEYS = ('Figs', 'Prosciutto', 'Goat cheese')


@pytest.mark.parametrize(
    ('answer', 'accuracy', 'certain'),
    [
        ('Figs, prosciutto and goat cheese.', 1.0, True),  # the keys together are no list of guesses
        ('Goat cheese; also prosciutto, and figs.', 1.0, True),  # in any order
        ('Figs and prosciutto.', UNCERTAIN_SCORE_CAP, True),  # one missing: never a pass
        ('Basil and mozzarella.', 0.0, True),
        ('Figs, prosciutto, goat cheese, basil, olives or ham.', None, False),  # padded with guesses
        ('Not figs, prosciutto or goat cheese.', None, False),  # negated
    ],
)
def test_every_key_must_be_stated_when_each_needle_has_one(answer: str, accuracy: float | None, certain: bool) -> None:
    rule = single_needle_score(
        answer,
        needles=PIZZA,
        question='What is the secret ingredient needed to build the perfect pizza?',
        language='en',
        answer_keys=PIZZA_KEYS,
        all_keys=True,
    )
    assert rule.certain == certain, rule
    if accuracy is None:
        assert rule.accuracy <= UNCERTAIN_SCORE_CAP
    else:
        assert rule.accuracy == pytest.approx(accuracy)
    # The same keys as alternatives (one needle's) pass any one of them: all_keys is what asks for every one.
    alone = single_needle_score('Figs.', needles=PIZZA[:1], question='?', language='en', answer_keys=PIZZA_KEYS)
    assert alone.accuracy == 1.0
