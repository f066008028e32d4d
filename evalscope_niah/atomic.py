"""Atomic file writes: readers (and a crash midway) never see a half-written file.

Everything goes to a temporary file in the target's directory, is flushed to disk, then renamed over the target
with `os.replace` (atomic on POSIX and Windows within one file system).  One implementation for every writer of
the package: result files, heatmaps, previews and the token-index cache.
"""

from __future__ import annotations

import glob
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

__all__ = ['atomic_write_bytes', 'atomic_write_text', 'atomic_writer']

# New files are world-readable like any other output; mkstemp's 0600 would leak onto shared result files.
_NEW_FILE_MODE = 0o644
# A temporary file this old was left by a writer that was killed (a live one writes it within seconds to minutes):
# the next write of the same target removes it.
STALE_TEMPORARY_S = 3600.0


@contextmanager
def atomic_writer(path: str | os.PathLike[str], *, binary: bool = False) -> Iterator[IO[Any]]:
    """Open a temporary file beside `path` for writing; on a clean exit it replaces `path`, else it is removed.

    Text mode is UTF-8 with no newline translation.  Missing parent directories are created; an existing file
    keeps its permissions.  For large outputs written piece by piece (a JSONL stream, a numpy archive).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o777 if target.exists() else _NEW_FILE_MODE
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f'.{target.name}.', suffix='.tmp')
    try:
        handle = os.fdopen(fd, 'wb') if binary else os.fdopen(fd, 'w', encoding='utf-8', newline='')
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except OSError as exc:
        Path(tmp_name).unlink(missing_ok=True)
        if (
            exc.filename is None and exc.errno is not None
        ):  # a failed write or fsync (a full disk) names no file: name the one being written
            exc.filename = str(target)
        raise
    except BaseException:
        # Also on KeyboardInterrupt: never leave the temp file behind.
        Path(tmp_name).unlink(missing_ok=True)
        raise
    _remove_stale_temporaries(target)


def _remove_stale_temporaries(target: Path) -> None:
    """Temporary files of ``target`` left by killed writers (SIGKILL skips the cleanup above)."""
    cutoff = time.time() - STALE_TEMPORARY_S
    for leftover in target.parent.glob(f'.{glob.escape(target.name)}.*.tmp'):
        try:
            if leftover.is_file() and not leftover.is_symlink() and leftover.stat().st_mtime < cutoff:
                leftover.unlink()
        except OSError:  # gone already (another writer cleaned it), or not ours to remove: harmless
            pass


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write `data` to `path` atomically; returns the path."""
    with atomic_writer(path, binary=True) as handle:
        handle.write(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """UTF-8 text variant of `atomic_write_bytes` (no newline translation)."""
    return atomic_write_bytes(path, text.encode('utf-8'))
