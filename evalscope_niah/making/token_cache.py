"""The on-disk caches of token facts, keyed by the tokenizer's fingerprint: each corpus text's token boundaries
(:func:`token_index`, encoded in chunks cut only at checked seams) and the token counts of the windows samples are
built from (:class:`TokenCounter`, one shared per tokenizer and cache directory)."""

from __future__ import annotations

import array
import ast
import bisect
import hashlib
import itertools
import math
import re
import sys
import threading
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..atomic import atomic_writer
from ..cache_home import cache_dir
from .tokenizer_protocol import Tokenizer

if TYPE_CHECKING:
    import numpy as np

__all__ = ['TokenCounter', 'TokenIndex', 'cache_dir', 'clear_counters', 'shared_counter', 'token_index']

# shared_counter's counters by (tokenizer fingerprint, cache directory): one SQLite connection and memo each.
# EvalScope builds samples from worker threads: every read-modify-write of it goes under the lock.
_COUNTERS_LOCK = threading.Lock()
_COUNTERS: dict[tuple[str, Path], TokenCounter] = {}


def clear_counters() -> None:
    """Forget the shared counters, writing their pending counts first."""
    with _COUNTERS_LOCK:
        for counter in _COUNTERS.values():
            counter.flush()
        _COUNTERS.clear()


class TokenIndex:
    """Where tokens start in one text: enough to count tokens between two cut points without re-encoding.

    ``chars[i]`` is a character offset at which token ``tokens[i]`` starts cleanly. The last entry is the end of
    the tokenized prefix (``covered_chars``) with the token count so far. Both are held as compact machine-integer
    arrays (int32 where the values fit: 8 bytes a token instead of ~70 for Python lists), ``chars`` and ``tokens``
    show them as numpy arrays. Lookups run ``bisect`` over memoryviews of them: they run tens of thousands of times
    per grid, and numpy's per-call overhead dominated. Neither building an index nor reading one from the cache
    imports numpy (its import was a fifth of a warm run's time and a tenth of a cold one's).
    """

    def __init__(self, *, chars: Sequence[int], tokens: Sequence[int]) -> None:
        self._chars = memoryview(_compact(chars))
        self._tokens = memoryview(_compact(tokens))

    @classmethod
    def _of_arrays(cls, chars: array.array, tokens: array.array) -> TokenIndex:
        index = cls.__new__(cls)
        index._chars, index._tokens = memoryview(chars), memoryview(tokens)
        return index

    @property
    def chars(self) -> np.ndarray:
        import numpy as np

        return np.frombuffer(self._chars, dtype=self._chars.format)

    @property
    def tokens(self) -> np.ndarray:
        import numpy as np

        return np.frombuffer(self._tokens, dtype=self._tokens.format)

    @property
    def covered_chars(self) -> int:
        return self._chars[-1]

    @property
    def total_tokens(self) -> int:
        return self._tokens[-1]

    def boundary_at_or_before(self, char: int) -> int:
        """The nearest clean token start at or before ``char``."""
        return self._chars[max(0, bisect.bisect_right(self._chars, char) - 1)]

    def tokens_before(self, char: int) -> int:
        """Tokens before a clean boundary ``char`` (exact only at boundaries)."""
        return self._tokens[min(bisect.bisect_left(self._chars, char), len(self._tokens) - 1)]

    def char_of_token(self, token: int) -> int:
        """The clean boundary at or before token number ``token``."""
        return self._chars[max(0, bisect.bisect_right(self._tokens, token) - 1)]


_INT32_MAX = 2**31 - 1


def _compact(values: Sequence[int]) -> array.array:
    """``values`` (any sequence of ints: an ``array.array``, a list, a numpy array) as an ``array.array`` of int32
    where they fit, else int64."""
    if isinstance(values, array.array) and values.typecode == 'i':
        return values
    wide = len(values) > 0 and max(values) > _INT32_MAX
    if hasattr(values, 'dtype'):  # a numpy array: converted in bulk, not value by value
        return _machine_array('q' if wide else 'i', values.astype('<i8' if wide else '<i4').tobytes())
    return array.array('q' if wide else 'i', values)


def _machine_array(typecode: str, data: bytes | memoryview) -> array.array:
    values = array.array(typecode)
    values.frombytes(data)
    return values


# Texts are encoded in chunks of about this many characters, so memory stays bounded whatever the text's layout.
_CHUNK_CHARS = 32768
_CHUNKS_PER_BATCH = 4
# A seam is a cut that encodes the same on its own as inside the text (checked on _SEAM_CHECK_CHARS either side).
# It is searched from _CHUNK_CHARS on, among the cut kinds of _SEAM_KINDS in order, at most _SEAM_TRIES tries
# each, within _SEAM_SEARCH_CHARS; a text without any (no pre-tokenizer split in that stretch) is cut at the limit.
_SEAM_CHECK_CHARS = 256
_SEAM_SEARCH_CHARS = 8192
_SEAM_TRIES = 8
_SEAM_KINDS = (
    re.compile(r'\n+(?=\S)'),  # after a run of line breaks, before text: every supported pre-tokenizer splits there
    re.compile(r'(?<=\w)(?=[.!?;。！？；，、,])'),  # before sentence punctuation that follows a word
    re.compile(r'(?<=\S)(?= \w)'),  # before the space that starts a word
    re.compile(r'(?<=\w)(?=\w)'),  # between two word characters (Chinese text without punctuation)
)


def token_index(
    tokenizer: Tokenizer, text: str, *, text_sha256: str, min_tokens: int | None = None, use_cache: bool = True
) -> TokenIndex:
    """Token boundaries of ``text`` (or of a prefix with at least ``min_tokens`` tokens), cached on disk.

    The cache key holds the text's sha256 and the tokenizer fingerprint, so a changed file or tokenizer is never
    served stale. With ``min_tokens`` only the prefix that many tokens need is encoded (a later, larger need
    extends the cached prefix). Texts are encoded in chunks of about ``_CHUNK_CHARS`` characters, even a text
    without line breaks: each cut between chunks is checked to encode the same on its own as inside the text
    (``_is_seam``), so the chunks' tokens are exactly the whole text's tokens.
    """
    path = cache_dir() / 'tokens' / tokenizer.fingerprint[:40] / f'{text_sha256}.npz'
    cached = _read_index(path) if use_cache else None
    if cached is not None and (cached.covered_chars >= len(text) or (min_tokens and cached.total_tokens >= min_tokens)):
        return cached
    chars, tokens = array.array('q'), array.array('q')
    start, token_count = 0, 0
    while start < len(text) and not (min_tokens and token_count >= min_tokens):
        # A few chunks at a time: encoded in parallel where the tokenizer can, without overshooting a prefix much.
        spans = []
        batch = _CHUNKS_PER_BATCH
        if min_tokens:
            # Prefix only: as many chunks as the tokens still missing need, judged by the density so far.
            chars_per_token = start / token_count if token_count else 1.0
            batch = max(1, min(batch, math.ceil((min_tokens - token_count) * chars_per_token * 1.1 / _CHUNK_CHARS)))
        while start < len(text) and len(spans) < batch:
            spans.append((start, _chunk_end(tokenizer, text, start)))
            start = spans[-1][1]
        encoded = tokenizer.boundaries_many([text[low:high] for low, high in spans])
        for (low, _), (chunk_chars, chunk_tokens) in zip(spans, encoded, strict=True):
            chars.extend(char + low for char in itertools.islice(chunk_chars, len(chunk_chars) - 1))
            tokens.extend(token + token_count for token in itertools.islice(chunk_tokens, len(chunk_tokens) - 1))
            token_count += int(chunk_tokens[-1])
    chars.append(start)
    tokens.append(token_count)
    index = TokenIndex(chars=chars, tokens=tokens)
    if use_cache and (cached is None or index.covered_chars > cached.covered_chars):
        _write_index(path, index)
    return index


def _chunk_end(tokenizer: Tokenizer, text: str, start: int) -> int:
    """Where the chunk starting at ``start`` ends: the first checked seam from ``_CHUNK_CHARS`` on."""
    if len(text) - start <= _CHUNK_CHARS:
        return len(text)
    low = start + _CHUNK_CHARS
    high = min(len(text) - 1, low + _SEAM_SEARCH_CHARS)
    for kind in _SEAM_KINDS:
        for match in itertools.islice(kind.finditer(text, low, high), _SEAM_TRIES):
            if _is_seam(tokenizer, text, match.end()):
                return match.end()
    # No checked seam in thousands of characters (one endless pre-token, or pathological text): cut anyway, outside
    # a grapheme. Counts across this one cut may be off by the tokens BPE would have merged over it.
    cut = low
    while cut < high and _joins_previous(text[cut]):
        cut += 1
    return cut


def _joins_previous(character: str) -> bool:
    import unicodedata

    return unicodedata.category(character) in ('Mn', 'Me', 'Cf') or '\ufe00' <= character <= '\ufe0f'


def _is_seam(tokenizer: Tokenizer, text: str, cut: int) -> bool:
    """True when the text around ``cut`` encodes as its two sides encoded apart: same tokens either side."""
    low, high = max(0, cut - _SEAM_CHECK_CHARS), min(len(text), cut + _SEAM_CHECK_CHARS)
    (both_chars, both_tokens), (left_chars, left_tokens), (right_chars, right_tokens) = tokenizer.boundaries_many(
        [text[low:high], text[low:cut], text[cut:high]]
    )
    offset = cut - low
    split = bisect.bisect_left(both_chars, offset)
    return (
        split < len(both_chars)
        and both_chars[split] == offset
        and both_tokens[split] == left_tokens[-1]
        and both_tokens[-1] == left_tokens[-1] + right_tokens[-1]
        and [int(char) for char in both_chars[: split + 1]] == [int(char) for char in left_chars]
        and [int(char) - offset for char in both_chars[split:]] == [int(char) for char in right_chars]
    )


def _read_index(path: Path) -> TokenIndex | None:
    try:
        with zipfile.ZipFile(path) as archive:
            chars, tokens = _read_npy(archive.read('chars.npy')), _read_npy(archive.read('tokens.npy'))
    except Exception:  # a truncated or foreign file (zipfile.BadZipFile, KeyError, ...) is recomputed, never fatal
        return None
    if chars is None or tokens is None or len(chars) != len(tokens) or len(chars) == 0:
        return None
    return TokenIndex._of_arrays(chars, tokens)


# The .npy headers np.savez writes for our two arrays: little-endian int32 or int64, one dimension.
_NPY_MAGIC = b'\x93NUMPY'
_NPY_TYPECODES = {'<i4': 'i', '<i8': 'q'}
_NPY_HEADER_MAX = 4096  # numpy's own are 118 bytes or so; a longer one is no file of ours


def _read_npy(data: bytes) -> array.array | None:
    """One array of the index as numpy wrote it (format 1.0-3.0), read without importing numpy; None if it is not
    a one-dimensional little-endian int32/int64 array of the length its header says."""
    if not data.startswith(_NPY_MAGIC) or len(data) < 10:
        return None
    major = data[6]
    size_bytes = 2 if major == 1 else 4
    header_length = int.from_bytes(data[8 : 8 + size_bytes], 'little')
    if header_length > _NPY_HEADER_MAX:
        return None
    start = 8 + size_bytes + header_length
    header = ast.literal_eval(data[8 + size_bytes : start].decode('latin-1'))
    if not isinstance(header, dict) or header.get('fortran_order') is not False:
        return None
    typecode, shape = _NPY_TYPECODES.get(header.get('descr')), header.get('shape')
    if typecode is None or not (isinstance(shape, tuple) and len(shape) == 1 and isinstance(shape[0], int)):
        return None
    values = _machine_array(typecode, memoryview(data)[start:])
    if len(values) != shape[0]:
        return None
    if sys.byteorder == 'big':
        values.byteswap()
    return values


def _write_index(path: Path, index: TokenIndex) -> None:
    """The index as numpy's ``np.savez`` writes it (so ``np.load`` reads it), written without importing numpy."""
    with atomic_writer(path, binary=True) as handle, zipfile.ZipFile(handle, 'w', zipfile.ZIP_STORED) as archive:
        archive.writestr('chars.npy', _npy_bytes(index._chars))
        archive.writestr('tokens.npy', _npy_bytes(index._tokens))


def _npy_bytes(values: memoryview) -> bytes:
    """One array in numpy's .npy format 1.0: magic, version, header length, a header dict padded with spaces to a
    multiple of 64 bytes and ending in a line break, then the little-endian values."""
    descr = {4: '<i4', 8: '<i8'}[values.itemsize]
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({len(values)},), }}"
    header += ' ' * (-(len(_NPY_MAGIC) + 4 + len(header) + 1) % 64) + '\n'
    data = array.array(values.format, values)
    if sys.byteorder == 'big':
        data.byteswap()
    return _NPY_MAGIC + b'\x01\x00' + len(header).to_bytes(2, 'little') + header.encode('latin-1') + data.tobytes()


class TokenCounter:
    """Token counts memoised in memory and on disk (SQLite), per tokenizer fingerprint.

    Building samples counts small windows of text; a warm run finds every count on disk and never parses the
    tokenizer at all. Keys are a hash of the text, so the store stays small.

    Thread-safe: EvalScope's worker threads build samples through one shared counter at once. The memo, the
    pending writes and the SQLite connection are touched only under ``self._lock``; the tokenizer is called
    outside it, so threads count in parallel (two threads counting the same new text both count it, which only
    costs time).
    """

    _FLUSH_EVERY = 500
    _MEMORY_ENTRIES = 50000

    def __init__(self, tokenizer: Tokenizer, *, persistent: bool = True) -> None:
        self.tokenizer = tokenizer
        self._lock = threading.Lock()
        self._memory: dict[str, int] = {}
        self._pending: list[tuple[bytes, int]] = []
        self._db = None
        if persistent:
            import atexit
            import sqlite3

            path = cache_dir() / 'counts' / f'{tokenizer.fingerprint[:40]}.sqlite'
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                # One connection for all threads, serialised by self._lock (check_same_thread only guards misuse).
                self._db = sqlite3.connect(path, timeout=30, check_same_thread=False)
                self._db.execute('PRAGMA journal_mode=WAL')
                self._db.execute('CREATE TABLE IF NOT EXISTS counts (key BLOB PRIMARY KEY, tokens INTEGER NOT NULL)')
                atexit.register(self.flush)
            except sqlite3.Error:  # a read-only or broken cache only costs speed
                self._db = None

    def __call__(self, text: str) -> int:
        key = None
        with self._lock:
            count = self._memory.get(text)
            if count is not None:
                return count
            if self._db is not None:
                key = hashlib.blake2b(text.encode('utf-8'), digest_size=16).digest()
                row = self._stored(key)
                if row is not None:
                    self._remember(text, row)
                    return row
        count = self.tokenizer.count(text)
        with self._lock:
            if key is not None:
                self._pending.append((key, count))
                if len(self._pending) >= self._FLUSH_EVERY:
                    self._write_pending()
            self._remember(text, count)
        return count

    def flush(self) -> None:
        """Write the counts not yet on disk (also run at exit)."""
        with self._lock:
            self._write_pending()

    def _stored(self, key: bytes) -> int | None:
        import sqlite3

        try:
            row = self._db.execute('SELECT tokens FROM counts WHERE key = ?', (key,)).fetchone()
        except sqlite3.Error:
            return None
        return None if row is None else int(row[0])

    def _remember(self, text: str, count: int) -> None:
        if len(self._memory) >= self._MEMORY_ENTRIES:
            self._memory.clear()
        self._memory[text] = count

    def _write_pending(self) -> None:
        if self._db is None or not self._pending:
            return
        import sqlite3

        try:
            with self._db:
                self._db.executemany('INSERT OR REPLACE INTO counts VALUES (?, ?)', self._pending)
        except sqlite3.Error:
            pass  # losing cached counts only costs speed next time
        self._pending.clear()


def shared_counter(tokenizer: Tokenizer) -> TokenCounter:
    """One persistent counter (one SQLite connection, one memory memo) per tokenizer and cache directory, so the
    subsets of a run, and later runs in the same process, share it instead of each opening the store again.
    Safe to call, and to use, from several threads at once."""
    key = (tokenizer.fingerprint, cache_dir())
    with _COUNTERS_LOCK:
        if key not in _COUNTERS:
            _COUNTERS[key] = TokenCounter(tokenizer)
        return _COUNTERS[key]
