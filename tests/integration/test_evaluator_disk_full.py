"""The evaluator's end of a run that cannot go on: a full disk ends it with one line, not a pile of tracebacks.

(Ctrl-C, the other such end, is tested in test_interrupt.py.)
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import httpx
import pytest

pytest.importorskip('evalscope')

from evalscope import run_task

from evalscope_niah.reporting.outputs import RESULTS_FILE
from evalscope_niah.serving.deadline import deadline_transport
from evalscope_niah.testing.openai_server import OpenAICompatServer, needle_finder
from tests.support.tasks import task_config

MODEL = 'mock-model'


@pytest.mark.skipif(not Path('/proc/self/fd').is_dir(), reason='finds the file being written through /proc')
def test_a_full_disk_ends_the_run_with_one_line_naming_the_file_and_what_is_kept(
    tmp_path, fixture_corpus_dir, monkeypatch, capfd
):
    real_fsync = os.fsync

    def fsync(fd: int) -> None:  # the disk fills up just as the results file is written (after every answer)
        if os.path.basename(os.readlink(f'/proc/self/fd/{fd}')).startswith(f'.{RESULTS_FILE}.'):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, 'fsync', fsync)
    extra = {'context_lengths': [600], 'document_depth_percents': [0, 100]}
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        task = task_config(server, fixture_corpus_dir, tmp_path, model=MODEL, extra=extra, subsets=['english'])
        with pytest.raises(SystemExit) as stopped:
            run_task(task)
    message = str(stopped.value.code)
    results = tmp_path / 'reports' / MODEL / RESULTS_FILE
    assert '\n' not in message and f'writing {results}: No space left on device' in message
    assert f'finished answers are kept in {tmp_path}' in message and f'--use-cache {tmp_path}' in message
    assert 'Traceback' not in ''.join(capfd.readouterr())
    # What was written before is whole: both answers, one JSON row each; no temporary file is left.
    lines = (tmp_path / 'predictions' / MODEL / 'needle_haystack_english.jsonl').read_text(encoding='utf-8')
    assert len([json.loads(line) for line in lines.splitlines()]) == 2
    assert not results.exists() and list(results.parent.glob('*.tmp')) == []


def test_a_full_disk_stops_the_run_at_the_first_row_it_cannot_save(tmp_path, fixture_corpus_dir, monkeypatch, capfd):
    """With ignore_errors, each row that could not be saved was one sample's error and a traceback, and the run went
    on: a full disk stops it at once, keeping the rows saved before."""
    from evalscope.api.evaluator.cache import CacheManager

    real_save = CacheManager.save_prediction_cache
    saved: list[object] = []

    def save(self, *args, **kwargs):  # the disk fills up after the first row
        if saved:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        saved.append(real_save(self, *args, **kwargs))
        return saved[-1]

    monkeypatch.setattr(CacheManager, 'save_prediction_cache', save)
    extra = {'context_lengths': [600], 'document_depth_percents': [0, 50, 100]}
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        task = task_config(
            server, fixture_corpus_dir, tmp_path, model=MODEL, extra=extra, subsets=['english'], eval_batch_size=1,
            ignore_errors=True,
        )  # fmt: skip
        with pytest.raises(SystemExit) as stopped:
            run_task(task)
        assert len(server.requests_for(MODEL)) == 2  # the third sample is not asked for
        # The stop ended with the run: a later client in this process is not refused.
        with httpx.Client(transport=deadline_transport(httpx.HTTPTransport()), timeout=10) as client:
            assert client.get(f'{server.base_url}/models').status_code == 200
    message = str(stopped.value.code)
    assert '\n' not in message and f'(writing under {tmp_path}: No space left on device)' in message
    assert 'Traceback' not in ''.join(capfd.readouterr())
    lines = (tmp_path / 'predictions' / MODEL / 'needle_haystack_english.jsonl').read_text(encoding='utf-8')
    assert len(lines.splitlines()) == 1
