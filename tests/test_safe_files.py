"""Files read from where the user pointed: `safe_files` refuses a name that leaves its folder, a path that is not a
regular file (without reading it: a FIFO would hang), and more bytes than allowed; each error names the parameter."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.safe_files import contained_file, read_bounded, regular_file


@pytest.mark.parametrize('name', ['../x.txt', '/etc/passwd', 'a/../../x.txt'])
def test_a_name_that_leaves_its_folder_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(NiahConfigError, match=r'no absolute path, no "\.\."') as refused:
        contained_file(tmp_path, name, param='needle_file_name', where='needle file')
    assert refused.value.param == 'needle_file_name'


def test_a_symlink_pointing_out_is_refused_and_one_inside_is_read(tmp_path: Path) -> None:
    (tmp_path / 'in').mkdir()
    (tmp_path / 'secret.txt').write_text('secret', encoding='utf-8')
    (tmp_path / 'in' / 'out.txt').symlink_to(tmp_path / 'secret.txt')
    with pytest.raises(NiahConfigError, match='a symlink pointing out'):
        contained_file(tmp_path / 'in', 'out.txt', param='p', where='file')
    (tmp_path / 'in' / 'real.txt').write_text('ok', encoding='utf-8')
    (tmp_path / 'in' / 'link.txt').symlink_to(tmp_path / 'in' / 'real.txt')
    assert contained_file(tmp_path / 'in', 'link.txt', param='p', where='file') == tmp_path / 'in' / 'link.txt'


def test_what_is_not_a_regular_file_says_what_it_is_unread(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / 'fifo')
    with pytest.raises(NiahConfigError, match=r'is not a regular file \(a FIFO\)'):
        regular_file(tmp_path / 'fifo', param='p', where='file')
    with pytest.raises(NiahConfigError, match=r'is not a regular file \(a directory\)'):
        regular_file(tmp_path, param='p', where='file')
    with pytest.raises(NiahConfigError, match=r'not found in .* \(found: \[\]\)'):
        regular_file(tmp_path / 'missing', param='p', where='file')


def test_read_bounded_reads_at_most_its_limit(tmp_path: Path) -> None:
    path = tmp_path / 'f'
    path.write_bytes(b'x' * 100)
    assert read_bounded(path, limit=100, param='p', where='file') == b'x' * 100
    with pytest.raises(NiahConfigError, match=r'is 100 bytes; at most 99 are read'):
        read_bounded(path, limit=99, param='p', where='file')
