"""End to end through EvalScope: registration, run_task, the plain `evalscope eval` CLI, cache, judge, reports.

A real HTTP server on 127.0.0.1 speaks the OpenAI API (evalscope_niah.testing.openai_server): the model answers
from the prompt, the judge grades by overlap. Corpora are the small fixture texts, through `local_path`.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalscope_niah.testing.openai_server import OpenAICompatServer, make_judge_responder, overlap_grader
from tests.support.reports import cell_scores
from tests.support.tasks import UNCHECKED_JUDGE, judge_block, task_config

pytest.importorskip('evalscope')

from evalscope import TaskConfig, run_task
from evalscope.api.registry import BENCHMARK_REGISTRY

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.integration import register
from evalscope_niah.integration.adapter import ELIDED_HAYSTACK, NiahAdapter

LENGTHS = [600, 1200]
DEPTHS = [0, 50, 100]
MODEL, JUDGE = 'mock-model', 'mock-judge'
NOT_FOUND = 'The document does not say.'


@pytest.fixture(scope='module')
def corpus_dir(fixture_corpus_dir: Path) -> Path:
    return fixture_corpus_dir


def depth_sensitive_model(messages: list[dict]) -> str:
    """Finds the needle only in the first three quarters of the text, like a model with a weak end of context."""
    user = messages[-1]['content']
    text = user.split('<text>', 1)[1].split('</text>', 1)[0]
    for needle in ('The best thing to do in San Francisco', '小明最喜欢的实习的地点'):
        position = text.find(needle)
        if position >= 0:
            if position / len(text) >= 0.75:
                return NOT_FOUND
            end = text.find('.', position) if needle.startswith('The') else text.find('。', position)
            return text[position : end + 1]
    return NOT_FOUND


def _task(server: OpenAICompatServer, corpus_dir: Path, work_dir: Path, **overrides) -> TaskConfig:
    extra = {'context_lengths': LENGTHS, 'document_depth_percents': DEPTHS, **UNCHECKED_JUDGE}
    return task_config(
        server,
        corpus_dir,
        work_dir,
        model=MODEL,
        extra=extra,
        **{'judge': judge_block(server, JUDGE), 'generation_config': {'retries': 2, 'retry_interval': 0}, **overrides},
    )


@pytest.fixture(scope='module')
def judged_run(tmp_path_factory, corpus_dir):
    work_dir = tmp_path_factory.mktemp('judged')
    with OpenAICompatServer({MODEL: depth_sensitive_model, JUDGE: make_judge_responder(overlap_grader)}) as server:
        report = run_task(_task(server, corpus_dir, work_dir))['needle_haystack']
        requests = server.requests
        # Same directory again with use_cache: nothing may be recomputed.
        run_task(_task(server, corpus_dir, work_dir, use_cache=str(work_dir)))
        cached_requests = server.requests[len(requests) :]
    return {'report': report, 'work_dir': work_dir, 'requests': requests, 'cached_requests': cached_requests}


def test_register_replaces_builtin_and_is_idempotent():
    register()
    first = BENCHMARK_REGISTRY['needle_haystack']
    register()
    assert BENCHMARK_REGISTRY['needle_haystack'] is first
    assert BENCHMARK_REGISTRY['needle_haystack'].data_adapter is NiahAdapter
    # A full scan imports every built-in module; ours must survive it.
    assert 'gsm8k' in list(BENCHMARK_REGISTRY.keys())
    assert BENCHMARK_REGISTRY['needle_haystack'].data_adapter is NiahAdapter
    assert first.evaluation_version != 'v1.1'  # the built-in's: caches never mix
    assert first.description


def test_cell_scores_follow_the_model(judged_run):
    scores = cell_scores(judged_run['report'])
    assert len(scores) == 2 * len(LENGTHS) * len(DEPTHS)
    for (_, _, depth), score in scores.items():
        assert score == (0.0 if depth == 100 else 1.0)


def test_overall_and_agreement_metrics(judged_run):
    report = judged_run['report']
    overall = {
        metric.identity.name: metric.score
        for metric in report.metrics
        if metric.identity.dimensions == {'scope': 'overall'}
    }
    assert overall['accuracy'] == pytest.approx(2 / 3, abs=1e-4)  # EvalScope rounds to 4 places
    assert overall['judge_rule_agreement'] == 1.0
    assert overall['judge_rule_kappa'] == 1.0
    assert overall['judge_failures'] == 0.0
    assert report.judge_summary.failures == {}


def test_judge_sees_no_haystack(judged_run, corpus_dir):
    judge_requests = [request for request in judged_run['requests'] if request.model == JUDGE]
    assert len(judge_requests) == 2 * len(LENGTHS) * len(DEPTHS)
    corpus = (corpus_dir / 'PaulGraham_Essays.txt').read_text(encoding='utf-8')
    probe = re.sub(r'\s+', ' ', corpus[200:320])
    for request in judge_requests:
        text = ' '.join(message['content'] for message in request.messages)
        assert '<text>' not in text and probe not in re.sub(r'\s+', ' ', text)
        assert request.prompt_chars < 4000


def test_report_files_and_haystack_stored_once(judged_run, corpus_dir):
    work_dir = judged_run['work_dir']
    report_dir = work_dir / 'reports' / MODEL
    for subset in ('english', 'chinese'):
        png = report_dir / f'needle_haystack_heatmap_{subset}.png'
        assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
        assert (report_dir / f'needle_haystack_heatmap_{subset}.html').stat().st_size > 0
    with open(report_dir / 'needle_haystack_cells.csv', encoding='utf-8') as handle:
        rows = list(csv.DictReader(handle))
    assert {(row['subset'], int(row['context_length'])) for row in rows} == {
        (subset, length) for subset in ('english', 'chinese') for length in LENGTHS
    }
    # A distinctive corpus passage appears once per English sample in the whole output tree, never twice.
    corpus = (corpus_dir / 'PaulGraham_Essays.txt').read_text(encoding='utf-8')
    probe = json.dumps(corpus[40:160], ensure_ascii=False)[1:-1]
    occurrences = sum(
        path.read_text(encoding='utf-8', errors='replace').count(probe) for path in work_dir.rglob('*.jsonl')
    )
    assert occurrences == len(LENGTHS) * len(DEPTHS)
    # Each review's user message, read the way EvalScope's dashboard reads predictions (get_model_prediction ->
    # Messages -> user content): the instruction and the question are there, the haystack is not.
    from evalscope.report.data_frames import get_model_prediction

    frame = get_model_prediction(str(work_dir), MODEL, 'needle_haystack', 'english')
    assert len(frame) == len(LENGTHS) * len(DEPTHS)
    for messages in frame['Messages']:
        user = next(message['content'] for message in messages if message['role'] == 'user')
        user = user if isinstance(user, str) else json.dumps(user, ensure_ascii=False)
        assert ELIDED_HAYSTACK in user
        assert 'What is the best thing to do in San Francisco?' in user
        assert corpus[40:160] not in user


def test_use_cache_reruns_nothing(judged_run):
    assert judged_run['cached_requests'] == []


def test_missing_judge_fails_before_any_model_call(tmp_path, corpus_dir):
    with OpenAICompatServer({MODEL: depth_sensitive_model}) as server:
        with pytest.raises(NiahConfigError) as error:
            run_task(_task(server, corpus_dir, tmp_path, judge={'strategy': 'auto'}))
        assert server.requests_for(MODEL) == []
    assert error.value.param == 'judge'
    assert "'strategy': 'rule'" in str(error.value)


def test_plain_evalscope_cli_runs_ours_with_rule_scoring(tmp_path, corpus_dir):
    """`evalscope eval` in a fresh interpreter: the installed .pth hook must register our adapter."""
    evalscope = Path(sys.executable).with_name('evalscope')
    with OpenAICompatServer({MODEL: depth_sensitive_model}) as server:
        dataset_args = {
            'needle_haystack': {
                'local_path': str(corpus_dir),
                'subset_list': ['english'],
                'extra_params': {'context_lengths': [600], 'document_depth_percents': [0, 100]},
            }
        }
        command = [
            str(evalscope), 'eval', '--model', MODEL, '--api-url', server.base_url, '--api-key', 'x',
            '--datasets', 'needle_haystack', '--dataset-args', json.dumps(dataset_args),
            '--judge', '{"strategy": "rule"}', '--limit', '1', '--work-dir', str(tmp_path), '--no-timestamp',
        ]  # fmt: skip
        completed = subprocess.run(command, capture_output=True, text=True, timeout=300, env=os.environ.copy())
        assert completed.returncode == 0, completed.stderr[-3000:]
        assert len(server.requests_for(MODEL)) == 1  # --limit 1
    results = (tmp_path / 'reports' / MODEL / 'needle_haystack_results.jsonl').read_text(encoding='utf-8')
    assert json.loads(results.splitlines()[0])['judge_status'] == 'not_called'


def test_rerun_review_of_another_grid_never_mixes_cells(judged_run, corpus_dir, tmp_path):
    """--use-cache with --rerun-review passes EvalScope's identity check; our adapter must still refuse old cells
    (before any request: the cached rows' inputs are compared with this grid's samples when they are loaded)."""
    work_dir = tmp_path / 'copy'
    shutil.copytree(judged_run['work_dir'], work_dir)
    changed = {
        'local_path': str(corpus_dir),
        'extra_params': {'context_lengths': [600, 900], 'document_depth_percents': DEPTHS, **UNCHECKED_JUDGE},
    }
    with OpenAICompatServer({MODEL: depth_sensitive_model, JUDGE: make_judge_responder(overlap_grader)}) as server:
        task = _task(server, corpus_dir, work_dir, use_cache=str(work_dir), rerun_review=True)
        task.dataset_args = {'needle_haystack': changed}
        with pytest.raises(NiahConfigError, match=r'subset english: context_length changed \(1200 -> 900\)'):
            run_task(task)
        assert server.requests == []


def test_the_report_and_the_files_state_one_effective_length_per_subset(corpus_dir, tmp_path, monkeypatch) -> None:
    """One bootstrap per subset: the report's effective_context_length, which the summary file states again. Every
    computation of it is counted (each call goes on to the real one)."""
    from evalscope_niah.reporting import result_files, run_metrics, stats

    calls: list[str] = []

    def counted(results, *, subset, **options):
        calls.append(subset)
        return stats.effective_context_length(results, subset=subset, **options)

    for module in (result_files, run_metrics):  # the adapter's path, and the fallback of a caller without one
        monkeypatch.setattr(module, 'effective_context_length', counted)
    with OpenAICompatServer({MODEL: depth_sensitive_model}) as server:
        report = run_task(_task(server, corpus_dir, tmp_path, judge={'strategy': 'rule'}))['needle_haystack']
    assert sorted(calls) == ['chinese', 'english']
    reported = {
        subset.name: subset.score
        for metric in report.metrics
        if metric.identity.name == 'effective_context_length' and metric.identity.dimensions == {'scope': 'overall'}
        for category in metric.categories
        for subset in category.subsets
    }
    summary = json.loads(next(tmp_path.rglob('needle_haystack_summary.json')).read_text(encoding='utf-8'))
    written = {subset: found['length'] or 0 for subset, found in summary['effective_context_length'].items()}
    assert reported == written and set(written) == {'chinese', 'english'}
