"""Shared fixtures: a private token-index cache for the whole session, the small fixture corpora and the reference
Qwen3 tokenizer (transformers)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalscope_niah.making.corpus import DEMO_CORPUS_DIR, DEMO_CORPUS_FILES
from evalscope_niah.making.tokenization import shipped_qwen3_dir


@pytest.fixture(scope='session', autouse=True)
def niah_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """EVALSCOPE_NIAH_CACHE points at a fresh directory: tests neither read nor pollute the user's cache."""
    path = tmp_path_factory.mktemp('niah_cache')
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv('EVALSCOPE_NIAH_CACHE', str(path))
        yield path


@pytest.fixture(scope='session')
def fixture_corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small corpora the package ships for its demo, under the real dataset's file names."""
    directory = tmp_path_factory.mktemp('corpus')
    for subset, real_name in (('english', 'PaulGraham_Essays.txt'), ('chinese', 'Journey_to_the_West.txt')):
        shutil.copyfile(DEMO_CORPUS_DIR / DEMO_CORPUS_FILES[subset], directory / real_name)
    return directory


@pytest.fixture(scope='session')
def hf_qwen():
    """The shipped Qwen3 tokenizer loaded by transformers: the reference our own tokenizer code is checked against."""
    transformers = pytest.importorskip('transformers')
    return transformers.AutoTokenizer.from_pretrained(str(shipped_qwen3_dir()))


@pytest.fixture
def vault_registered() -> Iterator[None]:
    """The example task of tests/support/vault_code registered for one test."""
    from evalscope_niah.tasks import register_task, unregister_task
    from tests.support.vault_code.task import VaultCode

    register_task(VaultCode)
    try:
        yield
    finally:
        unregister_task(VaultCode.name)
