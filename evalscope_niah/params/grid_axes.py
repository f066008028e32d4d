"""The grid's two axes: context lengths and needle depths, spaced exactly as EvalScope's built-in spaces them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

DepthSpacing = Literal['linear', 'sigmoid']


def context_length_axis(*, explicit: Sequence[int] | None, low: int, high: int, count: int) -> list[int]:
    """Context lengths in tokens, ascending, without duplicates: ``explicit`` when given, else the rounded range."""
    if explicit is not None:
        return sorted(set(explicit))
    return sorted(set(linspace_rounded(low, high, count)))


def depth_axis(
    *, explicit: Sequence[float] | None, low: float, high: float, count: int, spacing: DepthSpacing
) -> list[float]:
    """Needle depths in percent, ascending, without duplicates: ``explicit`` when given, else the spaced range."""
    if explicit is not None:
        return sorted({float(depth) for depth in explicit})
    if spacing == 'sigmoid':
        points = [low + (high - low) * i / (count - 1) for i in range(count)] if count > 1 else [low]
        return sorted({kamradt_logistic(x) for x in points})
    return sorted({float(value) for value in linspace_rounded(low, high, count)})


def linspace_rounded(low: float, high: float, count: int) -> list[int]:
    """Exactly ``np.round(np.linspace(low, high, count))`` as the built-in computes it."""
    # i * step + low, the last value set to high, rounded half to even; a different formula rounds differently at
    # float ties.
    if count == 1:
        return [round(low)]
    step = (high - low) / (count - 1)
    return [round(i * step + low) for i in range(count - 1)] + [round(high)]


def kamradt_logistic(x: float, *, scale: float = 100, midpoint: float = 50, steepness: float = 0.1) -> float:
    # Kamradt's sigmoid spacing keeps the ends exact and squeezes the middle. His logistic falls as x rises
    # (L * sigmoid(-k (x - x0))): over a range not centred on 50 (10..60) its depths lie mostly above 50, and so
    # do ours.
    if x in (0, 100):
        return float(x)
    return round(scale / (1 + math.exp(steepness * (x - midpoint))), 3)
