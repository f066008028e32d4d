"""One run per work dir at a time: an OS file lock in the work dir, and a side file naming its holder.

Two runs writing one work dir interleave their predictions (duplicate ids) and overwrite each other's results, so the
second stops at once, naming the first (pid, start time, host). The lock is the operating system's (``filelock``):
it ends with its process, so a run killed with SIGKILL leaves no lock behind, only a stale side file, which the next
holder replaces. Within one process the hold is counted: EvalScope may run several of our datasets in one run.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from .atomic import atomic_write_text
from .errors import NiahConfigError

__all__ = ['HOLDER_FILE', 'LOCK_FILE', 'WorkDirHold', 'hold_work_dir', 'read_holder']

# Hidden files in the work dir's root: EvalScope writes nothing of that name, and results readers skip dotfiles.
LOCK_FILE = '.niah-run.lock'
HOLDER_FILE = '.niah-run.holder.json'

_HOLDS: dict[str, _Held] = {}  # resolved work dir -> this process's hold on it
_HOLDS_LOCK = threading.Lock()


@dataclass
class _Held:
    lock: FileLock
    holder_path: Path
    count: int


class WorkDirHold:
    """This run's share of the process's hold on a work dir; :meth:`release` is idempotent."""

    def __init__(self, key: str) -> None:
        self._key = key
        self._released = False
        self._release_lock = threading.Lock()

    def release(self) -> None:
        with self._release_lock:
            if self._released:
                return
            self._released = True
        with _HOLDS_LOCK:
            held = _HOLDS[self._key]
            held.count -= 1
            if held.count:
                return
            del _HOLDS[self._key]
            # The side file goes first: once the lock is free, a side file may only name a live holder (or a killed
            # one, which its successor replaces).
            held.holder_path.unlink(missing_ok=True)
            held.lock.release(force=True)


def hold_work_dir(work_dir: str | os.PathLike[str]) -> WorkDirHold:
    """Take the work dir for this run before anything is written in it; NiahConfigError('work_dir') when another
    process holds it. Reentrant within a process: every hold must be released."""
    directory = Path(work_dir).expanduser()
    key = os.path.realpath(directory)
    with _HOLDS_LOCK:
        held = _HOLDS.get(key)
        if held is None:
            directory.mkdir(parents=True, exist_ok=True)
            lock = FileLock(str(directory / LOCK_FILE), thread_local=False)
            try:
                lock.acquire(timeout=0)
            except Timeout:
                raise NiahConfigError('work_dir', _busy_message(directory)) from None
            held = _Held(lock=lock, holder_path=directory / HOLDER_FILE, count=0)
            try:
                atomic_write_text(held.holder_path, json.dumps(_this_holder(), indent=1) + '\n')
            except BaseException:
                lock.release(force=True)
                raise
            _HOLDS[key] = held
        held.count += 1
    return WorkDirHold(key)


def read_holder(work_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """What the side file says of the run holding ``work_dir`` (pid, started, host); None when absent or unreadable
    (the holder took the lock a moment ago and is writing it)."""
    try:
        holder = json.loads((Path(work_dir) / HOLDER_FILE).read_text(encoding='utf-8'))
    except (OSError, ValueError, RecursionError):  # RecursionError: a file nested deeper than the parser's recursion
        return None
    return holder if isinstance(holder, dict) else None


def _this_holder() -> dict[str, Any]:
    started = datetime.now(timezone.utc).isoformat(timespec='seconds').replace('+00:00', 'Z')
    return {'pid': os.getpid(), 'started': started, 'host': socket.gethostname()}


def _busy_message(directory: Path) -> str:
    holder = read_holder(directory)
    if holder is None:
        who = 'another run (its pid and start time are not written yet)'
    else:
        who = f'another run (pid {holder.get("pid")}, started {holder.get("started")} on {holder.get("host")})'
    return (
        f'{who} is writing into {str(directory)!r}, and two runs in one work dir mix their predictions and overwrite '
        "each other's results. Wait for it to end, or give this run another work_dir (or drop --no-timestamp)"
    )
