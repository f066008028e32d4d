"""OpenCompass CDME's names read as ours: one-value names become one-value lists, tokenizer_model a tiktoken
encoding, and a user's keyword chain is checked whole."""

from __future__ import annotations

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.params.cdme_names import alias_value, check_chain


@pytest.mark.parametrize(
    ('alias', 'canonical', 'value', 'expected'),
    [
        ('needle', 'needles', '\nA needle.\n', ['\nA needle.\n']),
        ('length', 'context_lengths', 8000, [8000]),
        ('depth', 'document_depth_percents', 25, [25]),
        ('tokenizer_model', 'tokenizer_path', 'gpt-4', 'tiktoken:cl100k_base'),
        ('num_repeats_per_file', 'num_repeats', 3, 3),
    ],
)
def test_alias_value(alias: str, canonical: str, value, expected) -> None:
    assert alias_value(alias, canonical, value) == expected


def test_one_value_alias_refuses_a_list() -> None:
    with pytest.raises(NiahConfigError) as info:
        alias_value('length', 'context_lengths', [1000, 2000])
    assert info.value.param == 'length' and 'context_lengths' in info.value.detail


@pytest.mark.parametrize(
    ('needles', 'question', 'param'),
    [
        (None, 'Who?', 'subsets.s.needles'),
        (['Jack cooks.'], None, 'subsets.s.retrieval_question'),
        (['Bob cooks.'], 'Who?', 'subsets.s.keyword'),
    ],
)
def test_check_chain_refuses_an_unanswerable_chain(needles, question, param: str) -> None:
    with pytest.raises(NiahConfigError) as info:
        check_chain('s', keyword='Jack', needles=needles, question=question)
    assert info.value.param == param


def test_check_chain_accepts_a_chain_whose_link_holds_the_keyword() -> None:
    check_chain('s', keyword='Jack', needles=['A is B.', 'B is cooked by Jack.'], question='Who cooks A?')
