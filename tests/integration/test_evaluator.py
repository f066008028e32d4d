"""One run per work dir, through EvalScope's run_task: a second run into a busy work dir stops at once naming the
first; a run killed with SIGKILL leaves the work dir free for the next.

The first run is a child process whose model request the server holds open (the test waits for that request: from
then on the run holds the work dir), so the second run meets it mid-run.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalscope_niah.testing.openai_server import OpenAICompatServer, needle_finder
from tests.support.tasks import task_settings

pytest.importorskip('evalscope')

from evalscope import TaskConfig, run_task

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.integration import register
from evalscope_niah.work_dir_lock import HOLDER_FILE, read_holder

MODEL = 'held-model'
FIRST = {'context_lengths': [600], 'document_depth_percents': [0, 100]}
SECOND = {'context_lengths': [700], 'document_depth_percents': [50]}  # another grid, as in the issue

CHILD = """
import json, sys
from evalscope import TaskConfig, run_task
from evalscope_niah.integration import register
register()
run_task(TaskConfig(**json.loads(sys.argv[1])))
"""


class HeldModel:
    """needle_finder, but every request waits until ``release`` is set: the run sending it stays mid-run."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def __call__(self, messages: list[dict]) -> str:
        self.release.wait(120)
        return needle_finder(messages)


def _settings(server: OpenAICompatServer, corpus_dir: Path, work_dir: Path, extra: dict[str, Any]) -> dict[str, Any]:
    return task_settings(server, corpus_dir, work_dir, model=MODEL, extra=extra, subsets=['english'], eval_batch_size=1)


@pytest.fixture
def first_run(fixture_corpus_dir: Path, tmp_path: Path) -> Iterator[tuple[subprocess.Popen, HeldModel, Any, Path]]:
    """A child run_task into ``tmp_path / 'run'`` (--no-timestamp), its first model request held open."""
    register()
    work_dir = tmp_path / 'run'
    model = HeldModel()
    with OpenAICompatServer({MODEL: model}, max_seconds=300) as server:
        settings = _settings(server, fixture_corpus_dir, work_dir, FIRST)
        child = subprocess.Popen(
            [sys.executable, '-c', CHILD, json.dumps(settings)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            assert server.wait_for_requests(1, timeout=120), child.stderr.read().decode(errors='replace')[-3000:]
            yield child, model, server, work_dir
        finally:
            model.release.set()
            if child.poll() is None:
                child.kill()
            child.wait(timeout=60)
            child.stderr.close()


def test_a_second_run_into_a_busy_work_dir_stops_at_once_naming_the_first(first_run, fixture_corpus_dir) -> None:
    child, model, server, work_dir = first_run
    holder = read_holder(work_dir)
    with pytest.raises(NiahConfigError) as refused:
        run_task(TaskConfig(**_settings(server, fixture_corpus_dir, work_dir, SECOND)))
    assert refused.value.param == 'work_dir'
    assert f'pid {child.pid}, started {holder["started"]}' in refused.value.detail
    assert len(server.requests) == 1  # the second run sent nothing

    model.release.set()  # the first run finishes undisturbed
    assert child.wait(timeout=120) == 0, child.stderr.read().decode(errors='replace')[-3000:]
    predictions = work_dir / 'predictions' / MODEL / 'needle_haystack_english.jsonl'
    rows = [json.loads(line) for line in predictions.read_text(encoding='utf-8').splitlines()]
    assert sorted(row['index'] for row in rows) == [0, 1]  # its own samples, once each
    assert {row['metadata']['context_length'] for row in rows} == {600}
    assert not (work_dir / HOLDER_FILE).exists()  # released at its end


def test_a_run_killed_mid_run_leaves_the_work_dir_to_the_next(first_run, fixture_corpus_dir) -> None:
    child, model, server, work_dir = first_run
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=60) == -signal.SIGKILL
    assert read_holder(work_dir)['pid'] == child.pid  # its side file outlives it
    model.release.set()
    report = run_task(TaskConfig(**_settings(server, fixture_corpus_dir, work_dir, SECOND)))['needle_haystack']
    assert report.execution_summary.succeeded == 1
    assert not (work_dir / HOLDER_FILE).exists()  # taken over, then released at the end of this run
