"""What the PNG and the HTML heatmaps share: the colour scale, the empty-cell colour, the heading and the column
of the effective length.  Kept apart so that neither heatmap module imports the other.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

from .labels import length_labels, length_unit, tokenizer_display_name
from .length_status import EffectiveBound
from .page_text import EN, PageText
from .stats import CellSummary

__all__ = [
    'EMPTY_COLOR',
    'accuracy_hex',
    'effective_column',
    'effective_mark',
    'title_parts',
]  # and CMAP, built on first use

# Kamradt's red -> yellow -> green scale, shared by PNG and HTML so both read the same.
_COLORS = ('#F0496E', '#EBB839', '#0CD79F')
# The PNG's colormap quantizes the scale into this many colours (matplotlib's default); the HTML uses the same ones.
_LEVELS = 256


def __getattr__(name: str) -> Any:
    # CMAP (matplotlib's colormap, for the PNG) is built on first use: importing matplotlib costs a smoke run about
    # 0.2 s, and every run imports this module at registration (the live page) long before any PNG is drawn.
    if name == 'CMAP':
        return _matplotlib_cmap()
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


@cache
def _matplotlib_cmap() -> Any:
    from matplotlib.colors import LinearSegmentedColormap

    return LinearSegmentedColormap.from_list('niah_accuracy', list(_COLORS), N=_LEVELS)


def _rgb(color: str) -> tuple[float, float, float]:
    return (int(color[1:3], 16) / 255, int(color[3:5], 16) / 255, int(color[5:7], 16) / 255)


@cache
def _level_hex(level: int) -> str:
    # Level i of matplotlib's lookup table: the colour at i / (levels - 1), linear between the evenly spaced stops.
    stops = [_rgb(color) for color in _COLORS]
    position = level / (_LEVELS - 1) * (len(stops) - 1)
    segment = min(int(position), len(stops) - 2)
    fraction = position - segment
    low, high = stops[segment], stops[segment + 1]
    channels = (fraction * (b - a) + a for a, b in zip(low, high, strict=True))
    return '#' + ''.join(format(round(min(1.0, max(0.0, c)) * 255), '02x') for c in channels)


def accuracy_hex(value: float) -> str:
    """'#rrggbb' of an accuracy on the fixed 0-1 scale: the colour the PNG's colormap gives it (the same lookup
    table, computed without importing matplotlib; tests/reporting/test_heatmap_style.py checks every level)."""
    if math.isnan(value):
        return '#000000'  # matplotlib's 'bad' colour; no scored cell has a NaN accuracy
    return _level_hex(min(max(int(value * _LEVELS), 0), _LEVELS - 1))


# Empty cells (no scored sample) must not look like any score on the red-green scale.
EMPTY_COLOR = '#D9D9D9'


def _weighted_mean(cells: Iterable[CellSummary]) -> tuple[float | None, int]:
    # n-weighted mean of cell means == mean over scored samples, matching SubsetSummary.accuracy.
    pairs = [(c.accuracy, c.n) for c in cells if c.accuracy is not None and c.n > 0]
    total = sum(n for _, n in pairs)
    if total == 0:
        return None, 0
    return math.fsum(acc * n for acc, n in pairs) / total, total


def title_parts(
    subset: str,
    grid: dict[tuple[float, int], CellSummary],
    title: str | None,
    *,
    tokenizer: str | None = None,
    text: PageText = EN,
) -> tuple[str, str]:
    """(heading, 'subset: ... · mean accuracy ... (n=...) · lengths in Qwen3 tokens'), shared by the PNG and the
    HTML heatmap, in ``text``'s language; the last part only when the tokenizer that counted the lengths is known."""
    mean, total = _weighted_mean(grid.values())
    mean_text = text.not_available if mean is None else f'{mean:.2f}'
    known = tokenizer_display_name(tokenizer) is not None
    lengths = text.lengths_in.format(unit=length_unit(tokenizer, text=text)) if known else ''
    return title or text.default_title, text.subtitle.format(subset=subset, mean=mean_text, n=total) + lengths


def effective_column(lengths: Sequence[int], effective_length: int | None, *, subset: str) -> int | None:
    """Column index of the effective length, None when there is none to mark."""
    if effective_length is None:
        return None
    if effective_length not in lengths:
        # A length off the grid means the caller mixed up runs or subsets; a line in a guessed place would mislead.
        raise ValueError(
            f'effective_length {effective_length} is not a context length of subset {subset!r} ({list(lengths)})'
        )
    return list(lengths).index(effective_length)


def effective_mark(
    lengths: Sequence[int], effective: EffectiveBound | int | None, *, subset: str, text: PageText = EN
) -> tuple[int | None, str | None]:
    """(column to mark, what the title states) of an effective length or bound, in the axis' labels: the column of
    the lengths known to pass, and '16k' or 'at least 2.5k; 3k unknown: 3 server errors' (in ``text``'s language)."""
    bound = EffectiveBound.of(effective)
    column = effective_column(lengths, bound.at_least, subset=subset)
    labels = length_labels(lengths)
    if bound.unknown_length is not None:
        effective_column(lengths, bound.unknown_length, subset=subset)  # the same check: a length of this grid
    return column, bound.describe(lambda length: labels[list(lengths).index(length)], text=text)
