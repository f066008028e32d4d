"""A length's verdict, the one rule of the reports and the adaptive sweep: pass, fail, or unknown when the samples
that left no score could tip it."""

from __future__ import annotations

import numpy as np
import pytest

from evalscope_niah.length_verdict import length_word, mean_range


@pytest.mark.parametrize(
    ('total', 'scored', 'unscored', 'word'),
    [
        (9, 10, 0, 'pass'),  # every sample scored: the plain mean against the threshold
        (8, 10, 0, 'fail'),
        (9, 10, 1, 'unknown'),  # the unscored one, 0 or 1, could tip it
        (0, 0, 5, 'unknown'),  # nothing scored: an outage is never a finding about the model
        (100, 100, 5, 'pass'),  # 100 right of 100 scored: the Wilson bound clears 0.85 whatever the 5 scored
        (0, 20, 5, 'fail'),  # all 25 right could not reach it either: (0 + 5) / 25
    ],
)
def test_a_length_is_settled_only_where_its_unscored_samples_could_not_tip_it(
    total: int, scored: int, unscored: int, word: str
) -> None:
    assert length_word(float(total), scored, unscored, threshold=0.85) == word


def test_the_range_is_the_mean_itself_where_every_sample_scored() -> None:
    means = np.array([0.5, 0.9])
    low, high = mean_range(means, [10, 10], [0, 3])
    assert (low[0], high[0]) == (0.5, 0.5)
    # 9 right of 10 scored and 3 unscored: between all 3 wrong and all 3 right (the Wilson bounds are wider here).
    assert (low[1], high[1]) == (pytest.approx(9 / 13), pytest.approx(12 / 13))
