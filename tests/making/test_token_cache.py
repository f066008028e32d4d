"""The token index on disk: in numpy's own npz format, written and read without numpy (neither a cold nor a warm run
imports it), and anything that is not an index of ours is recomputed rather than read."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from evalscope_niah.making.corpus import DEMO_CORPUS_DIR, DEMO_CORPUS_FILES
from evalscope_niah.making.token_cache import TokenIndex, _read_index, _write_index


@pytest.mark.parametrize('top', [1000, 2**31 + 5], ids=['int32', 'int64'])
def test_an_index_reads_back_as_numpy_wrote_it(tmp_path: Path, top: int) -> None:
    chars = np.array([0, 3, 7, top], dtype=np.int64)
    index = TokenIndex(chars=chars, tokens=np.array([0, 1, 2, 3]))
    _write_index(tmp_path / 'i.npz', index)
    read = _read_index(tmp_path / 'i.npz')
    assert read is not None
    assert read.chars.tolist() == chars.tolist() and read.tokens.tolist() == [0, 1, 2, 3]
    assert read.chars.dtype == (np.int32 if top < 2**31 else np.int64)
    assert (read.covered_chars, read.total_tokens, read.tokens_before(7), read.boundary_at_or_before(5)) == (
        top,
        3,
        2,
        3,
    )


@pytest.mark.parametrize('top', [1000, 2**31 + 5], ids=['int32', 'int64'])
def test_an_index_file_is_the_npz_numpy_itself_reads_and_writes(tmp_path: Path, top: int) -> None:
    chars = [*range(0, 3000, 3), top]
    tokens = list(range(len(chars)))
    _write_index(tmp_path / 'ours.npz', TokenIndex(chars=chars, tokens=tokens))
    with np.load(tmp_path / 'ours.npz') as loaded:  # numpy reads ours ...
        assert loaded['chars'].tolist() == chars and loaded['tokens'].tolist() == tokens
        assert loaded['chars'].dtype == (np.int32 if top < 2**31 else np.int64)
        # ... and ours is byte for byte what numpy writes for those arrays (header padding included)
        expected = _npz(chars=loaded['chars'], tokens=loaded['tokens'])
    with zipfile.ZipFile(tmp_path / 'ours.npz') as ours, zipfile.ZipFile(io.BytesIO(expected)) as theirs:
        assert [ours.read(name) for name in ('chars.npy', 'tokens.npy')] == [
            theirs.read(name) for name in ('chars.npy', 'tokens.npy')
        ]


def _npz(**arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


@pytest.mark.parametrize(
    'content',
    [
        b'',
        b'not a zip',
        _npz(chars=np.arange(4))[:-40],  # truncated
        _npz(chars=np.arange(4)),  # no tokens
        _npz(chars=np.arange(4, dtype=np.float64), tokens=np.arange(4)),  # not integers
        _npz(chars=np.arange(4, dtype='>i4'), tokens=np.arange(4, dtype='>i4')),  # big-endian
        _npz(chars=np.arange(8).reshape(2, 4), tokens=np.arange(8).reshape(2, 4)),  # two dimensions
        _npz(chars=np.arange(4), tokens=np.arange(5)),  # lengths differ
        _npz(chars=np.arange(0), tokens=np.arange(0)),  # empty
    ],
    ids=['empty', 'text', 'truncated', 'one-array', 'floats', 'big-endian', '2d', 'lengths', 'no-entries'],
)
def test_a_file_that_is_not_an_index_is_recomputed_not_read(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / 'i.npz'
    path.write_bytes(content)
    assert _read_index(path) is None


def test_an_array_whose_header_lies_about_its_length_is_not_read(tmp_path: Path) -> None:
    good = _npz(chars=np.arange(4, dtype=np.int32), tokens=np.arange(4, dtype=np.int32))
    path = tmp_path / 'i.npz'
    with zipfile.ZipFile(io.BytesIO(good)) as source, zipfile.ZipFile(path, 'w') as target:
        target.writestr('chars.npy', source.read('chars.npy').replace(b'(4,)', b'(9,)'))
        target.writestr('tokens.npy', source.read('tokens.npy'))
    assert _read_index(path) is None


def test_a_warm_cache_builds_samples_without_importing_numpy_or_jinja2(tmp_path: Path) -> None:
    """Cold (fills the cache) then warm in fresh processes: the same samples; jinja2 in the cold one only, numpy in
    neither."""
    corpus = tmp_path / 'corpus'
    corpus.mkdir()
    (corpus / 'PaulGraham_Essays.txt').write_bytes((DEMO_CORPUS_DIR / DEMO_CORPUS_FILES['english']).read_bytes())
    code = (
        'import hashlib, sys\n'
        'from evalscope_niah.making.samples import iter_samples\n'
        'from evalscope_niah.tasks.compose import parse_params\n'
        "params = parse_params({'context_lengths': [600, 1200], 'document_depth_percents': [0, 50, 100]})\n"
        f'samples = iter_samples(params, corpus_dir={str(corpus)!r}, subsets=["english"])\n'
        "digest = hashlib.sha256(''.join(repr(sample) for sample in samples).encode()).hexdigest()\n"
        "print(digest, 'numpy' in sys.modules, 'jinja2' in sys.modules)\n"
    )
    env_cache = {'EVALSCOPE_NIAH_CACHE': str(tmp_path / 'cache')}
    runs = [_run(code, env_cache) for _ in range(2)]
    (cold_digest, *cold_imports), (warm_digest, *warm_imports) = (run.split() for run in runs)
    assert cold_digest == warm_digest and len(cold_digest) == 64
    # jinja2 renders the chat template cold, warm it is read from the cache; the token index is built and read
    # with the standard library's arrays (numpy's import was a tenth of a cold run).
    assert (cold_imports, warm_imports) == (['False', 'True'], ['False', 'False'])


def _run(code: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, '-c', code], env={**os.environ, **env}, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()
