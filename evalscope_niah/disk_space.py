"""A full disk ends a run with one line: which file could not be written, and what is kept.

Every file of ours is written atomically (atomic.py), so the files written before are whole and the one being
written keeps its old content; EvalScope's own rows are appended as each sample finishes. A traceback per failed
write told the user none of that.
"""

from __future__ import annotations

import errno

from .errors import exception_chain

__all__ = ['DiskFull', 'disk_full_error', 'disk_full_message']

# No space left on the device, or over the user's quota: both mean 'free space, then resume'.
_FULL = frozenset({errno.ENOSPC, getattr(errno, 'EDQUOT', errno.ENOSPC)})


class DiskFull(BaseException):
    """A full disk, carried past the handlers that would count it as one sample's error and go on (EvalScope's
    ``ignore_errors`` logs a traceback per sample): no later write would succeed either. Raised from the OSError,
    which ``disk_full_error`` finds behind it."""


def disk_full_error(exc: BaseException) -> OSError | None:
    """The disk-full OSError behind ``exc`` (itself, or a cause or context of it), or None."""
    return next((link for link in exception_chain(exc) if isinstance(link, OSError) and link.errno in _FULL), None)


def disk_full_message(error: OSError, work_dir: str) -> str:
    """One line: the file, the cause, what was kept, how to go on."""
    where = f'writing {error.filename}' if error.filename else f'writing under {work_dir}'
    return (
        f'needle_haystack: the disk is full ({where}: {error.strerror or "no space left on device"}). '
        f'Files written before are whole and finished answers are kept in {work_dir}; '
        f'free space, then resume with --use-cache {work_dir}'
    )
