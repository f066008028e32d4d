"""The rating scale the judge answers on: Kamradt's rubric (and its abridged form the prompt quotes), the ratings
allowed, and how a rating maps to accuracy. The prompt (``judge``) and the verdict parser (``verdict``) both read it."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ['ALLOWED_RATINGS', 'MAX_RATING', 'MIN_RATING', 'RUBRIC', 'RUBRIC_SHORT', 'rating_to_accuracy']

# Kamradt's needle-in-a-haystack rubric.
RUBRIC: Mapping[int, str] = MappingProxyType(
    {
        1: 'The response is completely unrelated to the reference.',
        3: 'The response has minor relevance but does not align with the reference.',
        5: 'The response has moderate relevance but contains inaccuracies.',
        7: 'The response aligns with the reference but has minor omissions.',
        10: 'The response is completely accurate and aligns perfectly with the reference.',
    }
)
ALLOWED_RATINGS: tuple[int, ...] = (1, 3, 5, 7, 10)
MIN_RATING = 1
MAX_RATING = 10

# Kamradt's rubric, abridged: the judge is called once per sample and its prompt is most of what judging costs.
RUBRIC_SHORT = {
    1: 'unrelated',
    3: 'minor relevance, does not align',
    5: 'moderate relevance, inaccurate',
    7: 'aligns, minor omissions',
    10: 'completely accurate',
}


def rating_to_accuracy(rating: float) -> float:
    """Map a 1..10 rating linearly to 0..1 (1 → 0.0, 10 → 1.0), clamped to that range."""
    return min(1.0, max(0.0, (rating - MIN_RATING) / (MAX_RATING - MIN_RATING)))
