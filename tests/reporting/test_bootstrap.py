"""The shared percentile bootstrap: deterministic, order-free, containing the mean, bounded in memory."""

from __future__ import annotations

import numpy as np

from evalscope_niah.reporting import bootstrap
from evalscope_niah.reporting.bootstrap import BOOTSTRAP_RESAMPLES, bootstrap_ci, resampled_means


def test_the_interval_depends_on_the_scores_not_their_order_and_holds_the_mean() -> None:
    scores = [1.0, 0.0, 1.0, 1.0, 0.5, 0.0, 1.0]
    low, high = bootstrap_ci(scores)
    assert (low, high) == bootstrap_ci(list(reversed(scores)))
    assert low <= sum(scores) / len(scores) <= high
    assert 0.0 <= low < high <= 1.0


def test_fewer_than_two_scores_have_no_interval() -> None:
    assert bootstrap_ci([]) == (None, None)
    assert bootstrap_ci([1.0]) == (None, None)


def test_chunked_draws_are_the_draws_of_one_matrix(monkeypatch) -> None:
    data = np.sort(np.asarray([0.0, 1.0, 1.0, 0.5, 1.0]))
    whole = resampled_means(data, np.random.default_rng(0))
    monkeypatch.setattr(bootstrap, '_MAX_ELEMENTS', len(data) * 7)  # 7 resamples per chunk
    chunked = resampled_means(data, np.random.default_rng(0))
    assert len(whole) == len(chunked) == BOOTSTRAP_RESAMPLES
    assert np.all((chunked >= 0.0) & (chunked <= 1.0))
    assert abs(float(chunked.mean()) - float(whole.mean())) < 0.05
