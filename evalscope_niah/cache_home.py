"""Where this package keeps what it may reuse across runs (token boundaries and counts, chat renders, plugins whose
import hung): ``EVALSCOPE_NIAH_CACHE``, else ``~/.cache/evalscope_niah``. Deleting it only costs time."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ['CACHE_SWITCH', 'cache_dir']

CACHE_SWITCH = 'EVALSCOPE_NIAH_CACHE'


def cache_dir() -> Path:
    """The cache directory, read from the environment at each call (tests and users may point it elsewhere)."""
    return Path(os.environ.get(CACHE_SWITCH, Path.home() / '.cache' / 'evalscope_niah'))
