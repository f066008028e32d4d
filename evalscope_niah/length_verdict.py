"""A length's verdict, one rule for the reports and the adaptive sweep: it passes, it fails, or the data cannot tell.

A length's mean score is held to the threshold. Samples sent that left no score (a server error, a reply cut by the
token limit, one with no final answer) are not zeros: the verdict is settled only when it would be the same whatever
they had scored (0 or 1 each), or when the scored samples settle it on their own (a one-sided Wilson bound at
``CI_LEVEL`` clears the threshold). With every sample scored it is the plain comparison of the mean. The reports
(``reporting/stats.py``) judge every length by it; the adaptive sweep (``making/adaptive_plan.py``) settles no length
it would leave unknown, so the sweep and its report never disagree. Below every floor: both use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from .vocabulary import LengthStatus

__all__ = ['CI_LEVEL', 'length_word', 'mean_range', 'status_arrays', 'statuses']

# The level every CI of the reports and every verdict with unscored samples shares.
CI_LEVEL = 0.95


def mean_range(
    means: np.ndarray, scored: Sequence[int], unscored: Sequence[int], *, level: float = CI_LEVEL
) -> tuple[np.ndarray, np.ndarray]:
    """(lowest, highest) plausible mean per length (last axis of ``means``, NaN where nothing scored): the mean
    itself where every sample scored; else what both the scored samples allow (a one-sided Wilson bound at ``level``:
    enough scored samples settle a length) and the unscored could make of it (each 0, or each 1)."""
    scored, unscored = np.asarray(scored, dtype=float), np.asarray(unscored, dtype=float)
    total = scored + unscored
    known = np.nan_to_num(means)
    sums = known * scored
    wilson_low, wilson_high = _wilson(known, np.maximum(scored, 1.0), NormalDist().inv_cdf(level))
    low = np.maximum(sums / total, np.where(scored > 0, wilson_low, 0.0))
    high = np.minimum((sums + unscored) / total, np.where(scored > 0, wilson_high, 1.0))
    # Where nothing is missing the mean decides as it always did (the grid measured all it was asked to).
    return np.where(unscored > 0, low, means), np.where(unscored > 0, high, means)


def _wilson(mean: np.ndarray, n: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    centre = (mean + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(np.clip(mean * (1 - mean), 0.0, None) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def status_arrays(low: np.ndarray, high: np.ndarray, *, threshold: float, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(passes, fails) per length, each (..., lengths) like ``low`` and ``high``: the lowest and highest plausible
    mean of each length (``mean_range``; equal when all its samples scored). Neither: unknown.

    ``absolute``: a pass when even the lowest mean reaches the threshold, a fail when even the highest falls below.
    ``relative``: the threshold scales by the shortest length's mean, itself a range; a shortest length that scores 0
    gives no baseline, so then nothing passes (as before), and the shortest length passes when its mean is above 0.
    """
    if mode == 'absolute':
        return low >= threshold, high < threshold
    base_low, base_high = low[..., :1], high[..., :1]
    passes = (base_low > 0.0) & (low >= threshold * base_high)
    # The easiest baseline to pass is the lowest one above 0; from a lowest of 0, any positive mean passes some.
    fails = (base_high <= 0.0) | np.where(base_low > 0.0, high < threshold * base_low, high <= 0.0)
    # The shortest length is its own baseline: it passes exactly when it scores above 0.
    passes[..., 0] = base_low[..., 0] > 0.0
    fails[..., 0] = base_high[..., 0] <= 0.0
    return passes, fails


def statuses(passes: Sequence[bool], fails: Sequence[bool]) -> list[LengthStatus]:
    """The word for each length of ``status_arrays``' answer (one row)."""
    return ['pass' if passed else 'fail' if failed else 'unknown' for passed, failed in zip(passes, fails, strict=True)]


def length_word(total: float, scored: int, unscored: int, *, threshold: float) -> LengthStatus:
    """One length's verdict against an absolute ``threshold``: ``total`` over its ``scored`` samples, beside the
    ``unscored`` ones it was sent (what a report of the samples sent so far would say)."""
    mean = np.array([total / scored if scored else np.nan])
    low, high = mean_range(mean, [scored], [unscored])
    passes, fails = status_arrays(low, high, threshold=threshold, mode='absolute')
    return statuses(list(passes), list(fails))[0]
