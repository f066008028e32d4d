"""A run killed (SIGKILL) in the middle of writing a prediction line, then resumed with --use-cache: the torn line is
set aside (kept in '<file>.torn-<n>', named in the log), the cache file holds whole lines only, the server is asked
again for the torn sample alone, and a second resume asks for nothing.

The kill must land inside the write. A real write of a few hundred kilobytes takes microseconds, so the child run
(a real EvalScope run against the test server) writes its second prediction line up to a chosen byte itself, tells
the test on a pipe, and waits there to be killed: the file holds exactly what a kill at that byte leaves. The test
waits for the pipe, never for time.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip('evalscope')

from evalscope import TaskConfig, run_task

from evalscope_niah.testing.openai_server import OpenAICompatServer, needle_finder
from evalscope_niah.torn_lines import TORN_SUFFIX
from tests.support.tasks import task_settings

MODEL = 'torn-model'
REPO = Path(__file__).resolve().parents[2]

# argv: the settings (JSON), where to cut the line ('middle', 'mid-character', 'before-newline'), the pipe's fd.
_TEARING_RUN = r"""
import json, os, sys
from evalscope import TaskConfig, run_task
from evalscope.utils.io_utils import JsonlWriter

settings, cut, signal_fd = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
whole_write, written = JsonlWriter.write, []

def cut_at(line):
    if cut == 'before-newline':
        return len(line) - 1
    middle = len(line) // 2
    if cut == 'mid-character':  # inside a multi-byte UTF-8 character (a continuation byte follows the cut)
        return next(i for i in range(middle, len(line)) if line[i] & 0xC0 == 0x80)
    return middle

def tear(writer, record):
    line = (json.dumps(record, ensure_ascii=False) + '\n').encode('utf-8')
    handle = writer._ensure_open()
    handle.flush()
    os.write(handle.fileno(), line[: cut_at(line)])
    os.write(signal_fd, b'writing\n')  # the line has begun and is cut here: the test kills the process now
    sys.stdin.read()  # never returns: stdin is a pipe nobody writes to

def tearing_write(self, record):
    if os.sep + 'predictions' + os.sep in self._path:
        written.append(record)
        if len(written) == 2:
            tear(self, record)
    return whole_write(self, record)

JsonlWriter.write = tearing_write
run_task(TaskConfig(**settings))
"""


def _settings(server: OpenAICompatServer, corpus_dir: Path, work_dir: Path, subset: str) -> dict[str, Any]:
    # Two samples, one at a time: the second prediction line is the torn one, and the last of the run.
    extra = {'context_lengths': [600, 700], 'document_depth_percents': [50]}
    return task_settings(
        server, corpus_dir, work_dir, model=MODEL, extra=extra, subsets=[subset], eval_batch_size=1
    )  # fmt: skip


def _kill_while_writing(settings: dict[str, Any], cut: str) -> None:
    read_end, write_end = os.pipe()
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(REPO), os.environ.get('PYTHONPATH', '')])}
    child = subprocess.Popen(
        [sys.executable, '-c', _TEARING_RUN, json.dumps(settings), cut, str(write_end)], pass_fds=(write_end,),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
    )  # fmt: skip
    os.close(write_end)
    try:
        with os.fdopen(read_end, 'rb') as events:
            began = events.readline()  # the event, or end of file when the child ended without reaching it
        if began != b'writing\n':
            child.kill()
            pytest.fail('the run ended before its second prediction line: ' + child.communicate()[0].decode()[-3000:])
        child.send_signal(signal.SIGKILL)
        child.communicate()
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == -signal.SIGKILL


def _lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    assert data.endswith(b'\n'), 'the cache file ends in a torn line'
    return data.splitlines()


def _prompt(messages: list[dict]) -> str:
    [user] = [message['content'] for message in messages if message['role'] == 'user']
    return user


def _resume(settings: dict[str, Any], work_dir: Path) -> None:
    run_task(TaskConfig(**{**settings, 'use_cache': str(work_dir)}))


@pytest.mark.parametrize(('subset', 'cut'), [('english', 'middle'), ('chinese', 'mid-character')])
def test_a_line_torn_by_a_kill_is_set_aside_and_only_its_sample_asked_again(
    tmp_path, fixture_corpus_dir, caplog, subset, cut
):
    predictions = tmp_path / 'predictions' / MODEL / f'needle_haystack_{subset}.jsonl'
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        settings = _settings(server, fixture_corpus_dir, tmp_path, subset)
        _kill_while_writing(settings, cut)
        [kept] = predictions.read_bytes().split(b'\n')[:-1]
        fragment = predictions.read_bytes()[len(kept) + 1 :]
        assert fragment and not fragment.endswith(b'\n')  # the kill tore the second line
        asked_before = len(server.requests_for(MODEL))

        with caplog.at_level(logging.WARNING, logger='evalscope_niah'):
            _resume(settings, tmp_path)
        [aside] = predictions.parent.glob(f'{predictions.name}{TORN_SUFFIX}*')
        assert aside.read_bytes() == fragment  # kept, byte for byte
        assert str(aside) in caplog.text  # and named in the log
        rows = [json.loads(line) for line in _lines(predictions)]
        assert rows[0] == json.loads(kept) and len(rows) == 2
        [again] = server.requests_for(MODEL)[asked_before:]  # the torn sample, and nothing else
        assert fragment.startswith(b'{"index": %d,' % rows[1]['index'])
        assert _prompt(again.messages) == _prompt(rows[1]['messages'])

        asked_before = len(server.requests_for(MODEL))
        _resume(settings, tmp_path)  # a second resume: every line is whole, so nothing is asked
        assert server.requests_for(MODEL)[asked_before:] == []
    assert [json.loads(line) for line in _lines(predictions)] == rows
    assert len(list(predictions.parent.glob(f'*{TORN_SUFFIX}*'))) == 1


def test_a_line_cut_just_before_its_newline_is_whole_and_kept(tmp_path, fixture_corpus_dir):
    predictions = tmp_path / 'predictions' / MODEL / 'needle_haystack_english.jsonl'
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        settings = _settings(server, fixture_corpus_dir, tmp_path, 'english')
        _kill_while_writing(settings, 'before-newline')
        written = predictions.read_bytes()
        assert not written.endswith(b'\n')
        asked_before = len(server.requests_for(MODEL))
        _resume(settings, tmp_path)
        assert server.requests_for(MODEL)[asked_before:] == []  # the record was whole: not asked again
    assert predictions.read_bytes() == written + b'\n'
    assert list(predictions.parent.glob(f'*{TORN_SUFFIX}*')) == []
