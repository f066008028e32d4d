"""The window check's search for the lengths that do not fit in the server's tokens, and its refusal."""

from __future__ import annotations

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.making.window_fit import check_window, served_lengths_past
from evalscope_niah.metadata import GridCell

LENGTHS = [1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000]


class Counter:
    """A server whose tokenizer gives each prompt ``ratio`` times our count plus a fixed template overhead."""

    def __init__(self, ratio: float, overhead: int = 0) -> None:
        self.ratio, self.overhead = ratio, overhead
        self.asked: list[tuple[str, int]] = []

    def __call__(self, subset: str, length: int) -> int:
        self.asked.append((subset, length))
        return round(length * self.ratio) + self.overhead


@pytest.mark.parametrize(('ratio', 'overhead'), [(2.4, 0), (2.4, 300), (1.3, -50), (0.8, 0), (7.0, 0)])
def test_exactly_the_lengths_past_the_limit_are_found_with_few_counts(ratio: float, overhead: int) -> None:
    count = Counter(ratio, overhead)
    past, counted = served_lengths_past('zh', LENGTHS, limit=10_000, count=count)
    assert past == [length for length in LENGTHS if round(length * ratio) + overhead > 10_000]
    assert len(count.asked) <= 3 and count.asked[0] == ('zh', 8000)
    assert [(c.length, c.served) for c in counted] == [
        (length, round(length * ratio) + overhead) for _, length in count.asked
    ]


def test_when_the_longest_fits_one_count_is_enough() -> None:
    count = Counter(1.1)
    assert served_lengths_past('en', LENGTHS, limit=10_000, count=count)[0] == []
    assert count.asked == [('en', 8000)]


def test_a_server_that_cannot_count_leaves_our_own_count_to_decide() -> None:
    cells = [GridCell('en', length, 50.0) for length in (900, 1200)]
    with pytest.raises(NiahConfigError) as error:
        check_window(cells, window=1000, budget=200, count=lambda subset, length: None, tokenizer_name='Qwen3')
    assert '[900, 1200]' in str(error.value) and "tokenizer_path: 'server'" not in str(error.value)
    check_window(cells[:1], window=1200, budget=200, count=None, tokenizer_name='Qwen3')


def test_the_refusal_names_each_subset_its_lengths_and_both_counts() -> None:
    cells = [GridCell(subset, length, 50.0) for subset in ('en', 'zh') for length in (1000, 2000)]
    ratios = {'en': 1.2, 'zh': 2.4}
    with pytest.raises(NiahConfigError) as error:
        check_window(
            cells,
            window=4096,
            budget=100,
            count=lambda subset, length: round(length * ratios[subset]),
            tokenizer_name='Qwen/Qwen3-0.6B',
        )
    message = str(error.value)
    assert error.value.param == 'context_lengths'
    assert 'at most 4096 tokens' in message and '(zh [2000])' in message and 'en [' not in message
    assert 'a zh prompt of 2000 tokens by Qwen/Qwen3-0.6B is 4800 by the server' in message
    assert "tokenizer_path: 'server'" in message and 'shorter lengths' in message
