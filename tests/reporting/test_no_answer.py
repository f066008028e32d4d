"""The console's words for replies with no final answer: said only above NO_ANSWER_ALERT, with cause and fix."""

from __future__ import annotations

from evalscope_niah.reporting.no_answer import NO_ANSWER_ALERT, no_answer_message
from tests.support.results import errored, sample


def _subset(answered: int, **flagged: int) -> list:
    return [sample(1.0) for _ in range(answered)] + [
        sample(None, no_answer=reason) for reason, count in flagged.items() for _ in range(count)
    ]


def test_silent_up_to_the_alert_share() -> None:
    assert NO_ANSWER_ALERT == 0.1
    assert no_answer_message(_subset(9, reasoning_only=1), subset='en') is None  # exactly 10 %
    assert no_answer_message(_subset(4), subset='en') is None
    assert no_answer_message([], subset='en') is None
    assert no_answer_message([*_subset(1), *[errored() for _ in range(5)]], subset='en') is None  # errors are not it


def test_names_each_reason_with_its_cause_and_fix() -> None:
    message = no_answer_message(_subset(6, reasoning_only=3, tool_call_only=1), subset='en')
    assert message is not None
    assert message.startswith('subset en: 4 of 10 replies (40%) had no final answer; they are left out of accuracy')
    assert '3 held only reasoning' in message and '--reasoning-parser' in message and '</think>' in message
    assert '1 held only a tool call' in message and "tool_choice 'none'" in message
    only_calls = no_answer_message(_subset(1, tool_call_only=1), subset='en')
    assert only_calls is not None and 'reasoning-parser' not in only_calls


def test_counts_one_subset() -> None:
    results = [*_subset(1, reasoning_only=1), *[sample(1.0, subset='zh') for _ in range(5)]]
    assert no_answer_message(results, subset='zh') is None
    assert '1 of 2 replies' in (no_answer_message(results, subset='en') or '')
