"""Resuming with EvalScope's use_cache after a kill -9: nothing finished is lost or recomputed, errors are retried.

Run 1 runs ``run_task`` in a child process against a slow model on a real OpenAI-compatible server (in this
process), with one sample's prompt failing permanently (``ignore_errors=True``). The child is SIGKILLed once a few
predictions are on disk. Run 2 resumes in this process with ``use_cache``; run 3 changes the grid and must be
refused. Every chat request is recorded, so "sent at most once" is checked per prompt.

EvalScope keeps a fresh run's reviews in a temporary file until the run ends; our evaluator publishes them at once,
so the reviews of a killed first run are kept too (last test).
"""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evalscope_niah.testing.openai_server import OpenAICompatServer, make_judge_responder, needle_finder, overlap_grader
from tests.support.tasks import UNCHECKED_JUDGE, judge_block, task_settings

pytest.importorskip('evalscope')

from evalscope import TaskConfig, run_task

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.integration import register
from evalscope_niah.making.samples import iter_samples
from evalscope_niah.tasks.compose import parse_params
from evalscope_niah.work_dir_lock import HOLDER_FILE, LOCK_FILE

MODEL, JUDGE = 'slow-model', 'mock-judge'
EXTRA = {'context_lengths': [600, 900], 'document_depth_percents': [0, 25, 50, 75, 100], **UNCHECKED_JUDGE}
FAILING = 0  # index of the sample whose prompt fails permanently in run 1
KILL_AFTER_ROWS = 3
SLOW_SECONDS = 0.3

CHILD = """
import json, sys
from evalscope import TaskConfig, run_task
from evalscope_niah.integration import register
register()
run_task(TaskConfig(**json.loads(sys.argv[1])))
"""


class SlowModel:
    """needle_finder behind a delay; in run 1 the prompt of one sample always fails (the server answers 500)."""

    def __init__(self, failing_prompt: str) -> None:
        self.failing_prompt = failing_prompt
        self.first_run = threading.Event()
        self.first_run.set()

    def __call__(self, messages: list[dict]) -> str:
        if self.first_run.is_set():
            time.sleep(SLOW_SECONDS)
            if messages[-1]['content'] == self.failing_prompt:
                raise RuntimeError('permanent failure of this prompt in run 1')
        return needle_finder(messages)


def _settings(server: OpenAICompatServer, corpus_dir: Path, work_dir: Path, extra: dict[str, Any]) -> dict[str, Any]:
    return task_settings(
        server,
        corpus_dir,
        work_dir,
        model=MODEL,
        extra=extra,
        subsets=['english'],
        judge=judge_block(server, JUDGE),
        eval_batch_size=1,  # one request in flight: the kill lands between samples or inside one
        ignore_errors=True,
        generation_config={'retries': 1, 'retry_interval': 0},  # one attempt: the failure is final in run 1
        model_args={'max_retries': 0},
    )


def _rows(path: Path) -> list[dict]:
    """Complete JSON rows of a jsonl file (a row cut by the kill would be skipped, as EvalScope skips it)."""
    rows = []
    for line in path.read_text(encoding='utf-8').splitlines() if path.exists() else []:
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def _snapshot(work_dir: Path) -> dict[str, bytes]:
    # Everything but the log, which records the refused attempt too, and the work dir's lock and its holder.
    files = [
        path
        for path in work_dir.rglob('*')
        if path.is_file() and path.parent.name != 'logs' and path.name not in (LOCK_FILE, HOLDER_FILE)
    ]
    return {str(path.relative_to(work_dir)): path.read_bytes() for path in files}


def _cells(report) -> set[tuple[str, int, float]]:
    return {
        (subset.name, metric.identity.dimensions['context_length'], metric.identity.dimensions['depth_percent'])
        for metric in report.metrics
        if metric.identity.name == 'accuracy' and 'context_length' in metric.identity.dimensions
        for category in metric.categories
        for subset in category.subsets
    }


@dataclass
class Resumed:
    count: int
    predicted_1: set[int]  # sample indices with a prediction row when run 1 was killed
    reviewed_1: set[int]  # ... with a published review row
    computed_reviews_1: set[int]  # ... with a review row anywhere on disk (also EvalScope's unpublished temp file)
    run1_prompts: Counter  # sample index -> model requests in run 1
    run2_prompts: Counter
    run2_judge_requests: int
    final_predictions: list[dict]
    final_reviews: list[dict]
    report: Any
    refused: ValueError
    run3_requests: list
    untouched: bool  # run 3 left every file (but the log) as it was


@pytest.fixture(scope='module')
def resumed(fixture_corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Resumed:
    """Run 1 in a child, SIGKILLed mid-run; run 2 resumes with use_cache; run 3 changes the grid."""
    register()
    prompts = [
        sample.user_prompt
        for sample in iter_samples(parse_params(EXTRA), corpus_dir=fixture_corpus_dir, subsets=['english'])
    ]
    count = len(prompts)
    index_of = {prompt: index for index, prompt in enumerate(prompts)}
    assert len(index_of) == count  # every sample has its own prompt
    work_dir = tmp_path_factory.mktemp('resume') / 'run'
    predictions = work_dir / 'predictions' / MODEL / 'needle_haystack_english.jsonl'
    reviews = work_dir / 'reviews' / MODEL / 'needle_haystack_english.jsonl'
    model = SlowModel(prompts[FAILING])

    with OpenAICompatServer({MODEL: model, JUDGE: make_judge_responder(overlap_grader)}, max_seconds=120) as server:
        settings = _settings(server, fixture_corpus_dir, work_dir, EXTRA)

        def model_prompts(requests) -> Counter:
            return Counter(index_of[request.messages[-1]['content']] for request in requests if request.model == MODEL)

        # ---- run 1: a child process, killed once a few predictions are on disk and the failing prompt was sent ----
        child = subprocess.Popen(
            [sys.executable, '-c', CHILD, json.dumps(settings)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            deadline = time.monotonic() + 60
            while len(_rows(predictions)) < KILL_AFTER_ROWS or FAILING not in model_prompts(server.requests):
                assert child.poll() is None, child.stderr.read().decode(errors='replace')[-3000:]
                assert time.monotonic() < deadline, 'run 1 wrote no predictions within 60 s'
                time.sleep(0.02)
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=10)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=10)
            child.stderr.close()
        assert child.returncode == -signal.SIGKILL
        time.sleep(0.5)  # a request sent just before the kill is recorded by now
        run1 = server.requests
        predicted_1 = {row['index'] for row in _rows(predictions)}
        reviewed_1 = {row['index'] for row in _rows(reviews)}
        computed_1 = {row['index'] for path in reviews.parent.glob(reviews.name + '*') for row in _rows(path)}
        assert KILL_AFTER_ROWS <= len(predicted_1) < count, 'the kill must land mid-run'

        # ---- run 2: resume in this process; the failing prompt now succeeds ----
        model.first_run.clear()
        report = run_task(TaskConfig(**settings, use_cache=str(work_dir)))['needle_haystack']
        run2 = server.requests[len(run1) :]
        final_predictions, final_reviews = _rows(predictions), _rows(reviews)

        # ---- run 3: a changed grid with use_cache ----
        before = _snapshot(work_dir)
        changed = {**EXTRA, 'context_lengths': [600, 1200]}
        with pytest.raises(ValueError) as refused:
            run_task(TaskConfig(**_settings(server, fixture_corpus_dir, work_dir, changed), use_cache=str(work_dir)))
        run3 = server.requests[len(run1) + len(run2) :]
        untouched = _snapshot(work_dir) == before

    return Resumed(
        count=count,
        predicted_1=predicted_1,
        reviewed_1=reviewed_1,
        computed_reviews_1=computed_1,
        run1_prompts=model_prompts(run1),
        run2_prompts=model_prompts(run2),
        run2_judge_requests=sum(request.model == JUDGE for request in run2),
        final_predictions=final_predictions,
        final_reviews=final_reviews,
        report=report,
        refused=refused.value,
        run3_requests=run3,
        untouched=untouched,
    )


def test_finished_predictions_are_neither_lost_nor_recomputed(resumed: Resumed) -> None:
    assert max(resumed.run1_prompts.values()) == 1  # run 1 sent each prompt at most once
    # Run 2 sent exactly the samples without a prediction, once each; a finished one never again.
    assert resumed.run2_prompts == Counter(set(range(resumed.count)) - resumed.predicted_1)
    total = resumed.run1_prompts + resumed.run2_prompts
    assert all(total[index] == 1 for index in resumed.predicted_1)
    assert all(total[index] <= 2 for index in range(resumed.count))  # twice only if unfinished at the kill
    # Run 2 judged exactly the samples without a published review (review-only items for cached predictions).
    assert resumed.run2_judge_requests == resumed.count - len(resumed.reviewed_1)


def test_errored_sample_is_retried_and_scored(resumed: Resumed) -> None:
    assert FAILING not in resumed.predicted_1 and resumed.run1_prompts[FAILING] == 1  # errored, nothing written
    assert resumed.run2_prompts[FAILING] == 1
    retried = next(row for row in resumed.final_reviews if row['index'] == FAILING)
    assert retried['sample_score']['score']['value']['acc'] == 1.0
    summary = resumed.report.execution_summary
    assert (summary.succeeded, summary.errored, summary.incomplete) == (resumed.count, 0, False)


def test_final_outputs_have_one_row_per_sample_and_every_cell(resumed: Resumed) -> None:
    assert sorted(row['index'] for row in resumed.final_predictions) == list(range(resumed.count))
    assert sorted(row['index'] for row in resumed.final_reviews) == list(range(resumed.count))
    lengths, depths = EXTRA['context_lengths'], EXTRA['document_depth_percents']
    assert _cells(resumed.report) == {('english', length, float(depth)) for length in lengths for depth in depths}


def test_changed_grid_with_use_cache_is_refused_and_changes_nothing(resumed: Resumed) -> None:
    message = str(resumed.refused)
    assert 'does not match' in message and 'rerun_review' in message
    assert resumed.run3_requests == []
    assert resumed.untouched  # old predictions, reviews, report and identity as they were: nothing mixed


def test_finished_reviews_of_a_killed_first_run_are_not_recomputed(resumed: Resumed) -> None:
    assert resumed.computed_reviews_1  # reviews were computed and flushed before the kill
    assert resumed.run2_judge_requests == resumed.count - len(resumed.computed_reviews_1)


# ---- a resume never mixes inputs ------------------------------------------------------------------------------------

MIXED_EXTRA = {'context_lengths': [600], 'document_depth_percents': [0, 50, 100]}
ANSWERED_IN_RUN_1 = 2
OTHER_NEEDLE = 'The best thing to do in San Francisco is to ride a cable car at dawn.'


class FailsAfter:
    """needle_finder for the first ``answers`` requests, then every request fails (500) until ``healthy`` is set."""

    def __init__(self, answers: int) -> None:
        self.left = answers
        self.lock = threading.Lock()
        self.healthy = threading.Event()

    def __call__(self, messages: list[dict]) -> str:
        with self.lock:
            if not self.healthy.is_set():
                if self.left == 0:
                    raise RuntimeError('the model server is down')
                self.left -= 1
        return needle_finder(messages)


@dataclass
class Mixed:
    count: int
    predicted_1: set[int]
    corpus_refused: NiahConfigError
    corpus_refused_requests: int
    resume_requests: int
    final_indices: list[int]
    needle_refused: NiahConfigError
    needle_refused_requests: int
    buffer_refused: NiahConfigError
    buffer_refused_requests: int
    untouched: bool  # the refused rerun_review left predictions and reviews as they were


@pytest.fixture(scope='module')
def mixed(fixture_corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Mixed:
    """Run 1 answers two of three samples (then its server fails); the corpus is edited and the resume refused; the
    corpus restored, the resume finishes; then a changed needle with --rerun-review is refused."""
    register()
    corpus_dir = tmp_path_factory.mktemp('mixed-corpus')
    for path in fixture_corpus_dir.iterdir():
        (corpus_dir / path.name).write_bytes(path.read_bytes())
    corpus = corpus_dir / 'PaulGraham_Essays.txt'
    original = corpus.read_bytes()
    work_dir = tmp_path_factory.mktemp('mixed') / 'run'
    predictions = work_dir / 'predictions' / MODEL / 'needle_haystack_english.jsonl'
    model = FailsAfter(ANSWERED_IN_RUN_1)

    with OpenAICompatServer({MODEL: model}, max_seconds=120) as server:

        def settings(extra: dict[str, Any], **overrides: Any) -> TaskConfig:
            return TaskConfig(
                **task_settings(
                    server,
                    corpus_dir,
                    work_dir,
                    model=MODEL,
                    extra=extra,
                    subsets=['english'],
                    eval_batch_size=1,
                    ignore_errors=True,
                    generation_config={'retries': 1, 'retry_interval': 0},
                    model_args={'max_retries': 0},
                ),
                **overrides,
            )

        run_task(settings(MIXED_EXTRA))
        count = len(server.requests)
        predicted_1 = {row['index'] for row in _rows(predictions)}

        corpus.write_bytes(b'An edited first sentence. ' + original)
        before = len(server.requests)
        with pytest.raises(NiahConfigError) as corpus_refused:
            run_task(settings(MIXED_EXTRA, use_cache=str(work_dir)))
        corpus_refused_requests = len(server.requests) - before

        corpus.write_bytes(original)
        model.healthy.set()
        before = len(server.requests)
        run_task(settings(MIXED_EXTRA, use_cache=str(work_dir)))
        resume_requests = len(server.requests) - before
        final_indices = sorted(row['index'] for row in _rows(predictions))

        snapshot = _snapshot(work_dir)
        before = len(server.requests)
        with pytest.raises(NiahConfigError) as needle_refused:
            run_task(settings({**MIXED_EXTRA, 'needles': [OTHER_NEEDLE]}, use_cache=str(work_dir), rerun_review=True))
        needle_refused_requests = len(server.requests) - before
        with pytest.raises(NiahConfigError) as buffer_refused:  # in no sample's metadata: the prompt differs
            run_task(settings({**MIXED_EXTRA, 'start_buffer': 50}, use_cache=str(work_dir), rerun_review=True))
        buffer_refused_requests = len(server.requests) - before - needle_refused_requests
        untouched = {name: data for name, data in _snapshot(work_dir).items() if not name.startswith('configs')} == {
            name: data for name, data in snapshot.items() if not name.startswith('configs')
        }

    return Mixed(
        count=count,
        predicted_1=predicted_1,
        corpus_refused=corpus_refused.value,
        corpus_refused_requests=corpus_refused_requests,
        resume_requests=resume_requests,
        final_indices=final_indices,
        needle_refused=needle_refused.value,
        needle_refused_requests=needle_refused_requests,
        buffer_refused=buffer_refused.value,
        buffer_refused_requests=buffer_refused_requests,
        untouched=untouched,
    )


def test_an_edited_corpus_refuses_the_resume_before_any_request(mixed: Mixed, fixture_corpus_dir: Path) -> None:
    assert len(mixed.predicted_1) == ANSWERED_IN_RUN_1 < mixed.count  # run 1 stopped after some answers
    error = mixed.corpus_refused
    assert error.param == 'use_cache'
    old = hashlib.sha256((fixture_corpus_dir / 'PaulGraham_Essays.txt').read_bytes()).hexdigest()
    assert f'subset english: corpus_sha256 changed ({old[:12]}..' in error.detail
    assert f'(in {ANSWERED_IN_RUN_1} cached samples)' in error.detail
    assert 'new work dir' in error.detail and 'restore the inputs' in error.detail
    assert mixed.corpus_refused_requests == 0


def test_restored_inputs_resume_and_repeat_nothing(mixed: Mixed) -> None:
    assert mixed.resume_requests == mixed.count - ANSWERED_IN_RUN_1  # only the samples without an answer
    assert mixed.final_indices == list(range(mixed.count))


def test_a_changed_needle_refuses_rerun_review_too(mixed: Mixed) -> None:
    error = mixed.needle_refused
    assert error.param == 'use_cache'
    assert 'subset english: needles changed' in error.detail and OTHER_NEEDLE[:30] in error.detail
    assert '--rerun-review' in error.detail
    assert mixed.needle_refused_requests == 0
    assert mixed.untouched  # predictions and reviews as they were


def test_a_setting_that_moves_the_haystack_refuses_rerun_review(mixed: Mixed) -> None:
    error = mixed.buffer_refused
    assert error.param == 'use_cache'
    assert 'subset english: haystack changed (the prompt of cached sample 0' in error.detail
    assert 'start_buffer' in error.detail
    assert mixed.buffer_refused_requests == 0
