"""Behavioural tests for evalscope_niah.atomic: atomic writes keep old files, modes, and no temp files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from evalscope_niah.atomic import atomic_write_bytes, atomic_write_text, atomic_writer
from evalscope_niah.reporting.result_files import (
    read_cells_csv,
    write_cells_csv,
    write_results,
)
from evalscope_niah.reporting.stats import (
    summarize_cells,
)
from tests.support.results import mixed_results, sample


def test_atomic_write_leaves_no_temp_files(tmp_path: Path) -> None:
    write_results(tmp_path / 'results.jsonl', mixed_results())
    write_cells_csv(tmp_path / 'cells.csv', summarize_cells(mixed_results()))
    write_results(tmp_path / 'results.jsonl', mixed_results()[:1])  # overwrite
    assert sorted(p.name for p in tmp_path.iterdir()) == ['cells.csv', 'results.jsonl']
    assert stat.S_IMODE((tmp_path / 'cells.csv').stat().st_mode) == 0o644  # not mkstemp's 0600


def test_atomic_write_failure_keeps_old_file_and_cleans_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / 'results.jsonl'
    write_results(path, mixed_results()[:1])
    before = path.read_bytes()

    def broken_replace(src: str, dst: str) -> None:
        raise OSError('disk full')

    monkeypatch.setattr(os, 'replace', broken_replace)
    with pytest.raises(OSError, match='disk full'):
        write_results(path, mixed_results())
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ['results.jsonl']


def test_atomic_write_keeps_existing_permissions_and_creates_parents(tmp_path: Path) -> None:
    path = tmp_path / 'deep' / 'dir' / 'cells.csv'
    write_cells_csv(path, [])
    assert read_cells_csv(path) == []
    path.chmod(0o600)
    write_cells_csv(path, summarize_cells([sample()]))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_streamed_write_replaces_only_when_complete(tmp_path: Path) -> None:
    path = tmp_path / 'preview.jsonl'
    atomic_write_text(path, 'old\n')
    with pytest.raises(RuntimeError, match='midway'), atomic_writer(path) as handle:
        handle.write('half of a new file\r\n')
        assert path.read_text(encoding='utf-8') == 'old\n'  # readers still see the old file while writing
        raise RuntimeError('midway')
    assert path.read_text(encoding='utf-8') == 'old\n'
    assert [p.name for p in tmp_path.iterdir()] == ['preview.jsonl']
    with atomic_writer(path) as handle:
        handle.write('line one\r\nline two\n')  # no newline translation either way
    assert path.read_bytes() == b'line one\r\nline two\n'


def test_binary_stream_and_bytes(tmp_path: Path) -> None:
    with atomic_writer(tmp_path / 'a' / 'b.bin', binary=True) as handle:
        handle.write(b'\x00\xff')
    assert (tmp_path / 'a' / 'b.bin').read_bytes() == b'\x00\xff'
    assert atomic_write_bytes(tmp_path / 'c.bin', b'x') == tmp_path / 'c.bin'
    assert (tmp_path / 'c.bin').read_bytes() == b'x'
