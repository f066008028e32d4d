"""Needle-in-a-haystack long-context retrieval benchmark for EvalScope."""

__version__ = '0.1.0'
