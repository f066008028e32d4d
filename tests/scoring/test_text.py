"""Text as the rules see it (scoring/text.py): normalisation, units, key spans."""

from __future__ import annotations

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.scoring.candidates import one_candidate_score
from evalscope_niah.scoring.result import RuleScore
from evalscope_niah.scoring.single_needle import single_needle_score
from evalscope_niah.scoring.text import (
    answer_size,
    key_share,
    key_spans,
    normalise,
    read_answer,
    zh_fact_units,
    zh_units,
)


def test_normalise_folds_full_width_and_case() -> None:
    assert normalise('２０２３ ＡＢＣ Saffron') == '2023 abc saffron'


def test_english_key_spans_match_words_in_order_with_light_stemming() -> None:
    text = normalise('She paints her doors Saffron, every April; saffron again.')
    assert len(key_spans(text, normalise('door'))) == 1  # plural -s folded
    assert len(key_spans(text, 'saffron')) == 2
    assert key_spans(normalise('a blue door'), 'door blue') == []  # order matters


def test_chinese_key_spans_need_the_whole_entity() -> None:
    text = normalise('小明去了上海 人工智能、实验室。')
    assert key_spans(text, '上海人工智能实验室')  # whitespace and punctuation aside
    assert key_spans(normalise('上海人工智能研究院'), '上海人工智能实验室') == []


def test_chinese_units_and_fact_bigrams() -> None:
    assert zh_units('GPT4 在上海') == ['gpt4', '在', '上', '海']
    assert zh_fact_units('上海实验室', frozenset('上'), frozenset()) == {'海实', '实验', '验室'}


def test_sizes_and_key_share() -> None:
    assert answer_size('Eat a sandwich.', 'en') == 3
    assert answer_size('上海实验室', 'zh') == 5
    assert key_share('Sit in Dolores Park.', 'eat a sandwich and sit in Dolores Park') == 3 / 5


def test_the_ladders_read_an_answer_the_same_way() -> None:
    """read_answer is the opening of both ladders: language checked, keys a sequence (named), nothing to score from
    an empty answer, the scan normalised."""
    read = read_answer('  The Answer IS  42.\n', language='en', keys=('42',), keys_name='answer_keys')
    assert read is not None and read.final == 'The Answer IS  42.' and read.text == normalise(read.final)
    assert read_answer(' \n ', language='zh', keys=(), keys_name='answer_keys') is None
    with pytest.raises(TypeError, match=r'^candidates must be a sequence'):
        read_answer('x', language='en', keys='Jack', keys_name='candidates')
    with pytest.raises(NiahConfigError):
        read_answer('x', language='fr', keys=(), keys_name='answer_keys')
    empty = RuleScore.no_final_answer()
    assert (empty.accuracy, empty.certain, empty.flags) == (0.0, True, ('empty',))
    assert single_needle_score('  ', needles=('n',), question='q', language='en', answer_keys=('n',)) == empty
    assert one_candidate_score('', keyword='Jack', candidates=('Jack', 'Pim'), language='en') == empty
    with pytest.raises(TypeError, match=r'^answer_keys must'):
        single_needle_score('x', needles=('n',), question='q', language='en', answer_keys='n')
