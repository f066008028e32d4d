"""Haystack corpora: a local directory or the ModelScope dataset, one text file per subset."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import NiahConfigError
from .params import DATASET_ID, ResolvedSubset

# Small corpora written for this project (not excerpts of the real ones): the offline demo and the tests use them.
DEMO_CORPUS_DIR = Path(__file__).parent / 'data' / 'demo_corpus'
DEMO_CORPUS_FILES = {'english': 'english.txt', 'chinese': 'chinese.txt'}


@dataclass(frozen=True)
class Corpus:
    subset: str
    path: Path
    text: str
    sha256: str


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


def load_corpus(directory: str | os.PathLike, subset: ResolvedSubset) -> Corpus:
    """Read one subset's corpus file; missing, empty or non-UTF-8 files are errors naming file and subset."""
    directory = Path(directory)
    path = directory / subset.corpus_file
    where = f'corpus file {subset.corpus_file!r} of subset {subset.name!r}'
    if not path.is_file():
        present = sorted(p.name for p in directory.iterdir() if p.is_file()) if directory.is_dir() else []
        raise NiahConfigError(
            f'subsets.{subset.name}.corpus_file', f'{where} not found in {directory} (found: {present})'
        )
    raw = path.read_bytes()
    try:
        text = raw.decode('utf-8-sig')
    except UnicodeDecodeError as exc:
        raise NiahConfigError(
            f'subsets.{subset.name}.corpus_file',
            f'{where} is not valid UTF-8 (byte {exc.start}); re-encode it as UTF-8',
        ) from None
    # Normalise line endings so the same text gives the same samples on every platform.
    if '\r' in text:  # each replace copies the text: 100 MB for a 50 MB corpus outside Latin-1
        text = text.replace('\r\n', '\n').replace('\r', '\n')
    if not text or text.isspace():  # not text.strip(): that copies the text
        raise NiahConfigError(f'subsets.{subset.name}.corpus_file', f'{where} is empty')
    return Corpus(subset=subset.name, path=path, text=text, sha256=hashlib.sha256(raw).hexdigest())
