"""The corpus repeated to fill the longest length: how often it may be, refused past max_corpus_repeats."""

from __future__ import annotations

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.making.repeated_corpus import check_corpus_repeats
from evalscope_niah.tasks.compose import parse_params


def test_corpus_repeats_boundary() -> None:
    params = parse_params({})
    subset = params.resolve_subset('english')
    check_corpus_repeats(
        subset=subset, corpus_tokens=5_000, max_context_length=100_000, max_corpus_repeats=params.max_corpus_repeats
    )  # 20 x
    with pytest.raises(NiahConfigError) as info:
        check_corpus_repeats(
            subset=subset, corpus_tokens=4_999, max_context_length=100_000, max_corpus_repeats=params.max_corpus_repeats
        )
    assert info.value.param == 'max_corpus_repeats'
    assert "would repeat corpus file 'PaulGraham_Essays.txt' of subset 'english' (4,999 tokens) 20.0 times" in str(
        info.value
    )
    raised = parse_params({'max_corpus_repeats': 21})
    check_corpus_repeats(
        subset=subset, corpus_tokens=4_999, max_context_length=100_000, max_corpus_repeats=raised.max_corpus_repeats
    )
    with pytest.raises(NiahConfigError, match='max_corpus_repeats'):
        parse_params({'max_corpus_repeats': 0})
