"""Several facts about one key among distractor facts (RULER multi-value / multi-key)."""

from __future__ import annotations

from .task import MultiRetrieval

__all__ = ['MultiRetrieval']
