"""A JSONL file that a killed writer left with a torn last line, made whole again before anything appends to it.

EvalScope appends one JSON line per finished sample (predictions, reviews). A ``kill -9`` in the middle of a large
line leaves a fragment without its newline; the next run's first append then lands on the fragment's line, and the
two records become one unreadable line: the cut sample and the next finished one are both lost, on every resume.
`set_aside_torn_line` is called on each such file before a resume reads it: the torn line is moved into a sibling
file (kept, for whoever wants to look) and the file is cut back to its last whole line, so only the torn sample is
asked for again.

A line is whole when it ends with a newline and holds a JSON object. Only the last line is looked at: a killed
append can tear nothing else, and the file may hold gigabytes of haystacks.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .atomic import atomic_write_bytes
from .escaping import inert_logger

__all__ = ['TORN_SUFFIX', 'set_aside_torn_line', 'torn_line_file']

logger = inert_logger(__name__)

TORN_SUFFIX = '.torn-'  # '<file>.torn-1', '.torn-2', ...: one per line set aside, never overwritten
_CHUNK = 1 << 20


def torn_line_file(path: str | os.PathLike[str]) -> Path:
    """The first free ``<path>.torn-<n>`` beside ``path``."""
    path = Path(path)
    number = 1
    while (candidate := path.with_name(f'{path.name}{TORN_SUFFIX}{number}')).exists():
        number += 1
    return candidate


def set_aside_torn_line(path: str | os.PathLike[str]) -> Path | None:
    """Make the last line of the JSONL file ``path`` whole: a torn one (no newline and not a JSON object, or not a
    JSON object) goes to `torn_line_file` and is cut from ``path``; a whole record that only lacks its newline gets
    it. Returns the file the torn line went to, None when there was none (or no file)."""
    path = Path(path)
    if not path.is_file():
        return None
    with open(path, 'r+b') as handle:
        torn = _cut_torn_line(handle, path)
    if torn is None:
        return None
    aside, length = torn
    logger.warning(
        'needle_haystack: %s ended with a torn line (%d bytes, a write cut by a kill); set aside in %s, and its '
        'sample is asked for again',
        path,
        length,
        aside,
    )
    return aside


def _cut_torn_line(handle, path: Path) -> tuple[Path, int] | None:
    """The file the torn last line of ``handle`` went to and its length; None when the last line is whole."""
    size = handle.seek(0, os.SEEK_END)
    if size == 0:
        return None
    handle.seek(size - 1)
    ends_whole = handle.read(1) == b'\n'
    start = _last_line_start(handle, size - 1 if ends_whole else size)
    handle.seek(start)
    line = handle.read(size - start)
    if _is_record(line):
        if not ends_whole:  # the write stopped right before its newline: the record itself is whole
            handle.seek(size)
            handle.write(b'\n')
            _sync(handle)
        return None
    if not line.strip():
        return None
    aside = atomic_write_bytes(torn_line_file(path), line)  # kept first: a kill now leaves it in both places
    handle.truncate(start)
    _sync(handle)
    return aside, len(line)


def _last_line_start(handle, end: int) -> int:
    """The offset just after the last newline before ``end`` (0 when there is none)."""
    position = end
    while position > 0:
        step = min(_CHUNK, position)
        handle.seek(position - step)
        found = handle.read(step).rfind(b'\n')
        if found >= 0:
            return position - step + found + 1
        position -= step
    return 0


def _is_record(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError (a cut in the middle of a character) alike
        return False


def _sync(handle) -> None:
    handle.flush()
    os.fsync(handle.fileno())
