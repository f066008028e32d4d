"""One-hop associative retrieval (NoLiMa's idea, our own pairs)."""

from __future__ import annotations

from .task import Associative

__all__ = ['Associative']
