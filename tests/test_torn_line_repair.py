"""torn_lines.set_aside_torn_line on the files a kill can leave: cut at every byte of a last line (ASCII and
multi-byte), whole records without their newline, an unreadable last line, large files read from the end, and the
numbering of the files set aside. The end-to-end case (a real run killed, then resumed) is
tests/integration/test_torn_lines.py."""

from __future__ import annotations

import json

import pytest

from evalscope_niah.torn_lines import set_aside_torn_line

WHOLE = [{'index': 0, 'text': 'first'}, {'index': 1, 'text': '第二个样本'}]
LAST = (json.dumps({'index': 2, 'text': '针在干草堆里 ' * 3}, ensure_ascii=False) + '\n').encode('utf-8')


def _jsonl(rows: list[dict]) -> bytes:
    return b''.join((json.dumps(row, ensure_ascii=False) + '\n').encode('utf-8') for row in rows)


@pytest.mark.parametrize('cut', range(1, len(LAST)))
def test_a_last_line_cut_at_any_byte_is_set_aside_or_completed(tmp_path, cut):
    path = tmp_path / 'p.jsonl'
    path.write_bytes(_jsonl(WHOLE) + LAST[:cut])
    aside = set_aside_torn_line(path)
    if cut == len(LAST) - 1:  # only the newline is missing: the record is whole, and gets its newline
        assert aside is None and path.read_bytes() == _jsonl(WHOLE) + LAST
        return
    assert aside == tmp_path / 'p.jsonl.torn-1' and aside.read_bytes() == LAST[:cut]
    assert path.read_bytes() == _jsonl(WHOLE)
    assert set_aside_torn_line(path) is None and path.read_bytes() == _jsonl(WHOLE)  # whole now: left alone


def test_whole_files_empty_files_and_no_file_are_left_alone(tmp_path):
    path = tmp_path / 'p.jsonl'
    assert set_aside_torn_line(path) is None and not path.exists()
    for data in (b'', _jsonl(WHOLE), _jsonl(WHOLE) + b'\n'):
        path.write_bytes(data)
        assert set_aside_torn_line(path) is None and path.read_bytes() == data
    assert list(tmp_path.iterdir()) == [path]


def test_an_unreadable_whole_last_line_is_set_aside_too(tmp_path):
    # What an older resume left: the next record appended straight after a fragment, on one line.
    path = tmp_path / 'p.jsonl'
    glued = LAST[:20] + LAST
    path.write_bytes(_jsonl(WHOLE) + glued)
    assert set_aside_torn_line(path).read_bytes() == glued
    assert path.read_bytes() == _jsonl(WHOLE)


def test_a_torn_first_line_and_a_large_file_read_from_its_end(tmp_path):
    path = tmp_path / 'p.jsonl'
    path.write_bytes(LAST[:7])
    assert set_aside_torn_line(path).read_bytes() == LAST[:7] and path.read_bytes() == b''
    big = _jsonl([{'index': i, 'haystack': 'x' * 700_000} for i in range(4)])  # the last line spans chunks
    path.write_bytes(big + b'{"index": 4, "haystack": "' + b'y' * 3_000_000)
    aside = set_aside_torn_line(path)
    assert aside == tmp_path / 'p.jsonl.torn-2' and aside.stat().st_size == 3_000_026
    assert path.read_bytes() == big


def test_each_torn_line_gets_its_own_file(tmp_path):
    path = tmp_path / 'p.jsonl'
    for number in (1, 2, 3):
        path.write_bytes(_jsonl(WHOLE) + LAST[: 10 * number])
        assert set_aside_torn_line(path).name == f'p.jsonl.torn-{number}'
    assert [(tmp_path / f'p.jsonl.torn-{n}').read_bytes() for n in (1, 2, 3)] == [LAST[:10], LAST[:20], LAST[:30]]
