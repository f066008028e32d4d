"""The new tasks end to end through EvalScope's run_task against a real 127.0.0.1 OpenAI server: multi-needle
retrieval scored per needle, reasoning chains keyword-scored, needle-absent controls reported apart, repeats per
cell, prompts built at inference in a prefix-friendly order, other tools' parameter names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evalscope_niah.testing.openai_server import OpenAICompatServer
from tests.support.reports import cell_scores, overall_scores
from tests.support.tasks import task_config

pytest.importorskip('evalscope')

from evalscope import TaskConfig, run_task

from evalscope_niah.integration.adapter import PENDING_PROMPT
from evalscope_niah.making.tokenization import load_tokenizer
from evalscope_niah.reporting.outputs import CELLS_FILE, RESULTS_FILE, SUMMARY_FILE
from evalscope_niah.reporting.result_files import read_cells_csv, read_results

MODEL = 'mock-model'
LENGTHS = [700, 1400]
DEPTHS = [0, 50, 100]
NOT_SAID = 'The document does not mention any such number.'


def _haystack(messages: list[dict]) -> str:
    return messages[-1]['content'].split('<text>', 1)[1].split('</text>', 1)[0]


def all_numbers_model(messages: list[dict]) -> str:
    """Lists every 7-digit number of the text: perfect recall and precision on multi-needle retrieval."""
    numbers = re.findall(r'(?<!\d)\d{7}(?!\d)', _haystack(messages))
    return ', '.join(numbers) if numbers else NOT_SAID


def key_numbers_model(messages: list[dict]) -> str:
    """Reads the question's key and lists the numbers of the sentences about that key: a model that retrieves."""
    question = messages[-1]['content'].rsplit('</text>', 1)[1]
    key = re.search(r'magic numbers for (.+?) mentioned', question).group(1)
    numbers = re.findall(rf'magic numbers for {re.escape(key)} is: (\d{{7}})', _haystack(messages))
    return ', '.join(numbers) if numbers else NOT_SAID


def padding_model(messages: list[dict]) -> str:
    """Finds every number but pads the list with as many invented ones: full recall, half precision."""
    numbers = re.findall(r'(?<!\d)\d{7}(?!\d)', _haystack(messages))
    invented = [str(1000000 + 7 * index) for index in range(len(numbers))]
    return ', '.join(numbers + invented) if numbers else NOT_SAID


def chain_model(messages: list[dict]) -> str:
    """Answers a reasoning chain from the last link when all links are in the text."""
    text = _haystack(messages)
    if 'La Giostra' in text and 'named Jack' in text:
        return 'Chef Jack makes it.'
    return 'I cannot tell.'


def _task(server: OpenAICompatServer, corpus_dir: Path, work_dir: Path, extra: dict, **overrides) -> TaskConfig:
    # One request at a time: the order the server sees is the order we chose.
    options = {'subsets': ['english'], 'eval_batch_size': 1, 'generation_config': {'retries': 1, 'retry_interval': 0}}
    return task_config(server, corpus_dir, work_dir, model=MODEL, extra=extra, **{**options, **overrides})


@pytest.fixture(scope='module')
def multi_run(tmp_path_factory, fixture_corpus_dir):
    work_dir = tmp_path_factory.mktemp('multi')
    extra = {
        'task': 'multi_retrieval',
        'num_needles': 3,
        'context_lengths': LENGTHS,
        'document_depth_percents': DEPTHS,
        'absent_control': True,
        'num_repeats': 2,
    }
    with OpenAICompatServer({MODEL: key_numbers_model}) as server:
        report = run_task(_task(server, fixture_corpus_dir, work_dir, extra))['needle_haystack']
        requests = server.requests
    return {'report': report, 'requests': requests, 'work_dir': work_dir}


def test_multi_retrieval_scores_every_cell_and_counts_repeats(multi_run):
    scores = cell_scores(multi_run['report'])
    assert set(scores) == {('english', length, depth) for length in LENGTHS for depth in DEPTHS}
    assert set(scores.values()) == {1.0}
    overall = overall_scores(multi_run['report'])
    assert overall['accuracy'] == 1.0
    # Controls are kept out of accuracy and reported on their own.
    assert overall['absent_abstention_rate'] == 1.0
    assert overall['absent_guess_rate'] == 0.0
    assert overall['effective_context_length'] == max(LENGTHS)
    results = read_results(next(multi_run['work_dir'].rglob(RESULTS_FILE)))
    controls = [result for result in results if result.control]
    assert len(controls) == len(LENGTHS) * 2 and all(result.depth_percent is None for result in controls)
    needles = [result for result in results if not result.control]
    assert len(needles) == len(LENGTHS) * len(DEPTHS) * 2
    assert all(result.task_values == {'precision': 1.0} for result in needles)


def test_every_prompt_is_sent_once_built_and_exact(multi_run):
    requests = multi_run['requests']
    assert len(requests) == len(LENGTHS) * (len(DEPTHS) + 1) * 2
    tokenizer = load_tokenizer('Qwen/Qwen3-0.6B')
    lengths = []
    for request in requests:
        assert PENDING_PROMPT not in json.dumps(request.messages)
        lengths.append(tokenizer.count(tokenizer.render_chat(request.messages)))
    assert sorted(lengths) == sorted(length for length in LENGTHS for _ in range((len(DEPTHS) + 1) * 2))


def test_requests_follow_the_prefix_friendly_order(multi_run):
    """With one request at a time the server sees our order: haystack starts grouped, lengths ascending inside a
    group, each length opened by the prompt sharing the most with the others, the rest by rising depth."""
    predictions = multi_run['work_dir'] / 'predictions' / MODEL / 'needle_haystack_english.jsonl'
    rows = [json.loads(line) for line in predictions.read_text(encoding='utf-8').splitlines()]
    by_prompt = {row['messages'][-2]['content']: row['metadata'] for row in rows}
    sent = [by_prompt[request.messages[-1]['content']] for request in multi_run['requests']]
    starts = [metadata['start_token'] for metadata in sent]
    assert starts == sorted(starts, key=starts.index)  # each start's prompts are sent together
    assert len(set(starts)) == 2
    blocks: dict[tuple[int, int], list[dict]] = {}
    for metadata in sent:
        blocks.setdefault((metadata['start_token'], metadata['context_length']), []).append(metadata)
    for start in set(starts):
        lengths = [length for (block_start, length) in blocks if block_start == start]
        assert lengths == sorted(lengths)
    for block in blocks.values():
        # The deepest needle and the control both reach (about) the end of the haystack: either opens its length.
        assert block[0]['control'] or block[0]['depth_percent'] == max(DEPTHS)
        depths = [metadata['depth_percent'] for metadata in block[1:] if not metadata['control']]
        assert depths == sorted(depths)


def test_repeats_feed_each_cells_n_and_interval(multi_run):
    cells = read_cells_csv(next(multi_run['work_dir'].rglob(CELLS_FILE)))
    assert {(cell.context_length, cell.depth_percent) for cell in cells} == {
        (length, depth) for length in LENGTHS for depth in DEPTHS
    }
    # Two repeats per cell; every one scored 1.0, so the bootstrap interval is the point itself.
    assert all(cell.n == 2 and cell.ci_low == cell.ci_high == 1.0 for cell in cells)


def test_summary_file_holds_effective_length_and_controls(multi_run):
    summary = json.loads(next(multi_run['work_dir'].rglob(SUMMARY_FILE)).read_text(encoding='utf-8'))
    assert summary['effective_context_length']['english']['length'] == max(LENGTHS)
    assert len(summary['controls']) == len(LENGTHS)


def test_padding_answers_lose_precision(tmp_path, fixture_corpus_dir):
    extra = {
        'task': 'multi_retrieval',
        'num_needles': 2,
        'distractors': 0,
        'context_lengths': [800],
        'document_depth_percents': [50],
    }
    with OpenAICompatServer({MODEL: padding_model}) as server:
        report = run_task(_task(server, fixture_corpus_dir, tmp_path, extra))['needle_haystack']
    # recall 1 x precision 1/2.
    assert overall_scores(report)['accuracy'] == pytest.approx(1 / 2, abs=1e-4)


def test_listing_every_number_of_the_haystack_scores_low(tmp_path, fixture_corpus_dir):
    """With the default distractors (3 per needle) a number dump is wrong: recall 1 x precision 1/4."""
    extra = {'task': 'multi_retrieval', 'num_needles': 2, 'context_lengths': [1500], 'document_depth_percents': [50]}
    with OpenAICompatServer({MODEL: all_numbers_model}) as server:
        report = run_task(_task(server, fixture_corpus_dir, tmp_path, extra))['needle_haystack']
    assert overall_scores(report)['accuracy'] <= 0.3


def test_reasoning_chain_is_keyword_scored(tmp_path, fixture_corpus_dir):
    extra = {'task': 'reasoning', 'context_lengths': [1500], 'document_depth_percents': [0, 40], 'diff': 20}
    with OpenAICompatServer({MODEL: chain_model}) as server:
        report = run_task(_task(server, fixture_corpus_dir, tmp_path, extra))['needle_haystack']
    assert set(cell_scores(report).values()) == {1.0}


def test_inspect_and_cdme_names_run_through_evalscope(tmp_path, fixture_corpus_dir):
    """inspect_evals' names with our own (length_buffer, guide) are accepted in extra_params and drive the grid."""
    extra = {
        'min_context': 700,
        'max_context': 1400,
        'n_contexts': 2,
        'n_positions': 2,
        'n_needles': 2,
        'sample_method': 'sequential',
        'start_buffer': 50,
        'end_buffer': 50,
        'length_buffer': 40,
        'guide': True,
    }

    def bank_model(messages: list[dict]) -> str:
        return 'The document does not say.'

    with OpenAICompatServer({MODEL: bank_model}) as server:
        run_task(_task(server, fixture_corpus_dir, tmp_path, extra))
        requests = server.requests
    assert len(requests) == 2 * 2  # lengths x positions; the two needles spread over them, as inspect_evals does
    tokenizer = load_tokenizer('tiktoken:cl100k_base')  # inspect_evals' names count as inspect does
    counts = sorted(tokenizer.count(tokenizer.render_chat(request.messages)) for request in requests)
    assert counts == sorted([700 - 40] * 2 + [1400 - 40] * 2)
    questions = {request.messages[-1]['content'].split('<question>')[1] for request in requests}
    assert len(questions) == 2 and all('________' in question for question in questions)


def test_grid_request_order_sends_lengths_outer_depths_inner(tmp_path, fixture_corpus_dir):
    extra = {'context_lengths': LENGTHS, 'document_depth_percents': DEPTHS, 'request_order': 'grid'}
    with OpenAICompatServer({MODEL: chain_model}) as server:
        run_task(_task(server, fixture_corpus_dir, tmp_path, extra))
        requests = server.requests
    predictions = tmp_path / 'predictions' / MODEL / 'needle_haystack_english.jsonl'
    rows = [json.loads(line) for line in predictions.read_text(encoding='utf-8').splitlines()]
    by_prompt = {row['messages'][-2]['content']: row['metadata'] for row in rows}
    sent = [by_prompt[request.messages[-1]['content']] for request in requests]
    assert [(m['context_length'], m['depth_percent']) for m in sent] == [
        (length, depth) for length in LENGTHS for depth in DEPTHS
    ]
