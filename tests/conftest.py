"""Shared fixtures: a private token-index cache for the whole session and the small fixture corpora."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

FIXTURE_CORPUS = Path(__file__).parent / 'fixtures' / 'corpus'


@pytest.fixture(scope='session', autouse=True)
def niah_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """EVALSCOPE_NIAH_CACHE points at a fresh directory: tests neither read nor pollute the user's cache."""
    path = tmp_path_factory.mktemp('niah_cache')
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv('EVALSCOPE_NIAH_CACHE', str(path))
        yield path


@pytest.fixture(scope='session')
def fixture_corpus_dir() -> Path:
    """The directory of the test corpora (same file names as the real ModelScope dataset)."""
    return FIXTURE_CORPUS
