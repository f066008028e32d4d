"""A name from data (a model id, a subset) made into one safe path segment: the folder or file-name part it becomes
stays inside the directory it is joined to, on every system, and two different names never become one.

A name that is already plainly safe (lowercase ASCII letters, digits, '.', '_', '-', starting with a letter or a
digit, not a Windows device name, not too long) is kept as it is, so ordinary ids read the same on disk. Any other
name keeps a readable stem of its safe characters and gains ``~`` and a hash of the whole name: the stem shows what
it was, the hash keeps it apart from every other name. Since a kept name never holds ``~``, a kept name and a hashed
one never meet; since a kept name is lowercase and the hash is lowercase hex, names that differ only in case (one
folder on macOS and Windows) never meet either. A name is first put in Unicode NFC form: its NFC and NFD spellings
(macOS file names, some keyboards) are one id, one folder, and a resume under either finds the other's cache. The
name itself is data: store it, do not read it back from the path.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = ['MAX_SAFE_NAME_CHARS', 'is_kept_as_is', 'safe_name']

MAX_SAFE_NAME_CHARS = 80  # a segment, far below every file system's 255 bytes, leaving room for the file's prefix
_STEM_CHARS = 48
_HASH_CHARS = 16  # 64 bits of SHA-256: two ids of one work dir do not meet by chance
_MARK = '~'
_KEPT = re.compile(r'[a-z0-9][a-z0-9._-]*')
_UNSAFE_RUN = re.compile(r'[^A-Za-z0-9._-]+')
# Windows refuses these as a name, and as the part before the first dot ('nul.txt'), whatever the case.
_DEVICE_NAMES = frozenset(
    {'con', 'prn', 'aux', 'nul', 'conin$', 'conout$'}
    | {f'{device}{digit}' for device in ('com', 'lpt') for digit in (*'0123456789', '¹', '²', '³')}
)


def is_kept_as_is(name: str) -> bool:
    """Whether `safe_name` returns ``name`` unchanged."""
    return (
        len(name) <= MAX_SAFE_NAME_CHARS
        and _KEPT.fullmatch(name) is not None
        and not name.endswith('.')
        and name.split('.', 1)[0] not in _DEVICE_NAMES
    )


def safe_name(name: str) -> str:
    """``name`` as one safe path segment (see the module's docstring): unchanged when plainly safe, else
    ``<stem>~<hash>``. Pure and injective up to NFC (names that normalise alike share a folder); not idempotent on
    hashed names (apply it once, to the original)."""
    name = unicodedata.normalize('NFC', name)
    if is_kept_as_is(name):
        return name
    # surrogatepass: a name decoded from bytes with surrogateescape still hashes, and to its own value.
    digest = hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:_HASH_CHARS]
    stem = _UNSAFE_RUN.sub('_', name).lstrip('._-')[:_STEM_CHARS].rstrip('.') or '_'
    if stem.split('.', 1)[0].lower() in _DEVICE_NAMES:  # 'nul.x~...' is still the device 'nul' to Windows
        stem = f'_{stem}'
    return f'{stem}{_MARK}{digest}'
