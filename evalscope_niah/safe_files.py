"""Files read from where the user pointed (a corpus folder, a work dir, a path in a config) read so that nothing
else is: inside the folder named (no absolute path, no '..', no symlink pointing out), a regular file (a FIFO would
hang the read, a device never end it), and at most so many bytes. One check for every such file: corpus files,
needle files and banks, progress files, a resume's config snapshot.
"""

from __future__ import annotations

import stat
from pathlib import Path

from .errors import NiahConfigError

__all__ = ['contained_file', 'read_bounded', 'regular_file']


def contained_file(directory: Path, name: str, *, param: str, where: str) -> Path:
    """``directory / name`` when ``name`` is a relative path with no ``..`` and it is a regular file inside
    ``directory`` (symlinks followed); else NiahConfigError(``param``) saying which (``where`` names the file).

    Only the folder the user pointed at may be read: a config (or a downloaded dataset) must not reach ~/.ssh or
    /etc through an absolute path, '..' or a symlink. Every file read from a folder the user named (corpus files,
    NeedleBench's needle file, a work dir's progress files) comes through here."""
    relative = Path(name)
    if relative.is_absolute() or relative.drive or '..' in relative.parts:
        raise NiahConfigError(
            param, f'{where} must be a path inside the directory {directory} (no absolute path, no ".."); got {name!r}'
        )
    return regular_file(directory / relative, param=param, where=where, root=directory)


def regular_file(path: Path, *, param: str, where: str, root: Path | None = None) -> Path:
    """``path`` when it is a regular file (a FIFO would hang the read, a device never end it) and, with ``root``,
    lies inside ``root`` once symlinks are followed; else NiahConfigError(``param``) saying what it is."""
    if not path.is_file():
        kind = _file_kind(path)
        if kind is not None:  # it is there: saying "not found" would send the user looking for the wrong fault
            raise NiahConfigError(param, f'{where} in {path.parent} is not a regular file ({kind})')
        directory = path.parent
        present = sorted(p.name for p in directory.iterdir() if p.is_file()) if directory.is_dir() else []
        raise NiahConfigError(param, f'{where} not found in {directory} (found: {present[:50]})')
    if root is not None:
        inside = root.resolve()
        if not path.resolve().is_relative_to(inside):
            raise NiahConfigError(
                param,
                f'{where} resolves to {path.resolve()}, outside the directory {inside} (a symlink pointing out); '
                'copy the file into the directory instead',
            )
    return path


def read_bounded(path: Path, *, limit: int, param: str, where: str) -> bytes:
    """At most ``limit`` bytes of the regular file ``path``; NiahConfigError(``param``) when it holds more (checked
    from its size first, and while reading: it may have grown since)."""
    size = path.stat().st_size
    if size > limit:
        raise NiahConfigError(param, f'{where} is {size:,} bytes; at most {limit:,} are read')
    with path.open('rb') as file:
        raw = file.read(limit + 1)
    if len(raw) > limit:
        raise NiahConfigError(param, f'{where} is over {limit:,} bytes; at most {limit:,} are read')
    return raw


def _file_kind(path: Path) -> str | None:
    """What stands at ``path`` when it is not a regular file ('a FIFO', 'a directory', ...), or None when nothing
    does (a dangling symlink counts as nothing: its target is what is missing)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    kinds = (
        (stat.S_ISDIR, 'a directory'),
        (stat.S_ISFIFO, 'a FIFO'),
        (stat.S_ISSOCK, 'a socket'),
        (stat.S_ISCHR, 'a character device'),
        (stat.S_ISBLK, 'a block device'),
    )
    return next((name for test, name in kinds if test(mode)), 'a special file')
