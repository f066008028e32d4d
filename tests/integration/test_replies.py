"""No silent zeros: a reply that finished with only reasoning (reasoning_content, content null) or only a tool call is
flagged with why, left out of accuracy, counted per subset and cell, shown in the heatmap and explained on the console.

Whole runs through EvalScope's run_task against the test server (evalscope_niah.testing.openai_server), whose
responders answer as a vLLM or SGLang server with a reasoning or tool parser does.
"""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from evalscope_niah.reporting.outputs import CELLS_FILE
from evalscope_niah.reporting.result_files import read_cells_csv, read_results
from evalscope_niah.testing.openai_server import (
    OpenAICompatServer,
    Reply,
    make_judge_responder,
    needle_finder,
    overlap_grader,
    reasoning_only,
    tool_call_only,
)
from tests.support.reports import overall_scores
from tests.support.tasks import UNCHECKED_JUDGE, judge_block, task_config

pytest.importorskip('evalscope')

from evalscope import run_task
from evalscope.api.messages import ChatMessageAssistant, ContentReasoning, ContentText
from evalscope.api.model import ChatCompletionChoice, ModelOutput
from evalscope.api.tool import ToolCall, ToolFunction

from evalscope_niah.integration.replies import generate_checked, no_final_answer
from evalscope_niah.serving.reply_bounds import MAX_KEPT_REPLY_CHARS, kept_text

MODEL, JUDGE = 'parser-model', 'judge'
FAST = {'timeout': 5, 'retries': 1, 'retry_interval': 0}
# The needle_finder's answer to the fixture corpus' English needle holds this.
NEEDLE_WORDS = 'Dolores Park'


def _run(server: OpenAICompatServer, corpus_dir: Path, work_dir: Path, *, depths: list[int], **overrides: Any):
    extra = {
        'context_lengths': [600],
        'document_depth_percents': depths,
        **UNCHECKED_JUDGE,
        **overrides.pop('extra', {}),
    }
    options = {'subsets': ['english'], 'generation_config': dict(FAST), **overrides}
    return run_task(task_config(server, corpus_dir, work_dir, model=MODEL, extra=extra, **options))['needle_haystack']


def _reports(work_dir: Path) -> Path:
    return work_dir / 'reports' / MODEL


def _reviews(work_dir: Path) -> list[dict]:
    path = work_dir / 'reviews' / MODEL / 'needle_haystack_english.jsonl'
    return [json.loads(line) for line in path.read_text(encoding='utf-8').splitlines()]


@pytest.mark.parametrize('stream', [False, True], ids=['json', 'sse'])
@pytest.mark.parametrize(
    ('responder', 'reason'),
    [(reasoning_only(needle_finder), 'reasoning_only'), (tool_call_only(needle_finder), 'tool_call_only')],
    ids=['reasoning_only', 'tool_call_only'],
)
def test_a_reply_with_no_final_answer_is_flagged_not_scored_zero(
    tmp_path, fixture_corpus_dir, caplog, responder, reason, stream
):
    """Every reply holds the right needle, but not in its text: no 0 anywhere, every row flagged with the reason."""
    with OpenAICompatServer({MODEL: responder, JUDGE: make_judge_responder(overlap_grader)}) as server:
        with caplog.at_level(logging.WARNING, logger='evalscope_niah'):
            report = _run(
                server,
                fixture_corpus_dir,
                tmp_path,
                depths=[0, 100],
                judge=judge_block(server, JUDGE),
                generation_config={**FAST, 'stream': stream},
            )
        assert len(server.requests_for(MODEL)) == 2  # not retried: the server would route the answer away again
        assert [bool(r.body.get('stream')) for r in server.requests_for(MODEL)] == [stream, stream]
        assert server.requests_for(JUDGE) == []  # nothing to judge
    results = read_results(_reports(tmp_path) / 'needle_haystack_results.jsonl')
    assert [(r.accuracy, r.error, r.no_answer, r.budget_exhausted) for r in results] == [
        (None, None, reason, False)
    ] * 2
    if reason == 'reasoning_only':  # the needle is kept where the server put it
        assert all(NEEDLE_WORDS in (r.reasoning or '') for r in results)
    assert all(score['value'] == {} and score['status'] == 'excluded' for score in _scores(tmp_path))
    overall = overall_scores(report)
    assert 'accuracy' not in overall  # no score at all, rather than a 0
    assert (overall['no_answer_rate'], overall['inference_error_rate'], overall['budget_exhausted_rate']) == (
        1.0,
        0.0,
        0.0,
    )
    cells = read_cells_csv(_reports(tmp_path) / CELLS_FILE)
    assert [(c.n, c.accuracy, c.errors, c.no_answer) for c in cells] == [(0, None, 0, 1)] * 2
    with open(_reports(tmp_path) / CELLS_FILE, encoding='utf-8', newline='') as handle:
        assert [row['no_answer'] for row in csv.DictReader(handle)] == ['1', '1']
    [warning] = [r.getMessage() for r in caplog.records if 'had no final answer' in r.getMessage()]
    assert 'subset english: 2 of 2 replies (100%) had no final answer' in warning
    if reason == 'reasoning_only':
        assert '--reasoning-parser' in warning and 'reasoning_content' in warning
    else:
        assert "tool_choice 'none'" in warning and 'chat template' in warning
    [page] = (_reports(tmp_path)).glob('*english*.html')
    html = page.read_text(encoding='utf-8')
    assert 'no final answer (not scored): {}' in html  # the hover line; each cell's count fills it
    assert f'no final answer: only {"reasoning" if reason == "reasoning_only" else "a tool call"}' in html


def _scores(work_dir: Path) -> list[dict]:
    return [row['sample_score']['score'] for row in _reviews(work_dir)]


def test_a_mixed_server_scores_the_normal_replies_only(tmp_path, fixture_corpus_dir, caplog):
    """One reply in four goes to reasoning_content: accuracy is that of the three answered ones (all right), the
    fourth is counted; at 25 % the console explains it."""
    calls = iter(range(1000))

    def mixed(messages: list[dict]) -> str | Reply:
        answer = needle_finder(messages)
        return Reply(content=None, reasoning_content=answer) if next(calls) % 4 == 0 else answer

    with OpenAICompatServer({MODEL: mixed}) as server, caplog.at_level(logging.WARNING, logger='evalscope_niah'):
        report = _run(server, fixture_corpus_dir, tmp_path, depths=[0, 33, 66, 100])
    results = read_results(_reports(tmp_path) / 'needle_haystack_results.jsonl')
    assert sorted(r.accuracy for r in results if r.no_answer is None) == [1.0, 1.0, 1.0]
    assert [r.no_answer for r in results].count('reasoning_only') == 1
    overall = overall_scores(report)
    assert (overall['accuracy'], overall['no_answer_rate']) == (1.0, 0.25)
    assert any('1 of 4 replies (25%) had no final answer' in r.getMessage() for r in caplog.records)


def test_a_reply_with_text_beside_its_reasoning_is_scored(tmp_path, fixture_corpus_dir, caplog):
    """Reasoning in reasoning_content and the answer in content: an ordinary reply, scored, nothing flagged."""

    def parsed(messages: list[dict]) -> Reply:
        return Reply(content=needle_finder(messages), reasoning_content='Looking for the park.')

    with OpenAICompatServer({MODEL: parsed}) as server, caplog.at_level(logging.WARNING, logger='evalscope_niah'):
        report = _run(server, fixture_corpus_dir, tmp_path, depths=[50])
    [result] = read_results(_reports(tmp_path) / 'needle_haystack_results.jsonl')
    assert (result.accuracy, result.no_answer, result.reasoning) == (1.0, None, 'Looking for the park.')
    assert overall_scores(report)['no_answer_rate'] == 0.0
    assert not any('no final answer' in r.getMessage() for r in caplog.records)


# --------------------------------------------------------------------------------------------------------------------
# no_final_answer reads what EvalScope hands over
# --------------------------------------------------------------------------------------------------------------------


def _output(content: Any, *, tool_calls: list[ToolCall] | None = None) -> ModelOutput:
    message = ChatMessageAssistant(content=content, tool_calls=tool_calls)
    return ModelOutput(model='m', choices=[ChatCompletionChoice(message=message, stop_reason='stop')])


def test_no_final_answer_reasons():
    reasoning = _output([ContentReasoning(reasoning='It is Dolores Park.'), ContentText(text='')])
    assert no_final_answer(reasoning, '') == 'reasoning_only'
    think_block = _output('<think>It is Dolores Park.</think>\n')
    assert no_final_answer(think_block, '') == 'reasoning_only'
    call = ToolCall(id='c', function=ToolFunction(name='answer', arguments={'answer': 'Dolores Park'}))
    assert no_final_answer(_output('', tool_calls=[call]), '') == 'tool_call_only'
    assert no_final_answer(_output('Dolores Park.'), 'Dolores Park.') is None  # an answer
    assert no_final_answer(_output([ContentReasoning(reasoning='  '), ContentText(text='')]), '') is None
    assert no_final_answer(None, '') is None


def test_a_reply_enters_the_records_cut_head_and_tail() -> None:
    # Reasoning and text parts alike; the answer after 200k characters of thought is kept (the tail).
    thought, answer = 'hmm ' * 50_000, 'x' * 150_000 + ' The answer is Dolores Park.'
    output = generate_checked(
        lambda: _output([ContentReasoning(reasoning=thought), ContentText(text=answer)]), what='model'
    )
    reasoning, text = output.message.content
    assert reasoning.reasoning == kept_text(thought) and len(reasoning.reasoning) < MAX_KEPT_REPLY_CHARS + 100
    assert text.text.endswith(' The answer is Dolores Park.') and '…[cut: 150,028 chars, kept 131,072]…' in text.text
    short = generate_checked(lambda: _output('Dolores Park.'), what='model')
    assert short.completion == 'Dolores Park.'


def test_every_string_of_a_reply_is_made_writable_where_it_enters() -> None:
    # A lone surrogate (half of a JSON \ud83d\ude00 pair) anywhere EvalScope writes: text, reasoning, a tool call's
    # name and arguments (keys too), the model name. Each is U+FFFD after; the count is kept in the reply's metadata.
    call = ToolCall(id='c\ud83d', function=ToolFunction(name='f\udc00', arguments={'k\ud800': ['v\udfff', 1]}))
    reply = _output(
        [ContentReasoning(reasoning='think \ud83d'), ContentText(text='Dolores\ud83d Park.')], tool_calls=[call]
    )
    reply.model = 'm\ud83d'
    output = generate_checked(lambda: reply, what='model')
    json.dumps(output.model_dump(), ensure_ascii=False).encode('utf-8')  # what EvalScope's writer does: no error
    reasoning, text = output.message.content
    assert (reasoning.reasoning, text.text) == ('think \ufffd', 'Dolores\ufffd Park.')
    assert output.message.tool_calls[0].function.arguments == {'k\ufffd': ['v\ufffd', 1]}
    assert output.model == 'm\ufffd' and output.metadata == {'niah_replaced_surrogates': 7}
    clean = generate_checked(lambda: _output('Dolores Park. 🙂'), what='model')
    assert clean.completion == 'Dolores Park. 🙂' and not clean.metadata  # a whole pair is one character: untouched
