"""The judge proves itself before the run: calibration answers from each subset's own needle, graded by the real
judge endpoint (the test server), decide whether the run goes on, stops, or is scored by rule and says so."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip('evalscope')

from evalscope import TaskConfig, run_task

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.reporting.outputs import JUDGE_CHECK_FILE, RESULTS_FILE, RULE_FALLBACK_NOTE
from evalscope_niah.reporting.result_files import read_results
from evalscope_niah.testing.openai_server import OpenAICompatServer, make_judge_responder, parse_judge_prompt
from tests.support.tasks import judge_block, task_settings

MODEL, JUDGE = 'mock-model', 'mock-judge'
EXTRA = {'context_lengths': [600], 'document_depth_percents': [0, 100]}
EN_RIGHT = 'Eat a sandwich and sit in Dolores Park on a sunny day.'
CJK = re.compile(r'[\u4e00-\u9fff]')


def wrong_model(messages: list[dict]) -> str:
    return 'Visit the Golden Gate Bridge.' if 'San Francisco' in messages[-1]['content'] else '北京大学。'


def right_model(messages: list[dict]) -> str:
    return EN_RIGHT if 'San Francisco' in messages[-1]['content'] else '上海人工智能实验室。'


def always(rating: int):
    return make_judge_responder(lambda question, reference, answer: rating)


def careful_grader(question: str, reference: str, answer: str) -> int:
    """A judge that reads like a careful person: the key fact, stated plainly, without hedging or negation."""
    from evalscope_niah.metadata import SampleMeta
    from evalscope_niah.scoring import PromptText
    from evalscope_niah.tasks import score_answer

    key = 'eat a sandwich and sit in Dolores Park' if 'San Francisco' in question else '上海人工智能实验室'
    language = 'en' if 'San Francisco' in question else 'zh'
    meta = SampleMeta(
        subset='s', language=language, task='single', context_length=1, depth_percent=0.0, repeat=0, pick=0,
        needles=(reference,), question=question, reference_answer=reference, answer_keys=(key,), start_token=0,
        divergence_token=0,
    )  # fmt: skip
    # The grader sees no haystack; like a person it takes unrelated text around the fact for pasted context: the
    # answer itself stands in for the prompt, so whatever it holds beyond the needle and question counts as copied.
    score = score_answer(answer, meta, prompt=PromptText(shown=answer))
    return 10 if score.accuracy >= 0.9 and score.certain else 1


def _run(server: OpenAICompatServer, work_dir: Path, corpus_dir: Path, **extra) -> dict:
    settings = task_settings(
        server, corpus_dir, work_dir, model=MODEL, extra={**EXTRA, **extra}, judge=judge_block(server, JUDGE)
    )
    return run_task(TaskConfig(**settings))


@pytest.mark.parametrize(
    ('model', 'rating'), [(wrong_model, 10), (right_model, 1)], ids=['always-10 judge', 'always-1 judge']
)
def test_a_judge_that_always_rates_the_same_stops_the_run_before_the_model(
    model, rating: int, fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    with OpenAICompatServer({MODEL: model, JUDGE: always(rating)}) as server:
        with pytest.raises(NiahConfigError) as error:
            _run(server, tmp_path, fixture_corpus_dir)
        assert server.requests_for(MODEL) == []  # the model under test was never called
        assert 10 <= len(server.requests_for(JUDGE)) <= 20  # one calibration set per subset
    message = str(error.value)
    assert error.value.param == 'judge_check'
    assert f'judge {JUDGE}' in message and "judge_check='fallback'" in message and "'strategy': 'rule'" in message
    assert 'TaskConfig(' in message and '--judge' not in message  # the ways out as the run was written: Python
    # The check's file is written on a stop as on a pass: the failing subset with what the judge said.
    check = json.loads((tmp_path / 'reports' / MODEL / JUDGE_CHECK_FILE).read_text(encoding='utf-8'))
    assert check['english']['qualified'] is False and check['english']['items']


def test_fallback_scores_by_rule_and_says_so_everywhere(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    with OpenAICompatServer({MODEL: wrong_model, JUDGE: always(10)}) as server:
        report = _run(server, tmp_path, fixture_corpus_dir, judge_check='fallback')['needle_haystack']
    accuracy = next(
        m.score for m in report.metrics if m.identity.name == 'accuracy' and 'scope' in m.identity.dimensions
    )
    assert accuracy <= 0.3  # the always-10 judge cannot lift a wrong model
    report_dir = tmp_path / 'reports' / MODEL
    results = read_results(report_dir / RESULTS_FILE)
    assert {result.scoring for result in results} == {'rule_fallback'}
    check = json.loads((report_dir / JUDGE_CHECK_FILE).read_text(encoding='utf-8'))
    assert check['english']['qualified'] is False and check['chinese']['qualified'] is False
    html = (report_dir / 'needle_haystack_heatmap_english.html').read_text(encoding='utf-8')
    assert RULE_FALLBACK_NOTE in html


def test_a_careful_judge_qualifies_and_grades(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    with OpenAICompatServer({MODEL: right_model, JUDGE: make_judge_responder(careful_grader)}) as server:
        report = _run(server, tmp_path, fixture_corpus_dir)['needle_haystack']
        judge_prompts = [request.messages[-1]['content'] for request in server.requests_for(JUDGE)]
    results = read_results(tmp_path / 'reports' / MODEL / RESULTS_FILE)
    assert {result.scoring for result in results} == {'judge'}
    assert all(result.accuracy == 1.0 for result in results)
    check = json.loads((tmp_path / 'reports' / MODEL / JUDGE_CHECK_FILE).read_text(encoding='utf-8'))
    assert check['english']['qualified'] and check['english']['decided_right'] == 10
    # Calibration and grading use the same hardened prompt: the answer fenced as data.
    assert all(parse_judge_prompt(prompt) is not None and '<answer>' in prompt for prompt in judge_prompts)
    assert report is not None


def _closed_port_url() -> str:
    """A loopback URL nothing listens at: a port the system gave out, closed again (connection refused)."""
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    return f'http://127.0.0.1:{port}/v1'


def _failing_judge(kind: str, server: OpenAICompatServer) -> tuple[dict, str]:
    """The judge block of a judge that fails ``kind``, at its default retries, and the URL it names."""
    block = judge_block(server, JUDGE)
    model = block['models'][0]
    if kind == 'unreachable':
        model['api_url'] = _closed_port_url()
    elif kind == 'model_not_found':
        model['model_id'] = 'no-such-judge'
    return block, model['api_url']


# What each failure's message must name besides the URL: the cause and the fix.
FAILURES = {
    'unreachable': ('judge server unreachable', 'connection refused', "judge's api_url"),
    'rejected_key': ('judge server rejected the API key', 'HTTP 401', "judge's api_key"),
    'model_not_found': ('judge model not found', 'HTTP 404', "judge's model_id"),
}


@pytest.mark.parametrize('kind', sorted(FAILURES))
def test_a_judge_that_cannot_be_asked_stops_the_run_naming_the_cause_url_and_fix(
    kind: str, fixture_corpus_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A refused connection, a rejected key (401) and an unknown model (404) are named as such, with the URL and
    the fix, in the error and the console line; the check stops at its first call (no ten calls x five retries)."""
    with OpenAICompatServer({MODEL: right_model, JUDGE: always(10)}, api_keys={JUDGE: 'judge-key'}) as server:
        judge, url = _failing_judge(kind, server)
        if kind != 'rejected_key':
            judge['models'][0]['api_key'] = 'judge-key'
        settings = task_settings(server, fixture_corpus_dir, tmp_path, model=MODEL, extra=EXTRA, judge=judge)
        with caplog.at_level(logging.WARNING, logger='evalscope_niah'), pytest.raises(NiahConfigError) as error:
            run_task(TaskConfig(**settings))
        assert server.requests_for(MODEL) == []
        judge_requests = [request for request in server.requests if request.model != MODEL]
    message = str(error.value)
    assert error.value.param == 'judge_check' and 'unparsable' not in message
    what, cause, fix = FAILURES[kind]
    assert what in message and url in message and cause in message and fix in message, message
    assert 'judge-key' not in message and "judge_check='fallback'" in message
    check = json.loads((tmp_path / 'reports' / MODEL / JUDGE_CHECK_FILE).read_text(encoding='utf-8'))
    assert check['english']['qualified'] is False and check['english']['failure']['kind'] == kind
    console = [record.getMessage() for record in caplog.records if 'judge check, subset' in record.getMessage()]
    assert console and what in console[0] and url in console[0] and fix in console[0]
    # 401 and 404 are not retried, and the check asks nothing after the first failure.
    assert len(judge_requests) == (0 if kind == 'unreachable' else 1)


@pytest.mark.parametrize('kind', ['unreachable', 'rejected_key'])
def test_fallback_names_the_failure_in_the_judge_check_json(
    kind: str, fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    with OpenAICompatServer({MODEL: right_model, JUDGE: always(10)}, api_keys={JUDGE: 'judge-key'}) as server:
        judge, url = _failing_judge(kind, server)
        settings = task_settings(
            server, fixture_corpus_dir, tmp_path, model=MODEL, extra={**EXTRA, 'judge_check': 'fallback'}, judge=judge
        )
        run_task(TaskConfig(**settings))
        # Both subsets' checks: the judge that failed on the first is not asked again for the second.
        assert len([request for request in server.requests if request.model == JUDGE]) <= 1
    report_dir = tmp_path / 'reports' / MODEL
    check = json.loads((report_dir / JUDGE_CHECK_FILE).read_text(encoding='utf-8'))
    what, cause, fix = FAILURES[kind]
    for subset in ('english', 'chinese'):
        failure = check[subset]['failure']
        assert check[subset]['qualified'] is False and check[subset]['unparsable'] == 0
        assert (
            failure['kind'] == kind and failure['url'] == url and cause in failure['detail'] and fix in failure['fix']
        )
        assert what in failure['text']
    results = read_results(report_dir / RESULTS_FILE)
    assert {result.scoring for result in results} == {'rule_fallback'}
    assert all(result.accuracy == 1.0 for result in results if not result.control)


# EvalScope's documented example (docs/*/third_party/needle_haystack.md): one English needle and question set at
# the top level, so the chinese subset asks it too.
EVALSCOPE_EXAMPLE = {
    'retrieval_question': 'What is the best thing to do in San Francisco?',
    'needles': ['\nThe best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.\n'],
}


def test_evalscopes_documented_example_qualifies_a_careful_judge_in_both_subsets(
    fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    """The English needle in the chinese subset is English: the calibration asks for its English fact (never a
    fragment like 'ay'), a careful judge passes, and the rules score an English right answer right there too."""
    with OpenAICompatServer({MODEL: right_model, JUDGE: make_judge_responder(careful_grader)}) as server:
        _run(server, tmp_path / 'judge', fixture_corpus_dir, **EVALSCOPE_EXAMPLE)
        asked = [parse_judge_prompt(request.messages[-1]['content']) for request in server.requests_for(JUDGE)]
    check = json.loads((tmp_path / 'judge' / 'reports' / MODEL / JUDGE_CHECK_FILE).read_text(encoding='utf-8'))
    for subset in ('english', 'chinese'):
        assert check[subset]['qualified'] and check[subset]['decided_right'] == 10, subset
        short = next(item for item in check[subset]['items'] if item['category'] == 'short_answer')
        assert short['answer'] == 'eat a sandwich and sit in Dolores Park on a sunny day'
        assert all(not CJK.search(item['answer']) for item in check[subset]['items'])
    assert all(fields is not None and not CJK.search(fields['answer']) for fields in asked)
    results = read_results(tmp_path / 'judge' / 'reports' / MODEL / RESULTS_FILE)
    assert {result.subset for result in results} == {'english', 'chinese'}
    assert all(result.scoring == 'judge' and result.accuracy == 1.0 for result in results)

    # The rules alone, with the needle's language: right in both subsets, the wrong answer wrong.
    for model, expected in ((right_model, 1.0), (wrong_model, 0.0)):
        work_dir = tmp_path / f'rule-{expected}'
        with OpenAICompatServer({MODEL: model}) as server:
            settings = task_settings(
                server, fixture_corpus_dir, work_dir, model=MODEL, extra={**EXTRA, **EVALSCOPE_EXAMPLE}
            )
            run_task(TaskConfig(**settings))
        results = read_results(work_dir / 'reports' / MODEL / RESULTS_FILE)
        by_subset = {(result.subset, result.accuracy) for result in results if not result.control}
        assert by_subset == {('english', expected), ('chinese', expected)}


# ---- the check follows the task: EvalScope's documented multi-needle example ------------------------------------

# A needle sentence, also where a Chinese haystack runs into it without a space.
_INGREDIENT = re.compile(
    r'([A-Z][a-z]*(?: [a-z]+)?) (?:is|are) one of the secret ingredients needed to build the perfect pizza\.'
)


def _pizza_model(messages: list[dict]) -> str:
    """A model that finds every pizza needle in its prompt and names them all."""
    return ' '.join(match.group().strip() for match in _INGREDIENT.finditer(messages[-1]['content']))


def _pizza_grader(*, partial_is_right: bool):
    """A judge that grades against the whole reference (the three needles): every ingredient they name stated plainly
    is right (10; the needles quoted back, or the short answer naming the three), some of them is part of the answer
    (3, or 10 for the judge that calls it right), anything else 1."""

    def grade(question: str, reference: str, answer: str) -> int:
        sentences = [match.group().strip() for match in _INGREDIENT.finditer(reference)]
        names = [match.group(1).lower() for match in _INGREDIENT.finditer(reference)]
        lowered = answer.lower()
        if any(cue in lowered for cue in ('grader', 'reference:', ' not ', 'wait', 'either', "don't")):
            return 1
        if len(answer) > len(' '.join(sentences)) + 60:  # pasted text around what was asked
            return 1
        found = sum(name in lowered for name in names)
        if found == len(names):
            return 10
        return (10 if partial_is_right else 3) if found else 1

    return grade


def _pizza_run(server: OpenAICompatServer, work_dir: Path, corpus_dir: Path) -> dict:
    from tests.support.peer_configs import EVALSCOPE_MULTI

    settings = task_settings(
        server, corpus_dir, work_dir, model=MODEL, extra=dict(EVALSCOPE_MULTI), judge=judge_block(server, JUDGE)
    )
    return run_task(TaskConfig(**settings))


def test_evalscope_multi_needle_example_runs_with_a_judge_that_grades_the_whole_reference(
    fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    grader = make_judge_responder(_pizza_grader(partial_is_right=False))
    with OpenAICompatServer({MODEL: _pizza_model, JUDGE: grader}) as server:
        _pizza_run(server, tmp_path, fixture_corpus_dir)
        asked = len(server.requests_for(MODEL))
    assert asked == 2 * 10 * 2  # its grid: 2 lengths x 10 depths (document_depth_percent_intervals) x 2 subsets
    check = json.loads((tmp_path / 'reports' / MODEL / JUDGE_CHECK_FILE).read_text(encoding='utf-8'))
    for subset in ('english', 'chinese'):
        assert check[subset]['qualified'], check[subset]
        items = {item['category']: item for item in check[subset]['items']}
        # One of the three needles alone is part credit by the task's rule: the judge must not call it right.
        assert items['one_of_many']['partial'] and items['one_of_many']['rating'] == 3
        assert items['short_answer']['rating'] == 10  # the right short answer names all three
    results = read_results(tmp_path / 'reports' / MODEL / RESULTS_FILE)
    assert {result.scoring for result in results} == {'judge'}
    assert all(result.accuracy == 1.0 for result in results)


def test_a_judge_that_calls_one_of_three_needles_right_fails_the_check(fixture_corpus_dir: Path, tmp_path: Path):
    grader = make_judge_responder(_pizza_grader(partial_is_right=True))
    with OpenAICompatServer({MODEL: _pizza_model, JUDGE: grader}) as server:
        with pytest.raises(NiahConfigError) as error:
            _pizza_run(server, tmp_path, fixture_corpus_dir)
        assert server.requests_for(MODEL) == []
    assert error.value.param == 'judge_check'
    assert 'one_of_many (partial answer' in str(error.value) and 'part credit' in str(error.value)


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize('kind', ['misgrading', 'unreachable'])
def test_a_stop_under_evalscope_eval_is_one_message_in_cli_syntax_and_writes_the_check_file(
    kind: str, fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    """Plain `evalscope eval` (a real process): the stop is one readable message, no traceback, whose ways out are
    command-line flags; the judge check's file is there for the subset that failed."""
    with OpenAICompatServer({MODEL: wrong_model, JUDGE: always(10)}) as server:
        judge = judge_block(server, JUDGE)
        if kind == 'unreachable':
            judge['models'][0]['api_url'] = _closed_port_url()
        dataset = {'local_path': str(fixture_corpus_dir), 'extra_params': EXTRA}
        command = [
            str(Path(sys.executable).with_name('evalscope')), 'eval', '--model', MODEL, '--api-url', server.base_url,
            '--api-key', 'x', '--eval-type', 'openai_api', '--datasets', 'needle_haystack',
            '--dataset-args', json.dumps({'needle_haystack': dataset}), '--judge', json.dumps(judge),
            '--work-dir', str(tmp_path), '--no-timestamp',
        ]  # fmt: skip
        env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(REPO), os.environ.get('PYTHONPATH', '')])}
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert server.requests_for(MODEL) == []
    output = done.stdout + done.stderr
    assert done.returncode == 2 and 'Traceback' not in output, output
    [line] = [line for line in output.splitlines() if line.startswith('evalscope-niah: error: judge_check')]
    assert f'judge {JUDGE}' in line and '--judge \'{"strategy": "rule"}\'' in line, line
    assert '"judge_check": "fallback"' in line and 'TaskConfig(' not in line, line
    check = json.loads((tmp_path / 'reports' / MODEL / JUDGE_CHECK_FILE).read_text(encoding='utf-8'))
    assert check['english']['qualified'] is False
