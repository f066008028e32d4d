"""A full disk is found behind whatever raised it, and told in one line: the file, what is kept, how to go on."""

from __future__ import annotations

import errno
import os

import pytest

from evalscope_niah.atomic import atomic_write_text
from evalscope_niah.disk_space import disk_full_error, disk_full_message


def test_a_full_disk_during_an_atomic_write_names_the_file_and_keeps_the_old_one(tmp_path, monkeypatch):
    target = tmp_path / 'results.jsonl'
    target.write_text('old\n', encoding='utf-8')

    def full(fd: int) -> None:  # fsync is where a full disk shows with delayed allocation
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, 'fsync', full)
    with pytest.raises(OSError) as raised:
        atomic_write_text(target, 'new\n')
    assert raised.value.filename == str(target)
    assert target.read_text(encoding='utf-8') == 'old\n' and sorted(tmp_path.iterdir()) == [target]


def test_the_full_disk_is_found_behind_what_raised_last():
    full = OSError(errno.ENOSPC, 'No space left on device', '/work/reports/m/needle_haystack_results.jsonl')
    try:
        try:
            raise full
        finally:
            raise RuntimeError('the cleanup failed too')
    except RuntimeError as exc:
        assert disk_full_error(exc) is full
    assert disk_full_error(OSError(errno.EACCES, 'Permission denied')) is None
    assert disk_full_error(ValueError('no')) is None


def test_the_message_is_one_line_naming_the_file_and_the_resume():
    full = OSError(errno.ENOSPC, 'No space left on device', '/w/reports/m/needle_haystack_results.jsonl')
    message = disk_full_message(full, '/w')
    assert '\n' not in message
    assert 'writing /w/reports/m/needle_haystack_results.jsonl: No space left on device' in message
    assert 'finished answers are kept in /w' in message and message.endswith('--use-cache /w')
    assert 'writing under /w' in disk_full_message(OSError(errno.ENOSPC, 'No space left on device'), '/w')
