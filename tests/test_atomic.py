"""Behavioural tests for evalscope_niah.atomic: atomic writes keep old files, modes, and no temp files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from evalscope_niah.results import (
    read_cells_csv,
    write_cells_csv,
    write_results,
)
from evalscope_niah.stats import (
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
