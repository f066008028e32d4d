"""One run per work dir: a second process is refused at once, naming the holder; a killed holder's lock is free."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.work_dir_lock import HOLDER_FILE, LOCK_FILE, hold_work_dir, read_holder

# Holds the work dir, says so on stdout, then waits until its stdin closes (or it is killed).
HOLDER = """
import sys
from evalscope_niah.work_dir_lock import hold_work_dir
hold = hold_work_dir(sys.argv[1])
print('held', flush=True)
sys.stdin.read()
hold.release()
print('released', flush=True)
"""

# Tries to take the work dir once and prints what happened.
TAKER = """
import sys
from evalscope_niah.errors import NiahConfigError
from evalscope_niah.work_dir_lock import hold_work_dir
try:
    hold_work_dir(sys.argv[1]).release()
    print('taken')
except NiahConfigError as exc:
    print('refused', exc.param)
"""


def _python(code: str, work_dir: Path, **options) -> subprocess.Popen:
    env = {**os.environ, 'PYTHONPATH': str(Path(__file__).resolve().parents[1])}
    return subprocess.Popen(
        [sys.executable, '-c', code, str(work_dir)], env=env, stdout=subprocess.PIPE, text=True, **options
    )


def _try_from_another_process(work_dir: Path) -> str:
    taker = _python(TAKER, work_dir)
    out, _ = taker.communicate(timeout=60)
    return out.strip()


@pytest.fixture
def holder(tmp_path: Path):
    """A child process holding ``tmp_path / 'run'`` (it has said so: the lock is taken)."""
    work_dir = tmp_path / 'run'
    child = _python(HOLDER, work_dir, stdin=subprocess.PIPE)
    assert child.stdout.readline().strip() == 'held'
    yield child, work_dir
    if child.poll() is None:
        child.kill()
    child.wait(timeout=30)
    child.stdout.close()
    child.stdin.close()


def test_a_second_process_is_refused_at_once_naming_the_holder(holder) -> None:
    child, work_dir = holder
    with pytest.raises(NiahConfigError) as refused:
        hold_work_dir(work_dir)
    assert refused.value.param == 'work_dir'
    started = read_holder(work_dir)['started']
    assert f'pid {child.pid}, started {started}' in refused.value.detail
    assert str(work_dir) in refused.value.detail and 'another work_dir' in refused.value.detail


def test_a_released_work_dir_is_free_and_names_no_holder(holder) -> None:
    child, work_dir = holder
    child.stdin.close()
    assert child.stdout.readline().strip() == 'released'
    assert not (work_dir / HOLDER_FILE).exists()  # no stale holder named
    hold = hold_work_dir(work_dir)
    assert read_holder(work_dir)['pid'] == os.getpid()
    hold.release()


def test_a_killed_holders_lock_is_taken_over(holder) -> None:
    child, work_dir = holder
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert read_holder(work_dir)['pid'] == child.pid  # the killed run's side file is still there
    hold = hold_work_dir(work_dir)
    try:
        holder_now = json.loads((work_dir / HOLDER_FILE).read_text(encoding='utf-8'))
        assert holder_now['pid'] == os.getpid()  # replaced, not kept
    finally:
        hold.release()


def test_holds_within_one_process_are_counted(tmp_path: Path) -> None:
    work_dir = tmp_path / 'run'
    first, second = hold_work_dir(work_dir), hold_work_dir(work_dir)  # e.g. two of our datasets in one run
    first.release()
    first.release()  # idempotent: the second hold still counts
    assert _try_from_another_process(work_dir) == 'refused work_dir'
    second.release()
    assert _try_from_another_process(work_dir) == 'taken'
    assert (work_dir / LOCK_FILE).exists() and not (work_dir / HOLDER_FILE).exists()


def test_a_holder_file_nested_deeper_than_json_reads_as_unreadable(tmp_path: Path) -> None:
    (tmp_path / HOLDER_FILE).write_text('[' * 5000 + ']' * 5000, encoding='utf-8')
    assert read_holder(tmp_path) is None
