"""The memory of plugins whose import hung: written on a hang, read back as the reason to skip the plugin, forgotten
when it loads, ignored where more seconds are allowed now, and read as untrusted (a cache file anyone may edit)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalscope_niah.tasks import hung_plugins
from evalscope_niah.tasks.hung_plugins import earlier_hang, forget_hang, remember_hang

KEY = ('slow-task', '1.0', 'slow', 'slow_task:Slow')


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv('EVALSCOPE_NIAH_CACHE', str(tmp_path))
    return tmp_path


def test_a_hang_is_remembered_until_more_seconds_are_allowed_or_it_loads(cache: Path) -> None:
    assert earlier_hang(KEY, 60) is None
    remember_hang(KEY, 60)
    said = earlier_hang(KEY, 60)
    assert said is not None and said.startswith('its import did not finish within 60 s in a run at ')
    assert earlier_hang(KEY, 30) == said  # allowed fewer seconds than it hung in: still skipped
    assert earlier_hang(KEY, 61) is None  # more seconds now: it is tried again
    assert earlier_hang((*KEY[:1], '1.1', *KEY[2:]), 60) is None  # a new version of its package is tried again
    forget_hang(KEY)
    assert earlier_hang(KEY, 60) is None
    assert json.loads((cache / 'plugins' / 'hung.json').read_text())['hung'] == {}


@pytest.mark.parametrize(
    'content',
    [
        b'not json',
        b'[]',
        json.dumps({'hung': {json.dumps(list(KEY)): {'seconds': 'sixty', 'when': '2026-11-28 12:00 UTC'}}}).encode(),
        json.dumps({'hung': {json.dumps(list(KEY)): {'seconds': 60, 'when': '\x1b[31mred\x1b[0m'}}}).encode(),
        json.dumps({'hung': {json.dumps(list(KEY)): {'seconds': 1e309, 'when': '2026-11-28 12:00 UTC'}}}).encode(),
        b'{"hung": {}}' + b' ' * (hung_plugins._MAX_FILE_BYTES + 1),
        b'[' * 100_000 + b']' * 100_000,  # within the size bound, deeper than json's recursion
    ],
    ids=['not-json', 'a-list', 'seconds-a-word', 'when-with-escapes', 'seconds-infinite', 'too-large', 'nested'],
)
def test_a_file_not_of_our_shape_remembers_nothing(cache: Path, content: bytes) -> None:
    path = cache / 'plugins' / 'hung.json'
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    assert earlier_hang(KEY, 60) is None


def test_a_cache_that_cannot_be_written_only_forgets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / 'a-file'
    blocked.write_text('not a directory')
    monkeypatch.setenv('EVALSCOPE_NIAH_CACHE', str(blocked))
    remember_hang(KEY, 60)  # no error: the next process waits again, nothing worse
    assert earlier_hang(KEY, 60) is None
    forget_hang(KEY)


def test_the_file_keeps_the_newest_entries_only(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hung_plugins, '_MAX_ENTRIES', 3)
    for version in range(5):
        remember_hang((KEY[0], str(version), *KEY[2:]), 60)
    hung = json.loads((cache / 'plugins' / 'hung.json').read_text())['hung']
    assert len(hung) == 3
