"""The needle-absent control: every task's needle-free cells are scored here."""

from __future__ import annotations

from .task import ABSENT_CONTROL, ABSENT_REFERENCE, AbsentControl

__all__ = ['ABSENT_CONTROL', 'ABSENT_REFERENCE', 'AbsentControl']
