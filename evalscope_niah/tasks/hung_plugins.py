"""Plugins whose import hung, remembered across processes, so a hang costs one run its timeout and not every run.

The loader (``plugins.py``) waits for a plugin's import at most ``EVALSCOPE_NIAH_PLUGIN_TIMEOUT`` seconds; one that
did not finish is written here, keyed by its distribution, that distribution's version and the entry point. Later
processes refuse it at once, naming the earlier run, unless they allow it more seconds than the hang was given or
the distribution's version changed: then it is tried again, and forgotten if it loads. The file is ours but lives in
a user-writable cache, so it is read as untrusted: bounded in size, any entry that is not of our shape ignored, and a
file that cannot be read or written only costs the wait it would have saved.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import threading
import time
from pathlib import Path

from ..atomic import atomic_write_text
from ..cache_home import cache_dir
from ..errors import NiahConfigError
from ..safe_files import read_bounded

__all__ = ['HungKey', 'earlier_hang', 'forget_hang', 'remember_hang']

# (distribution, its version, entry point name, entry point value): a new release of the plugin is tried again.
HungKey = tuple[str, str, str, str]

_LOCK = threading.Lock()  # read-modify-write of the file within this process
_MAX_FILE_BYTES = 256 * 1024  # a few hundred entries; a larger file is no file of ours
_MAX_ENTRIES = 200  # the oldest are dropped: a machine with more hanging plugins than this has other problems
_WHEN = re.compile(r'\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC')


def _path() -> Path:
    return cache_dir() / 'plugins' / 'hung.json'


def _name(key: HungKey) -> str:
    return json.dumps(list(key))


def _read() -> dict[str, dict[str, object]]:
    try:
        path = _path()
        data = json.loads(read_bounded(path, limit=_MAX_FILE_BYTES, param='plugins', where=str(path)))
    # Missing, unreadable, not JSON, larger than a file of ours, or nested deeper than the parser's recursion.
    except (OSError, ValueError, NiahConfigError, RecursionError):
        return {}
    hung = data.get('hung') if isinstance(data, dict) else None
    if not isinstance(hung, dict):
        return {}
    return {
        name: entry
        for name, entry in hung.items()
        if isinstance(entry, dict)
        and isinstance(entry.get('seconds'), (int, float))
        and math.isfinite(entry['seconds'])
        and 0 < entry['seconds'] <= 3600
        and isinstance(entry.get('when'), str)
        and _WHEN.fullmatch(entry['when'])
    }


def _write(hung: dict[str, dict[str, object]]) -> None:
    kept = dict(sorted(hung.items(), key=lambda item: str(item[1]['when']))[-_MAX_ENTRIES:])
    # A read-only cache: the next process waits again, nothing worse.
    with contextlib.suppress(OSError):
        atomic_write_text(_path(), json.dumps({'hung': kept}, indent=1, sort_keys=True))


def earlier_hang(key: HungKey, timeout: float) -> str | None:
    """Why not to try this plugin now ('its import did not finish within 60 s in a run at 2026-11-28 12:00 UTC'),
    or None: it never hung, or it is allowed more seconds now than when it hung."""
    entry = _read().get(_name(key))
    if entry is None or timeout > float(entry['seconds']):  # type: ignore[arg-type]  # checked by _read
        return None
    return f'its import did not finish within {float(entry["seconds"]):g} s in a run at {entry["when"]}'  # type: ignore[arg-type]


def remember_hang(key: HungKey, timeout: float) -> None:
    """Write that this plugin's import did not finish within ``timeout`` seconds."""
    with _LOCK:
        hung = _read()
        hung[_name(key)] = {'seconds': timeout, 'when': time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}
        _write(hung)


def forget_hang(key: HungKey) -> None:
    """The plugin loaded: a hang remembered for it no longer holds."""
    with _LOCK:
        hung = _read()
        if hung.pop(_name(key), None) is not None:
            _write(hung)
