"""Behavioural tests for the judge prompt, verdict parsing and rubric mapping."""

from __future__ import annotations

import pytest

from evalscope_niah.judge import (
    ALLOWED_RATINGS,
    JUDGE_SYSTEM_PROMPT,
    JUDGE_USER_TEMPLATE,
    RUBRIC,
    Verdict,
    build_judge_messages,
    parse_verdict,
    rating_to_accuracy,
)

# --- prompt ------------------------------------------------------------------------------------------------------


def test_rubric_constants() -> None:
    assert tuple(RUBRIC) == ALLOWED_RATINGS == (1, 3, 5, 7, 10)
    assert 'unrelated' in RUBRIC[1]
    assert 'perfectly' in RUBRIC[10]
    # The prompt carries the rubric abridged, every rating in order, each with its key word.
    positions = [
        JUDGE_SYSTEM_PROMPT.index(f'{rating} {word}')
        for rating, word in zip(RUBRIC, ('unrelated', 'minor', 'moderate', 'aligns', 'completely'), strict=True)
    ]
    assert positions == sorted(positions)
    assert '"rating"' in JUDGE_SYSTEM_PROMPT
    assert '"reasoning"' in JUDGE_SYSTEM_PROMPT


def test_user_template_has_exactly_the_three_placeholders() -> None:
    filled = JUDGE_USER_TEMPLATE.format(question='Q', reference='R', answer='A')
    assert '{' not in filled
    assert '}' not in filled


def test_build_judge_messages_contains_task_but_no_context() -> None:
    haystack = 'The harbour saw many ships. ' * 50
    needle = 'The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.'
    question = 'What is the best thing to do in San Francisco?'
    answer = 'Eat a sandwich in Dolores Park {with braces}.'
    messages = build_judge_messages(question=question, reference=needle, answer=answer)

    assert [m['role'] for m in messages] == ['system', 'user']
    assert all(set(m) == {'role', 'content'} for m in messages)
    assert messages[0]['content'] == JUDGE_SYSTEM_PROMPT
    user = messages[1]['content']
    assert question in user
    assert needle in user
    assert answer in user  # braces in the answer survive formatting
    text = ' '.join(m['content'] for m in messages)
    assert 'harbour' not in text
    assert haystack.strip() not in text


def test_build_judge_messages_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        build_judge_messages('q', 'r', 'a')  # type: ignore[misc]


# --- rating_to_accuracy ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('rating', 'accuracy'),
    [(1, 0.0), (3, 2 / 9), (5, 4 / 9), (7, 6 / 9), (10, 1.0), (8, 7 / 9), (0, 0.0), (-5, 0.0), (11, 1.0), (42, 1.0)],
)
def test_rating_to_accuracy(rating: float, accuracy: float) -> None:
    assert rating_to_accuracy(rating) == pytest.approx(accuracy)


# --- parse_verdict: accepted replies -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('reply', 'rating'),
    [
        # Plain JSON, any key order, string rating.
        ('{"reasoning": "Matches the reference.", "rating": 10}', 10),
        ('{"rating": 3, "reasoning": "Unrelated place."}', 3),
        ('{"reasoning": "ok", "rating": "7"}', 7),
        ('{"Rating": 5}', 5),
        # Code fences.
        ('```json\n{"reasoning": "Names the park but not the sandwich.", "rating": 7}\n```', 7),
        ('```\n{"reasoning": "x", "rating": 1}\n```', 1),
        # Prose around the JSON.
        ('Here is my evaluation:\n{"reasoning": "Correct.", "rating": 10}\nI hope this helps.', 10),
        # Reasoning block first; the number inside it is ignored.
        ('<think>Maybe a 3? Rating: 3. No, it is exact.</think>\n{"reasoning": "Exact.", "rating": 10}', 10),
        ('<thinking>hmm</thinking>Rating: 5', 5),
        # Labelled and conventional forms.
        ('Rating: 7', 7),
        ('rating:7', 7),
        ('**Rating:** 10', 10),
        ('**Rating**: 10', 10),
        ('Final rating = 5', 5),
        ('Rating (1-10): 3', 3),
        ('[[7]]', 7),
        ('The verdict is [[ 10 ]].', 10),
        ('7/10', 7),
        ('Score: 7/10', 7),
        ('I give it 3 out of 10.', 3),
        # Prose verdicts with a clear number.
        ('The answer names the right place, so I would rate it a 10.', 10),
        ('It misses the sandwich; I give this response a 7.', 7),
        ('The rating is 5 because the day is wrong.', 5),
        ('This deserves a 1.', 1),
        # A bare number.
        ('7', 7),
        ('**10**', 10),
        ('  3.\n', 3),
        # The same verdict repeated is consistent.
        ('{"reasoning": "Exact.", "rating": 10}\nRating: 10', 10),
        ('Rating: 7\n\nFinal rating: 7/10', 7),
        # Numbers inside the JSON reasoning are not ratings.
        ('{"reasoning": "Has 3 of the 7 facts; I would not give it a 10.", "rating": 5}', 5),
        # A rubric list like 1/3/5/7/10 is not a "7/10" rating.
        ('Allowed ratings are 1/3/5/7/10. Rating: 5', 5),
        # In 1..10 but not a rubric value: accepted, mapped linearly.
        ('Rating: 8', 8),
        ('{"rating": 7.5}', 7.5),
        ('{"rating": 2}', 2),
    ],
)
def test_parse_verdict_ok(reply: str, rating: float) -> None:
    verdict = parse_verdict(reply)
    assert verdict.status == 'ok', verdict.reason
    assert verdict.rating == rating
    assert verdict.accuracy == pytest.approx(rating_to_accuracy(rating))


def test_parse_verdict_keeps_judge_reasoning() -> None:
    verdict = parse_verdict('{"reasoning": "Names the park but not the sandwich.", "rating": 7}')
    assert verdict == Verdict(status='ok', rating=7.0, accuracy=6 / 9, reason='Names the park but not the sandwich.')


# --- parse_verdict: rejected replies -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('reply', 'reason'),
    [
        ('', 'empty'),
        ('   \n', 'empty'),
        # Out of range.
        ('{"reasoning": "x", "rating": 42}', 'rating 42 is outside 1..10'),
        ('Rating: -1', 'rating -1 is outside 1..10'),
        ('Rating: 0', 'rating 0 is outside 1..10'),
        ('[[11]]', 'rating 11 is outside'),
        ('0', 'rating 0 is outside'),
        # Refusals and replies without a rating.
        ('I cannot evaluate this.', 'declined'),
        ("I'm sorry, but I can't assess this answer without more context.", 'declined'),
        ('The answer is mostly right.', 'no rating found'),
        ('{"reasoning": "The answer is correct."}', 'no rating found'),
        ('{"reasoning": "x", "rating": null}', 'not a number'),
        ('{"reasoning": "x", "rating": "N/A"}', 'not a number'),
        # Reasoning only: the judge ran out of tokens.
        ('<think>The answer looks right, Rating: 10', 'no final answer'),
        # Conflicting verdicts.
        ('{"reasoning": "Unrelated.", "rating": 3}\nRating: 10', 'two different ratings: 3 and 10'),
        ('Rating: 7\n[[5]]', 'two different ratings: 7 and 5'),
        ('[[1]] ... Rating: 5 ... 10/10', '3 different ratings: 1, 5 and 10'),
        ('{"rating": 3}\n{"rating": 7}', 'two different ratings: 3 and 7'),
    ],
)
def test_parse_verdict_unparsable(reply: str, reason: str) -> None:
    verdict = parse_verdict(reply)
    assert verdict.status == 'unparsable'
    assert verdict.rating is None
    assert verdict.accuracy is None
    assert reason in verdict.reason


@pytest.mark.parametrize(
    'reply',
    [
        '{',
        '{"rating": ',
        '}{',
        '```json\n{"rating": [7]}\n```',
        '\x00\x01',
        '{' * 1000,
        '{"a": ' * 50_000,
        'Rating: ' + '9' * 400,
    ],
)
def test_parse_verdict_never_raises(reply: str) -> None:
    verdict = parse_verdict(reply)
    assert verdict.status in {'ok', 'unparsable'}
