"""The answer-format guide: appended to a plain question; before a question's own format request, CDME's
think-first hint instead, so the format is asked once."""

from __future__ import annotations

import pytest

from evalscope_niah.tasks.answer_format import BLANK, answer_format_guide, guided_question


def test_plain_question_gets_the_format_appended() -> None:
    guide = answer_format_guide(needle='The key is under the red pot.', answer='the red pot', language='en')
    assert guide == f"Answer in the format: 'The key is under {BLANK}.'"
    assert guided_question('Where is the key?', guide, language='en') == f'Where is the key? {guide}'
    assert (
        guided_question('钥匙在哪里？', '请按照“甲”的格式回答。', language='zh') == '钥匙在哪里？请按照“甲”的格式回答。'
    )


@pytest.mark.parametrize(
    ('question', 'language', 'request_text'),
    [
        ('小明最喜欢的实习地点是哪里？请按照“小明最喜欢的实习地点就是____。”的格式回答。', 'zh', '请按照'),
        ("Who makes it? Please answer in the format 'It is made by ____.'", 'en', 'Please answer'),
    ],
)
def test_question_with_its_own_format_request_gets_the_think_first_hint(
    question: str, language: str, request_text: str
) -> None:
    guided = guided_question(question, 'UNUSED', language=language)
    assert 'UNUSED' not in guided
    before, after = guided.split(request_text, 1)
    assert question.startswith(before[: question.index(request_text)])
    assert len(before) > question.index(request_text)  # the hint sits before the request
    assert request_text + after == question[question.index(request_text) :]
