"""How the two languages are written: which language a text is in, and where a sentence of prose ends."""

from __future__ import annotations

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.languages import LANGUAGE_SCAN_CHARS, PROSE_SENTENCE_END, PROSE_SENTENCE_END_RULE, text_language


@pytest.mark.parametrize(
    ('text', 'language'),
    [
        ('The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.', 'en'),
        ('小明最喜欢的实习的地点就是上海人工智能实验室。', 'zh'),
        ('小明的密码是 OpenAI-2024', 'zh'),  # a Latin word in Chinese text
        ('The capital of the province is 北京', 'en'),  # a Chinese name in English text
        ('La Giostra的松露通心粉出自一位名叫Jack的厨师之手', 'zh'),
    ],
)
def test_text_language_is_read_from_the_letters(text: str, language: str) -> None:
    assert text_language(text, default='en') == language
    assert text_language(text, default='zh') == language


def test_text_language_without_letters_is_the_default() -> None:
    assert text_language('317', '', default='zh') == 'zh'
    assert text_language('317', default='en') == 'en'


def test_text_language_reads_a_bounded_start_of_each_text() -> None:
    """A generated haystack or a hostile needle of megabytes is read from its start: Chinese for its first
    LANGUAGE_SCAN_CHARS, then English for a megabyte, reads as Chinese."""
    text = '天' * LANGUAGE_SCAN_CHARS + ' word' * 200_000
    assert text_language(text, default='en') == 'zh'
    assert text_language(' word' * 200_000 + '天' * 3 * LANGUAGE_SCAN_CHARS, default='zh') == 'en'


def test_text_language_refuses_an_unknown_default() -> None:
    with pytest.raises(NiahConfigError) as info:
        text_language('text', default='fr')
    assert info.value.param == 'language'


@pytest.mark.parametrize(
    ('language', 'text', 'ends'),
    [
        ('en', 'One. Two! "Three?" Four', ['One. ', 'Two! ', '"Three?" ']),
        ('en', 'Pi is 3.14 exactly', []),  # a mark inside a number is no sentence end: whitespace must follow
        ('zh', '一。二！三？四；五…六', ['一。', '二！', '三？', '四；', '五…']),
        ('zh', '他说：“走吧。”然后', ['他说：“走吧。”']),
    ],
)
def test_a_sentence_of_prose_ends_at_a_mark_with_its_closers(language: str, text: str, ends: list[str]) -> None:
    found, start = [], 0
    for match in PROSE_SENTENCE_END[language].finditer(text):
        found.append(text[start : match.end()])
        start = match.end()
    assert found == ends
    assert set(PROSE_SENTENCE_END_RULE) == set(PROSE_SENTENCE_END)  # the rule in words for every language
