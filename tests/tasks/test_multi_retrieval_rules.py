"""The multi-value task's rule (tasks/multi_retrieval/rules.py)."""

from __future__ import annotations

import pytest

from evalscope_niah.scoring import (
    UNCERTAIN_SCORE_CAP,
    PromptText,
    RuleScore,
    strip_reasoning,
)
from evalscope_niah.tasks.multi_retrieval.rules import multi_retrieval_score
from tests.support.rule_facts import (
    FILLER_EN,
    MULTI_NEEDLES,
    OWN_WORDS,
    VALUES,
)

# --- multi_retrieval_score --------------------------------------------------------------------------------------


def multi(answer: str, values: tuple[str, ...] = VALUES) -> RuleScore:
    return multi_retrieval_score(strip_reasoning(answer), values=values)


def outcome(result: RuleScore) -> tuple[float, float, float, tuple[str, ...], tuple[str, ...]]:
    """A multi-value score as (acc, recall, precision, found, wrong)."""
    values, evidence = result.values, result.evidence
    return values['acc'], values['rule_recall'], values['precision'], evidence['found'], evidence['wrong']


def test_multi_all_values_found() -> None:
    reply = 'The special magic numbers mentioned are: 4821937, 1234567, 7654321 and 9081726.'
    assert outcome(multi(reply)) == (1.0, 1.0, 1.0, VALUES, ())
    assert multi(reply).evidence['f1'] == 1.0


def test_multi_found_is_in_needle_order_not_answer_order() -> None:
    scores = multi('9081726 and 4821937')
    assert scores.evidence['found'] == ('4821937', '9081726')
    assert scores.values['rule_recall'] == 0.5
    assert scores.values['precision'] == 1.0
    assert scores.evidence['f1'] == pytest.approx(2 / 3)


def test_multi_partial_recall() -> None:
    scores = multi('I found these numbers in the text:\n- 4821937\n- 7654321')
    assert scores.values['rule_recall'] == 0.5
    assert scores.values['precision'] == 1.0
    assert scores.evidence['found'] == ('4821937', '7654321')


def test_multi_extra_numbers_lower_precision() -> None:
    right = multi('4821937, 1234567, 7654321, 9081726')
    one_guess = multi('4821937, 1234567, 7654321, 9081726, 5555555')
    many_guesses = multi('4821937, 1234567, 7654321, 9081726, 5555555, 6666666, 3141592, 2718281')
    assert right.values['rule_recall'] == one_guess.values['rule_recall'] == many_guesses.values['rule_recall'] == 1.0
    assert one_guess.values['precision'] == pytest.approx(4 / 5)
    assert many_guesses.values['precision'] == pytest.approx(4 / 8)
    assert right.evidence['f1'] > one_guess.evidence['f1'] > many_guesses.evidence['f1']


def test_multi_listing_every_number_is_not_rewarded() -> None:
    # A model that dumps every 7-digit number it saw in the haystack finds all needles but earns a low F1.
    dump = ', '.join([*VALUES, *(str(1000000 + 37 * i) for i in range(36))])
    scores = multi_retrieval_score(dump, values=VALUES)
    assert scores.values['rule_recall'] == 1.0
    # Its wrong numbers sink it, not its length: nothing of it is pasted prose, so nothing else is scaled.
    assert scores.values['precision'] == pytest.approx(4 / 40)
    assert scores.evidence['length_factor'] == 1.0
    assert scores.evidence['f1'] < 0.2


def test_multi_wrong_numbers_only() -> None:
    assert outcome(multi('The numbers are 1111111 and 2222222.')) == (0.0, 0.0, 0.0, (), ('1111111', '2222222'))


def test_multi_repeated_value_counts_once() -> None:
    scores = multi('4821937. To repeat: 4821937! Again 4821937, plus 5555555.')
    assert scores.evidence['found'] == ('4821937',)
    assert scores.values['precision'] == pytest.approx(1 / 2)


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
    assert outcome(multi(answer))[:4] == (0.0, 0.0, 0.0, ())


def test_multi_scores_final_answer_only() -> None:
    reply = (
        '<think>Candidates: 4821937, 1234567, 7654321, 9081726, 5555555.</think>\nThe numbers are 4821937 and 5555555.'
    )
    scores = multi(reply)
    assert scores.evidence['found'] == ('4821937',)
    assert scores.values['rule_recall'] == 0.25
    assert scores.values['precision'] == 0.5


def test_multi_numbers_of_other_lengths_are_not_candidates() -> None:
    reply = 'There are 4 numbers for the 2 cities in 2024: 4821937, 1234567, 7654321 and 9081726 (3 of them odd).'
    assert multi(reply).values['precision'] == 1.0


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
    assert scores.evidence['found'] == ('4821937', '1234567')
    assert scores.values['precision'] == 1.0


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
    assert scores.evidence['found'] == ('4821937', '1234567')
    assert scores.values['precision'] == 1.0


def test_multi_short_values_separated_by_a_separator_stay_separate() -> None:
    # With 3-digit values, '123,456' is a list of two values, not the number 123456.
    assert multi_retrieval_score('123,456', values=('123', '456')).values['rule_recall'] == 1.0
    assert multi_retrieval_score('123 456', values=('123', '456')).values['precision'] == 1.0


def test_multi_mixed_separators_do_not_merge() -> None:
    # '4,821 937' is not a consistent grouping; its runs are too short to be candidates.
    assert multi('4,821 937').evidence['found'] == ()


def test_multi_number_glued_into_longer_run_does_not_count() -> None:
    # Concatenating values is not stating them.
    assert multi('48219371234567').evidence['found'] == ()
    assert multi('Code: 482193712').evidence['found'] == ()


def test_multi_numbers_next_to_letters_and_full_width_digits() -> None:
    assert multi('Number#1: 4821937; id=A1234567B').evidence['found'] == ('4821937', '1234567')
    assert multi('数字是４８２１９３７和１２３４５６７。').evidence['found'] == ('4821937', '1234567')


def test_multi_chinese_reply() -> None:
    reply = '<think>让我找一下文中的特殊数字。</think>文中的特殊魔法数字有：4821937、1234567、7654321。另有9999999。'
    scores = multi(reply)
    assert scores.evidence['found'] == ('4821937', '1234567', '7654321')
    assert scores.values['rule_recall'] == 0.75
    assert scores.values['precision'] == 0.75
    assert scores.evidence['f1'] == pytest.approx(0.75)


def test_multi_values_of_different_lengths() -> None:
    scores = multi_retrieval_score(
        'The codes are 12345 and 4821937, and there are 2 of them.', values=('12345', '4821937')
    )
    assert scores.values['rule_recall'] == 1.0
    assert scores.values['precision'] == 1.0


def test_multi_duplicate_values_count_once() -> None:
    scores = multi_retrieval_score('4821937', values=('4821937', '4821937', '1234567'))
    assert scores.values['rule_recall'] == 0.5
    assert scores.evidence['found'] == ('4821937',)


def test_multi_scores_are_in_unit_range() -> None:
    for answer in ('', '4821937', '4821937 5555555 6666666', ', '.join(VALUES)):
        scores = multi(answer)
        for value in (scores.values['rule_recall'], scores.values['precision'], scores.evidence['f1']):
            assert 0.0 <= value <= 1.0


def test_multi_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match='values'):
        multi_retrieval_score('4821937', values=())
    with pytest.raises(TypeError, match='values'):
        multi_retrieval_score('4821937', values='4821937')
    with pytest.raises(ValueError, match='digit strings'):
        multi_retrieval_score('4821937', values=('4821937', 'abc'))


# --- distractors and length in multi-value retrieval ------------------------------------------------------------


def test_multi_distractor_values_count_as_wrong_and_are_named() -> None:
    scores = multi_retrieval_score(
        '4821937, 1234567, 3333333', values=('4821937', '1234567'), distractor_values=('3333333', '4444444')
    )
    assert scores.values['precision'] == pytest.approx(2 / 3)
    assert scores.evidence['wrong'] == ('3333333',)
    assert scores.evidence['distractors_named'] == ('3333333',)
    assert scores.accuracy == pytest.approx(2 / 3)
    assert 'distractor' in scores.explanation


def test_multi_distractors_of_another_length_are_still_candidates() -> None:
    scores = multi_retrieval_score('4821937 and 12345678', values=('4821937',), distractor_values=('12345678',))
    assert scores.evidence['distractors_named'] == ('12345678',)
    assert scores.values['precision'] == 0.5


def test_multi_score_is_recall_times_precision_and_stricter_than_f1_on_a_dump() -> None:
    dump = multi_retrieval_score('4821937, 1111111, 2222222, 3333333', values=('4821937',))
    assert dump.accuracy == pytest.approx(0.25)
    assert dump.evidence['f1'] == pytest.approx(0.4)


def test_multi_pasted_context_is_penalised_by_evidence() -> None:
    pasted = FILLER_EN * 20 + ' '.join(MULTI_NEEDLES) + FILLER_EN * 20
    shown = PromptText(shown=FILLER_EN * 50 + ' '.join(MULTI_NEEDLES) + FILLER_EN * 50)
    scores = multi_retrieval_score(pasted, values=VALUES, needles=MULTI_NEEDLES, prompt=shown)
    assert scores.values['rule_recall'] == 1.0
    assert scores.evidence['length_factor'] < 0.15  # the share of the answer that is not copied filler
    assert scores.accuracy < 0.15
    # The needles quoted with an explanation of any length are no paste: nothing beyond them is copied.
    chatty = multi_retrieval_score(
        'The document gives four of them, one per sentence: ' + ' '.join(MULTI_NEEDLES) + ' ' + OWN_WORDS,
        values=VALUES,
        needles=MULTI_NEEDLES,
        prompt=shown,
    )
    assert chatty.evidence['length_factor'] == 1.0 and chatty.accuracy == 1.0


def test_multi_without_a_prompt_only_the_last_resort_bound_scales() -> None:
    pasted = FILLER_EN * 8 + ' '.join(MULTI_NEEDLES) + FILLER_EN * 8  # ~330 words: under the last resort
    assert multi_retrieval_score(pasted, values=VALUES).evidence['length_factor'] == 1.0
    dump = FILLER_EN * 40 + ' '.join(MULTI_NEEDLES)  # ~740 words
    scores = multi_retrieval_score(dump, values=VALUES)
    assert scores.evidence['length_factor'] == pytest.approx(400 / len(dump.split()), rel=0.01)


def test_multi_rejects_bad_distractor_values() -> None:
    with pytest.raises(ValueError, match='distractor_values'):
        multi_retrieval_score('1', values=('1',), distractor_values=('12a',))
    with pytest.raises(TypeError, match='distractor_values'):
        multi_retrieval_score('1', values=('1',), distractor_values='1234567')


@pytest.mark.parametrize(
    ('language', 'answer'),
    [
        ('en', 'It is not 4821937, 1234567 or 7654321; the document never says that.'),
        ('zh', '不是4821937、1234567、7654321，文中没有这样说。'),
    ],
)
def test_denied_values_are_not_given(language: str, answer: str) -> None:
    """Found by the conformance suite: a negated list scored 1.0 certain before the negation cue was read."""
    verdict = multi_retrieval_score(answer, values=('4821937', '1234567', '7654321'), language=language)
    assert verdict.accuracy <= UNCERTAIN_SCORE_CAP and not verdict.certain and 'negated' in verdict.explanation
    plain = multi_retrieval_score('4821937, 1234567, 7654321', values=('4821937', '1234567', '7654321'))
    assert (plain.accuracy, plain.certain) == (1.0, True)
