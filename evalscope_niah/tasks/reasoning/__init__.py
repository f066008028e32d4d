"""A chain of linked needles (OpenCompass CDME)."""

from __future__ import annotations

from .task import ReasoningChain

__all__ = ['ReasoningChain']
