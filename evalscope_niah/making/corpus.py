"""Haystack corpora: a local directory or the ModelScope dataset; per subset one file or a list joined in order.

A file is plain text, or JSON Lines (``.jsonl`` / ``.json-lines``: one record per line, the text in the subset's
``text_field``) as OpenCompass CDME's corpora are. Every file must lie inside the corpus directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..corpus_format import DATASET_ID, is_jsonl_file
from ..errors import NiahConfigError
from ..params.prompt_safety import check_sendable
from ..params.subsets import ResolvedSubset
from ..safe_files import contained_file, read_bounded

# Small corpora written for this project (not excerpts of the real ones): the offline demo and the tests use them.
DEMO_CORPUS_DIR = Path(__file__).parents[1] / 'data' / 'demo_corpus'
DEMO_CORPUS_FILES = {'english': 'english.txt', 'chinese': 'chinese.txt'}

# Largest corpus of one subset, all its files together. The real corpora are 0.6 and 2.2 MB; the longest context
# any model takes is a few MB of text, and the corpus is held in memory and tokenised whole when repeats need it.
MAX_CORPUS_BYTES = 64 * 1024 * 1024
# Share of C0 control characters (other than tab, line feed, carriage return) above which a file is not prose: a
# binary file that happens to be valid UTF-8 would otherwise become a haystack of noise.
MAX_CONTROL_CHAR_SHARE = 0.01
_CONTROL_CHARS = tuple(chr(code) for code in range(0x20) if chr(code) not in '\t\n\r')
# Files of a file list, and records of a JSON Lines file, are joined with a paragraph break.
PARAGRAPH_BREAK = '\n\n'
# Keys listed when a record lacks the text field: enough to spot the right one, bounded for hostile records.
_KEYS_SHOWN = 10
# JSON's names for what json.loads returns, for messages about a record.
_JSON_TYPES = {dict: 'object', list: 'array', str: 'string', int: 'number', float: 'number', bool: 'boolean'}


@dataclass(frozen=True)
class Corpus:
    """One subset's haystack text; ``sha256`` identifies it (the token-index cache and the results use it).

    For a single plain-text file ``sha256`` is the file's own hash; otherwise it covers every file's bytes in
    order and, for JSON Lines files, the text field read.
    """

    subset: str
    paths: tuple[Path, ...]
    text: str
    sha256: str
    # What follows an inserted needle when not the language's space: '\n' in a generated text of a sentence a line.
    needle_separator: str | None = None

    @property
    def path(self) -> Path:
        """The first (for a single-file corpus, the only) file."""
        return self.paths[0]


def resolve_corpus_dir(
    *, local_path: str | os.PathLike | None, files: Sequence[str], dataset_id: str = DATASET_ID
) -> Path:
    """The directory holding the corpus files: ``local_path`` when given, else a ModelScope snapshot.

    Only the files the chosen subsets need are fetched (``allow_file_pattern``), as EvalScope's built-in does.
    """
    if local_path:
        path = Path(local_path).expanduser()
        if not path.is_dir():
            raise NiahConfigError(
                'local_path', f'{str(path)!r} is not a directory; point it at a folder holding {", ".join(files)}'
            )
        return path
    try:
        from modelscope import dataset_snapshot_download
    except ImportError as exc:  # modelscope is a dependency; this only happens in a broken install
        raise NiahConfigError('local_path', f'modelscope is not importable ({exc}); pass local_path instead') from exc
    try:
        return Path(dataset_snapshot_download(dataset_id, allow_file_pattern=list(files)))
    except Exception as exc:  # network and hub errors come in many types
        raise NiahConfigError(
            'local_path',
            f'could not fetch {", ".join(files)} from the ModelScope dataset {dataset_id!r} ({type(exc).__name__}: '
            f'{exc}). Download the files once and point at them with '
            f"dataset_args={{'needle_haystack': {{'local_path': '/path/to/folder'}}}} "
            f'(CLI: --dataset-args \'{{"needle_haystack": {{"local_path": "/path/to/folder"}}}}\').',
        ) from exc


def corpus_folder(corpus_location: str, subsets: Sequence[ResolvedSubset]) -> Path:
    """The folder of a run's corpus as EvalScope names it (``local_path`` when given, else the dataset id):
    ``corpus_location`` itself when it is a folder, else the ModelScope dataset it names (``owner/name``) with only
    the files of ``subsets`` fetched; anything else is refused, naming ``local_path``."""
    files = [name for subset in subsets for name in subset.corpus_files]
    if os.path.isdir(corpus_location):
        return resolve_corpus_dir(local_path=corpus_location, files=files)
    if not _DATASET_ID.fullmatch(corpus_location):
        raise NiahConfigError(
            'local_path',
            f'{corpus_location!r} is not a directory; point local_path at the folder holding {", ".join(files)}',
        )
    return resolve_corpus_dir(local_path=None, files=files, dataset_id=corpus_location)


# A ModelScope dataset id, as EvalScope passes it in place of a local path.
_DATASET_ID = re.compile(r'[\w.-]+/[\w.-]+')


def load_corpus(directory: str | os.PathLike, subset: ResolvedSubset) -> Corpus:
    """Read one subset's corpus files and join them in order.

    Errors name the subset and the parameter (``corpus_file`` or ``file_list``): a file that is missing, outside
    ``directory`` (absolute path, ``..``, a symlink out), not UTF-8, mostly control characters, a bad JSON Lines
    record (with its line number), all files together over ``MAX_CORPUS_BYTES``, or no text at all.
    """
    directory = Path(directory)
    paths = [_contained_path(directory, name, subset) for name in subset.corpus_files]
    _check_total_size(paths, subset)
    texts: list[str] = []
    manifest: list[dict[str, str | None]] = []
    for name, path in zip(subset.corpus_files, paths, strict=True):
        raw = _read_bounded(path, subset)
        where = f'corpus file {name!r} of subset {subset.name!r}'
        jsonl = is_jsonl_file(name)
        text = _decode(raw, where=where, param=subset.corpus_param)
        if jsonl:
            text = _jsonl_text(text, subset=subset, where=where)
        _check_control_chars(text, where=where, param=subset.corpus_param)
        texts.append(text)
        manifest.append({'sha256': hashlib.sha256(raw).hexdigest(), 'text_field': subset.text_field if jsonl else None})
    # Line endings are normalised so the same text gives the same samples on every platform.
    text = PARAGRAPH_BREAK.join(texts)
    if '\r' in text:  # each replace copies the text: 100 MB for a 50 MB corpus outside Latin-1
        text = text.replace('\r\n', '\n').replace('\r', '\n')
    if not text or text.isspace():  # not text.strip(): that copies the text
        raise NiahConfigError(
            subset.corpus_param, f'the corpus of subset {subset.name!r} ({subset.corpus_file}) is empty'
        )
    if len(manifest) == 1 and manifest[0]['text_field'] is None:
        sha256 = manifest[0]['sha256']  # a plain file is known by its own hash (sha256sum gives the same)
    else:
        identity = {'join': PARAGRAPH_BREAK, 'files': manifest}
        sha256 = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    return Corpus(subset=subset.name, paths=tuple(paths), text=text, sha256=str(sha256))


def generated_corpus(subset: ResolvedSubset, *, text: str, needle_separator: str | None = None) -> Corpus:
    """A haystack a task generated (RULER's noise or needle lines) in place of the subset's files: known by its
    text's hash in the token cache (and by the name the subset's corpus_file then carries in results)."""
    sha256 = hashlib.sha256(text.encode()).hexdigest()
    return Corpus(subset=subset.name, paths=(), text=text, sha256=sha256, needle_separator=needle_separator)


def _contained_path(directory: Path, name: str, subset: ResolvedSubset) -> Path:
    return contained_file(
        directory, name, param=subset.corpus_param, where=f'corpus file {name!r} of subset {subset.name!r}'
    )


def _check_total_size(paths: Sequence[Path], subset: ResolvedSubset) -> None:
    total = sum(path.stat().st_size for path in paths)
    if total > MAX_CORPUS_BYTES:
        raise NiahConfigError(subset.corpus_param, _too_large(subset, total))


def _too_large(subset: ResolvedSubset, size: int) -> str:
    return (
        f'the corpus of subset {subset.name!r} ({subset.corpus_file}) is {size / 2**20:.1f} MiB or more; the cap is '
        f'{MAX_CORPUS_BYTES // 2**20} MiB per subset. Use a part of it (a haystack never needs more than a few MB)'
    )


def _read_bounded(path: Path, subset: ResolvedSubset) -> bytes:
    # Read no more than the cap allows even if the file grew since it was measured.
    try:
        return read_bounded(path, limit=MAX_CORPUS_BYTES, param=subset.corpus_param, where=str(path))
    except NiahConfigError:
        raise NiahConfigError(subset.corpus_param, _too_large(subset, MAX_CORPUS_BYTES + 1)) from None


def _decode(raw: bytes, *, where: str, param: str) -> str:
    try:
        return raw.decode('utf-8-sig')
    except UnicodeDecodeError as exc:
        raise NiahConfigError(param, f'{where} is not valid UTF-8 (byte {exc.start}); re-encode it as UTF-8') from None


def _check_control_chars(text: str, *, where: str, param: str) -> None:
    count = sum(text.count(char) for char in _CONTROL_CHARS)
    if text and count > MAX_CONTROL_CHAR_SHARE * len(text):
        raise NiahConfigError(
            param,
            f'{where} is {count / len(text):.0%} control characters (more than {MAX_CONTROL_CHAR_SHARE:.0%}): '
            'it is not text. Use a plain-text or JSON Lines file of prose',
        )


def _jsonl_text(text: str, *, subset: ResolvedSubset, where: str) -> str:
    """The ``text_field`` of every record, in file order, joined with a paragraph break; blank lines skipped."""
    field = subset.text_field
    param = subset.corpus_param
    parts: list[str] = []
    for number, line in enumerate(text.split('\n'), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as exc:  # ValueError covers JSONDecodeError and oversized numbers
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
            raise NiahConfigError(param, f'{where}, line {number}: not a JSON record ({reason})') from None
        if not isinstance(record, dict):
            raise NiahConfigError(
                param, f'{where}, line {number}: a JSON {_json_type(record)}, not an object with a {field!r} field'
            )
        if field not in record:
            keys = ', '.join(repr(key) for key in list(record)[:_KEYS_SHOWN])
            raise NiahConfigError(
                param,
                f'{where}, line {number}: the record has no {field!r} field (its fields: {keys or "none"}); '
                f'set subsets.{subset.name}.text_field to the field holding the text',
            )
        value = record[field]
        if not isinstance(value, str):
            raise NiahConfigError(
                param, f'{where}, line {number}: field {field!r} is a JSON {_json_type(value)}, not a string'
            )
        # JSON escapes can spell half a surrogate pair ('\\ud800'), which no request can carry.
        check_sendable(param, value, what=f'{where}, line {number}: field {field!r}')
        parts.append(value)
    if not parts:
        raise NiahConfigError(param, f'{where} holds no records')
    return PARAGRAPH_BREAK.join(parts)


def _json_type(value: object) -> str:
    return _JSON_TYPES.get(type(value), 'null')
