"""The conformance checks, shipped in the package (``evalscope_niah.testing.conformance``, where plugins import
them); re-exported here for this suite's modules."""

from __future__ import annotations

from evalscope_niah.testing.conformance import (
    CATEGORIES,
    FAIL,
    GRID,
    ONE_KEY,
    PASS,
    SHARE,
    Answer,
    Sample,
    answers,
    check_task,
    chosen_metas,
    conformance_misses,
    describe,
    meets,
    planned_samples,
    score,
)

__all__ = [
    'CATEGORIES',
    'FAIL',
    'GRID',
    'ONE_KEY',
    'PASS',
    'SHARE',
    'Answer',
    'Sample',
    'answers',
    'check_task',
    'chosen_metas',
    'conformance_misses',
    'describe',
    'meets',
    'planned_samples',
    'score',
]
