"""Percentile bootstrap of a mean: the seed, resample count and level every CI of the reports shares, drawn in
memory-bounded chunks. Pure numpy; the statistics in `stats.py` build their intervals from it."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..length_verdict import CI_LEVEL

# Fixed seed and resample count: the same results must always give the same CI (reports are diffed across runs).
BOOTSTRAP_SEED = 0
BOOTSTRAP_RESAMPLES = 2000
# Bound the (resamples x n) index matrix so a huge cell cannot exhaust memory.
_MAX_ELEMENTS = 4_000_000


def resampled_means(data: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """`BOOTSTRAP_RESAMPLES` means of `data` resampled with replacement, drawn in memory-bounded chunks."""
    n = len(data)
    chunk = max(1, _MAX_ELEMENTS // n)
    means: list[np.ndarray] = []
    remaining = BOOTSTRAP_RESAMPLES
    while remaining > 0:
        size = min(chunk, remaining)
        means.append(data[rng.integers(0, n, size=(size, n))].mean(axis=1))
        remaining -= size
    return np.concatenate(means)


def bootstrap_ci(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of the mean; (None, None) below two values."""
    n = len(values)
    if n < 2:
        return None, None
    # Sorting makes the CI depend on the multiset of scores only, not on the order samples finished in.
    data = np.sort(np.asarray(values, dtype=float))
    means = resampled_means(data, np.random.default_rng(BOOTSTRAP_SEED))
    alpha = (1.0 - CI_LEVEL) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    mean = math.fsum(values) / n
    # Percentile intervals of a mean contain the mean in practice; clamp so that holds by construction.
    return min(float(low), mean), max(float(high), mean)
