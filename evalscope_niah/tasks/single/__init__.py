"""The classic task: the subset's needle or a needle-bank draw."""

from __future__ import annotations

from .task import SingleNeedle

__all__ = ['SingleNeedle']
