"""Corpus loading: the fixture corpora, hashes, line endings, and the errors for unusable files and folders."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalscope_niah.corpus import load_corpus, resolve_corpus_dir
from evalscope_niah.errors import NiahConfigError
from evalscope_niah.params import DATASET_ID, parse_params

CORPUS_FILES = ['PaulGraham_Essays.txt', 'Journey_to_the_West.txt']


def english(corpus_file: str = 'PaulGraham_Essays.txt'):
    return parse_params({'subsets': {'english': {'corpus_file': corpus_file}}}).resolve_subset('english')


@pytest.mark.parametrize(('subset', 'file_name'), [('english', CORPUS_FILES[0]), ('chinese', CORPUS_FILES[1])])
def test_load_fixture_corpus(fixture_corpus_dir: Path, subset: str, file_name: str) -> None:
    resolved = parse_params({}).resolve_subset(subset)
    corpus = load_corpus(fixture_corpus_dir, resolved)
    raw = (fixture_corpus_dir / file_name).read_bytes()
    assert corpus.subset == subset
    assert corpus.path == fixture_corpus_dir / file_name
    assert corpus.text == raw.decode('utf-8')
    assert corpus.sha256 == hashlib.sha256(raw).hexdigest()


def test_fixture_corpora_are_usable_test_data(fixture_corpus_dir: Path) -> None:
    """The fixtures must look like the real corpora and must not contain the default needles."""
    english_text = (fixture_corpus_dir / CORPUS_FILES[0]).read_text(encoding='utf-8')
    chinese_text = (fixture_corpus_dir / CORPUS_FILES[1]).read_text(encoding='utf-8')
    assert 2300 <= len(english_text.split()) <= 3000
    assert 2800 <= len(''.join(chinese_text.split())) <= 4500
    assert english_text.count('\n\n') >= 10 and chinese_text.count('\n\n') >= 10
    for mark in ('.', '!', '?', '"', '’'):
        assert mark in english_text, mark
    for mark in ('。', '！', '？', '；', '…', '「', '」', '“', '”', '\u3000\u3000'):
        assert mark in chinese_text, mark
    for forbidden in ('San Francisco', 'sandwich', 'Dolores'):
        assert forbidden not in english_text
    for forbidden in ('小明', '实习', '上海人工智能实验室'):
        assert forbidden not in chinese_text


@pytest.mark.parametrize(
    ('raw', 'text'),
    [
        (b'First line.\r\nSecond line.\r\n\r\nThird.', 'First line.\nSecond line.\n\nThird.'),
        (b'Old Mac line.\rNext line.', 'Old Mac line.\nNext line.'),
        (b'Mixed.\r\nEndings.\rHere.\n', 'Mixed.\nEndings.\nHere.\n'),
        ('\ufeffWith a BOM.\r\n'.encode(), 'With a BOM.\n'),
        ('中文。\r\n第二行！'.encode(), '中文。\n第二行！'),
    ],
)
def test_line_endings_normalised_and_hash_of_raw_bytes(tmp_path: Path, raw: bytes, text: str) -> None:
    (tmp_path / 'PaulGraham_Essays.txt').write_bytes(raw)
    corpus = load_corpus(tmp_path, english())
    assert corpus.text == text
    assert '\r' not in corpus.text
    assert corpus.sha256 == hashlib.sha256(raw).hexdigest()


def test_missing_file_names_file_and_subset(tmp_path: Path) -> None:
    (tmp_path / 'other.txt').write_text('Something else.', encoding='utf-8')
    with pytest.raises(NiahConfigError) as info:
        load_corpus(tmp_path, english())
    assert info.value.param == 'subsets.english.corpus_file'
    message = str(info.value)
    assert 'PaulGraham_Essays.txt' in message and "'english'" in message
    assert str(tmp_path) in message and 'other.txt' in message  # says where it looked and what it found


def test_missing_directory_is_reported_as_missing_file(tmp_path: Path) -> None:
    with pytest.raises(NiahConfigError) as info:
        load_corpus(tmp_path / 'nowhere', parse_params({}).resolve_subset('chinese'))
    assert info.value.param == 'subsets.chinese.corpus_file'
    assert 'Journey_to_the_West.txt' in str(info.value)


@pytest.mark.parametrize('raw', [b'', b'   \n\r\n\t  ', '\ufeff'.encode(), b'\r\n\r\n'])
def test_empty_file(tmp_path: Path, raw: bytes) -> None:
    (tmp_path / 'PaulGraham_Essays.txt').write_bytes(raw)
    with pytest.raises(NiahConfigError) as info:
        load_corpus(tmp_path, english())
    assert info.value.param == 'subsets.english.corpus_file'
    assert 'empty' in str(info.value) and 'PaulGraham_Essays.txt' in str(info.value)


@pytest.mark.parametrize(
    ('raw', 'byte'),
    [
        (b'\xff\xfe\x00bad', 0),
        (b'Good start, then latin-1: caf\xe9.', 29),
        ('中文'.encode()[:-1] + b' tail', 3),
        ('Valid text for a while. '.encode('utf-16'), 0),
    ],
)
def test_non_utf8_file(tmp_path: Path, raw: bytes, byte: int) -> None:
    (tmp_path / 'PaulGraham_Essays.txt').write_bytes(raw)
    with pytest.raises(NiahConfigError) as info:
        load_corpus(tmp_path, english())
    assert info.value.param == 'subsets.english.corpus_file'
    message = str(info.value)
    assert 'UTF-8' in message and f'byte {byte}' in message and 'PaulGraham_Essays.txt' in message


def test_new_subset_corpus_file(tmp_path: Path) -> None:
    (tmp_path / 'notes.txt').write_text('Notes for the test. They are short!', encoding='utf-8')
    params = parse_params(
        {
            'needles': ['N.'],
            'retrieval_question': 'Q?',
            'subsets': {'notes': {'corpus_file': 'notes.txt', 'language': 'en'}},
        }
    )
    corpus = load_corpus(tmp_path, params.resolve_subset('notes'))
    assert (corpus.subset, corpus.text) == ('notes', 'Notes for the test. They are short!')


# ---- resolve_corpus_dir -----------------------------------------------------------------------------------------


def test_local_path_directory_is_used_as_is(fixture_corpus_dir: Path) -> None:
    assert resolve_corpus_dir(local_path=fixture_corpus_dir, files=CORPUS_FILES) == fixture_corpus_dir
    assert resolve_corpus_dir(local_path=str(fixture_corpus_dir), files=CORPUS_FILES) == fixture_corpus_dir


def test_local_path_expands_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / 'corpora').mkdir()
    monkeypatch.setenv('HOME', str(tmp_path))
    assert resolve_corpus_dir(local_path='~/corpora', files=CORPUS_FILES) == tmp_path / 'corpora'


@pytest.mark.parametrize('kind', ['file', 'missing'])
def test_local_path_not_a_directory(tmp_path: Path, kind: str) -> None:
    target = tmp_path / 'PaulGraham_Essays.txt'
    if kind == 'file':
        target.write_text('A file, not a folder.', encoding='utf-8')
    with pytest.raises(NiahConfigError) as info:
        resolve_corpus_dir(local_path=target, files=CORPUS_FILES)
    assert info.value.param == 'local_path'
    assert 'not a directory' in str(info.value)
    assert 'PaulGraham_Essays.txt, Journey_to_the_West.txt' in str(info.value)


_UNREACHABLE_HUB = textwrap.dedent(
    """
    import json, sys
    from evalscope_niah.corpus import resolve_corpus_dir
    from evalscope_niah.errors import NiahConfigError
    try:
        path = resolve_corpus_dir(local_path=None, files=json.loads(sys.argv[1]), dataset_id=sys.argv[2])
    except NiahConfigError as exc:
        print(json.dumps({'param': exc.param, 'message': str(exc)}))
    else:
        print(json.dumps({'path': str(path)}))
    """
)


def test_unreachable_hub_says_how_to_use_local_path(tmp_path: Path) -> None:
    """ModelScope pointed at a closed local port: the error explains local_path instead of a bare network error.

    Run in a child process: modelscope reads its endpoint and retry settings from the environment at import time.
    """
    env = dict(os.environ)
    env.update(
        {
            'MODELSCOPE_DOMAIN': '127.0.0.1:9',  # older modelscope
            'MODELSCOPE_ENDPOINT': 'http://127.0.0.1:9',  # newer modelscope
            'MODELSCOPE_CACHE': str(tmp_path / 'modelscope'),
            'MODELSCOPE_REPO_TREE_PAGE_MAX_ATTEMPTS': '1',  # no back-off between retries (would add 7 s)
            'HF_ENDPOINT': 'http://127.0.0.1:9',
            'HF_HOME': str(tmp_path / 'hf'),
            'NO_PROXY': '127.0.0.1,localhost',
            'no_proxy': '127.0.0.1,localhost',
        }
    )
    try:
        result = subprocess.run(
            [sys.executable, '-c', _UNREACHABLE_HUB, json.dumps(CORPUS_FILES), DATASET_ID],
            capture_output=True,
            text=True,
            env=env,
            timeout=20,
        )
    except subprocess.TimeoutExpired:
        pytest.skip('modelscope took more than 20 s to give up on an unreachable endpoint')
    assert result.returncode == 0, result.stderr[-2000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert 'path' not in outcome, f'fetched from an unreachable hub: {outcome}'
    assert outcome['param'] == 'local_path'
    message = outcome['message']
    assert DATASET_ID in message
    assert 'PaulGraham_Essays.txt' in message and 'Journey_to_the_West.txt' in message
    assert "dataset_args={'needle_haystack': {'local_path': '/path/to/folder'}}" in message
    assert '--dataset-args' in message
