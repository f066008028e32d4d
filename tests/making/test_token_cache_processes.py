"""The on-disk token caches under other processes: two building the same cold cache at once, and one SIGKILLed
while writing it. Lengths stay exact; a half-written file is never read (``atomic.atomic_writer``: temp + rename).

Each child is a real Python process with its own EVALSCOPE_NIAH_CACHE; it reports over stdout and waits on stdin,
so the parent acts on events (a line the child printed), never on time.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from evalscope_niah.atomic import STALE_TEMPORARY_S
from evalscope_niah.making.corpus import DEMO_CORPUS_DIR, DEMO_CORPUS_FILES
from evalscope_niah.making.tokenization import cache_dir, load_tokenizer, shared_counter, token_index

QWEN = 'Qwen/Qwen3-0.6B'
REPO_ROOT = Path(__file__).resolve().parents[2]

# The child: builds (or extends) the token index of the text file and counts a few windows through the shared
# SQLite counter, then prints what it got. 'race' waits for a 'go' line first, so both children start together;
# 'kill' writes the first of the index file's two arrays and stops there until it is killed.
CHILD = r"""
import hashlib, io, json, os, sys
import numpy as np
from evalscope_niah.making.tokenization import load_tokenizer, shared_counter, token_index

path, mode = sys.argv[1], sys.argv[2]
text = open(path, encoding='utf-8').read()
sha = hashlib.sha256(text.encode()).hexdigest()
tokenizer = load_tokenizer('Qwen/Qwen3-0.6B')
if mode == 'kill':
    from evalscope_niah.making import token_cache

    real_npy_bytes = token_cache._npy_bytes
    arrays_made = []

    def npy_bytes_then_stall(values):
        arrays_made.append(values)
        if len(arrays_made) == 2:  # chars.npy is in the temporary file, tokens.npy never comes
            print('half-written', flush=True)
            sys.stdin.readline()  # the parent kills this process here
        return real_npy_bytes(values)

    token_cache._npy_bytes = npy_bytes_then_stall
print('ready', flush=True)
if mode == 'race':
    sys.stdin.readline()
index = token_index(tokenizer, text, text_sha256=sha)
counter = shared_counter(tokenizer)
counts = [counter(text[start : start + 5000]) for start in range(0, 50_000, 5000)]
counter.flush()
digest = hashlib.sha256(index.chars.astype('int64').tobytes() + index.tokens.astype('int64').tobytes()).hexdigest()
print(json.dumps({'tokens': int(index.total_tokens), 'chars': int(index.covered_chars), 'digest': digest,
                  'counts': counts}), flush=True)
"""


@pytest.fixture
def text_file(tmp_path: Path) -> Path:
    """About 600 kB of English and Chinese: indexing takes a few seconds, so a race really overlaps."""
    parts = [(DEMO_CORPUS_DIR / DEMO_CORPUS_FILES[subset]).read_text(encoding='utf-8') for subset in DEMO_CORPUS_FILES]
    path = tmp_path / 'text.txt'
    path.write_text('\n\n'.join(f'Part {n}\n\n{parts[n % 2]}' for n in range(48)), encoding='utf-8')
    return path


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache directory of this test alone, for this process and its children."""
    directory = tmp_path / 'cache'
    monkeypatch.setenv('EVALSCOPE_NIAH_CACHE', str(directory))
    return directory


def _child(text_file: Path, mode: str) -> subprocess.Popen[str]:
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(REPO_ROOT), os.environ.get('PYTHONPATH', '')])}
    return subprocess.Popen(
        [sys.executable, '-c', CHILD, str(text_file), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO_ROOT,
    )


def _expected(text: str) -> dict:
    """The same figures computed here, with no cache at all."""
    tokenizer = load_tokenizer(QWEN)
    index = token_index(tokenizer, text, text_sha256='uncached', use_cache=False)
    digest = hashlib.sha256(index.chars.astype('int64').tobytes() + index.tokens.astype('int64').tobytes())
    counts = [tokenizer.count(text[start : start + 5000]) for start in range(0, 50_000, 5000)]
    return {'tokens': index.total_tokens, 'chars': len(text), 'digest': digest.hexdigest(), 'counts': counts}


def _index_files(cache: Path) -> tuple[list[Path], list[Path]]:
    files = sorted((cache / 'tokens').rglob('*')) if (cache / 'tokens').exists() else []
    return [f for f in files if f.suffix == '.npz'], [f for f in files if f.name.endswith('.tmp')]


def test_two_processes_building_one_cold_cache_agree_and_leave_one_whole_file(
    text_file: Path, private_cache: Path
) -> None:
    children = [_child(text_file, 'race') for _ in range(2)]
    try:
        for child in children:
            assert child.stdout.readline().strip() == 'ready'
        for child in children:  # both are loaded and waiting: let them go at once
            child.stdin.write('go\n')
            child.stdin.flush()
        outputs = [json.loads(child.stdout.readline()) for child in children]
        assert [child.wait(timeout=300) for child in children] == [0, 0]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
    expected = _expected(text_file.read_text(encoding='utf-8'))
    assert outputs == [expected, expected]
    finished, temporary = _index_files(private_cache)
    assert len(finished) == 1 and temporary == []
    cached = token_index(load_tokenizer(QWEN), 'unused', text_sha256=finished[0].stem)  # served from the file
    assert cached.total_tokens == expected['tokens'] and cached.covered_chars == expected['chars']


def test_a_process_killed_mid_write_leaves_no_half_file_to_read(text_file: Path, private_cache: Path) -> None:
    text = text_file.read_text(encoding='utf-8')
    sha = hashlib.sha256(text.encode()).hexdigest()
    tokenizer = load_tokenizer(QWEN)
    # A complete prefix index is there already; the child extends it and dies while writing the extension.
    prefix = token_index(tokenizer, text, text_sha256=sha, min_tokens=2000)
    assert prefix.covered_chars < len(text)
    (before,), _ = _index_files(private_cache)
    before_bytes = before.read_bytes()
    child = _child(text_file, 'kill')
    try:
        assert child.stdout.readline().strip() == 'ready'
        assert child.stdout.readline().strip() == 'half-written'
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=60) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
    finished, temporary = _index_files(private_cache)
    assert finished == [before] and before.read_bytes() == before_bytes  # the old file is whole and untouched
    assert len(temporary) == 1 and temporary[0].stat().st_size > 0  # the half file exists, under a temp name
    # Read again: the prefix, never the half-written extension.
    again = token_index(tokenizer, text, text_sha256=sha, min_tokens=2000)
    assert (again.covered_chars, again.total_tokens) == (prefix.covered_chars, prefix.total_tokens)
    # A rerun extends it to the whole text, exactly, and removes the killed writer's file once it is stale (a fresh
    # one may belong to a writer still at work).
    os.utime(temporary[0], (time.time() - STALE_TEMPORARY_S - 60,) * 2)
    rerun = token_index(tokenizer, text, text_sha256=sha)
    assert _index_files(private_cache)[1] == []
    expected = _expected(text)
    assert (rerun.total_tokens, rerun.covered_chars) == (expected['tokens'], expected['chars'])
    uncached = token_index(tokenizer, text, text_sha256='uncached', use_cache=False)
    assert np.array_equal(rerun.chars, uncached.chars) and np.array_equal(rerun.tokens, uncached.tokens)
    assert shared_counter(tokenizer)(text[:5000]) == expected['counts'][0]
    assert cache_dir() == private_cache
