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

from evalscope_niah.corpus_format import DATASET_ID
from evalscope_niah.errors import NiahConfigError
from evalscope_niah.making.corpus import corpus_folder, load_corpus, resolve_corpus_dir
from evalscope_niah.tasks.compose import parse_params

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


# ---- corpus_folder: EvalScope's one value for a local path or a dataset id ------------------------------------


def test_a_corpus_location_that_is_a_folder_is_used_as_is(fixture_corpus_dir: Path) -> None:
    subsets = parse_params({}).resolve_subsets(['english', 'chinese'])
    assert corpus_folder(str(fixture_corpus_dir), subsets) == fixture_corpus_dir


@pytest.mark.parametrize('location', ['no-such-folder', 'a/b/c', '../../no-such-folder', ''])
def test_a_corpus_location_neither_folder_nor_dataset_id_is_refused_naming_the_files(location: str) -> None:
    """Nothing is fetched for it: the one error names local_path and the files the chosen subsets read."""
    subsets = parse_params({}).resolve_subsets(['chinese'])
    with pytest.raises(NiahConfigError) as info:
        corpus_folder(location, subsets)
    assert info.value.param == 'local_path'
    assert f'{location!r} is not a directory' in str(info.value)
    assert str(info.value).endswith('the folder holding Journey_to_the_West.txt')


_UNREACHABLE_HUB = textwrap.dedent(
    """
    import json, sys
    from evalscope_niah.making.corpus import corpus_folder
    from evalscope_niah.errors import NiahConfigError
    from evalscope_niah.tasks.compose import parse_params
    try:
        # EvalScope's dataset id in place of local_path: an 'owner/name' that is no folder is fetched from the hub.
        path = corpus_folder(sys.argv[2], parse_params({}).resolve_subsets(json.loads(sys.argv[1])))
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
            [sys.executable, '-c', _UNREACHABLE_HUB, json.dumps(['english', 'chinese']), DATASET_ID],
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


# ---- JSON Lines corpora and file lists (OpenCompass CDME's layout) ---------------------------------------------


def write_jsonl(path: Path, records: list, *, field: str = 'text') -> Path:
    """One record per line; a plain string stands for {field: string}, anything else is written as given."""
    lines = [
        json.dumps({field: record} if isinstance(record, str) else record, ensure_ascii=False) for record in records
    ]
    path.write_text('\n'.join(lines) + '\n', encoding='utf-8')
    return path


def custom(tmp_path: Path, **corpus) -> object:
    """A new English subset 'notes' whose corpus is given by ``corpus`` (corpus_file or file_list, text_field)."""
    params = parse_params(
        {'needles': ['N.'], 'retrieval_question': 'Q?', 'subsets': {'notes': {'language': 'en', **corpus}}}
    )
    return params.resolve_subset('notes')


def test_jsonl_records_joined_in_file_order(tmp_path: Path) -> None:
    write_jsonl(tmp_path / 'essays.jsonl', ['First essay.', 'Second essay.\nWith two lines.', '第三篇。'])
    corpus = load_corpus(tmp_path, custom(tmp_path, corpus_file='essays.jsonl'))
    assert corpus.text == 'First essay.\n\nSecond essay.\nWith two lines.\n\n第三篇。'
    assert corpus.paths == (tmp_path / 'essays.jsonl',)


def test_jsonl_text_field_blank_lines_and_other_keys(tmp_path: Path) -> None:
    path = tmp_path / 'corpus.json-lines'
    path.write_text(
        '\ufeff{"id": 1, "content": "Alpha.", "text": "not this"}\r\n\r\n   \n{"content": "Beta."}\n\n',
        encoding='utf-8',
    )
    corpus = load_corpus(tmp_path, custom(tmp_path, corpus_file='corpus.json-lines', text_field='content'))
    assert corpus.text == 'Alpha.\n\nBeta.'


def test_file_list_joins_plain_and_jsonl_files_in_the_given_order(tmp_path: Path) -> None:
    (tmp_path / 'intro.txt').write_bytes(b'Intro line one.\r\nIntro line two.')
    write_jsonl(tmp_path / 'A.JSONL', ['Record one.', 'Record two.'])  # the extension is matched in any case
    (tmp_path / 'sub').mkdir()
    (tmp_path / 'sub' / 'outro.md').write_text('Outro.', encoding='utf-8')
    files = ['sub/outro.md', 'A.JSONL', 'intro.txt']
    subset = custom(tmp_path, file_list=files)
    assert subset.corpus_files == tuple(files)
    assert subset.corpus_param == 'subsets.notes.file_list'
    assert subset.corpus_file == 'sub/outro.md + A.JSONL + intro.txt'  # how messages and results name it
    corpus = load_corpus(tmp_path, subset)
    assert corpus.text == 'Outro.\n\nRecord one.\n\nRecord two.\n\nIntro line one.\nIntro line two.'
    assert corpus.paths == tuple(tmp_path / name for name in files)


def test_identity_covers_order_field_and_content(tmp_path: Path) -> None:
    write_jsonl(tmp_path / 'a.jsonl', [{'text': 'Apple.', 'body': 'Avocado.'}])
    write_jsonl(tmp_path / 'b.jsonl', [{'text': 'Banana.', 'body': 'Blueberry.'}])
    (tmp_path / 'c.txt').write_text('Cherry.', encoding='utf-8')

    def sha(**corpus) -> str:
        return load_corpus(tmp_path, custom(tmp_path, **corpus)).sha256

    forward = sha(file_list=['a.jsonl', 'b.jsonl'])
    assert forward == sha(file_list=['a.jsonl', 'b.jsonl'], text_field='text')  # 'text' is the default
    assert forward != sha(file_list=['b.jsonl', 'a.jsonl'])
    assert forward != sha(file_list=['a.jsonl', 'b.jsonl'], text_field='body')
    assert forward != sha(file_list=['a.jsonl'])
    # A single plain file keeps its own hash (what sha256sum prints); in a list it is part of a combined one.
    assert sha(corpus_file='c.txt') == hashlib.sha256(b'Cherry.').hexdigest() == sha(file_list=['c.txt'])
    assert sha(file_list=['c.txt', 'a.jsonl']) not in {sha(corpus_file='c.txt'), sha(file_list=['a.jsonl'])}
    write_jsonl(tmp_path / 'b.jsonl', [{'text': 'Banana!', 'body': 'Blueberry.'}])
    assert forward != sha(file_list=['a.jsonl', 'b.jsonl'])


def test_file_list_replaces_a_built_in_corpus(tmp_path: Path) -> None:
    write_jsonl(tmp_path / 'one.jsonl', ['One.'])
    write_jsonl(tmp_path / 'two.jsonl', ['Two.'])
    resolved = parse_params({'subsets': {'english': {'file_list': ['one.jsonl', 'two.jsonl']}}}).resolve_subset(
        'english'
    )
    assert resolved.corpus_files == ('one.jsonl', 'two.jsonl')
    assert (resolved.language, resolved.needles) == ('en', parse_params({}).resolve_subset('english').needles)
    assert load_corpus(tmp_path, resolved).text == 'One.\n\nTwo.'
    # corpus_file still means one file, and the built-in subsets still read theirs.
    assert parse_params({}).resolve_subset('chinese').corpus_files == ('Journey_to_the_West.txt',)
    assert parse_params({}).resolve_subset('chinese').corpus_param == 'subsets.chinese.corpus_file'


@pytest.mark.parametrize(
    ('subset', 'param', 'fragments'),
    [
        ({'corpus_file': 'a.txt', 'file_list': ['b.txt']}, 'subsets.notes', ["'corpus_file' or 'file_list'"]),
        ({'file_list': []}, 'subsets.notes.file_list', ['1 to 1000']),
        ({'file_list': ['a.txt', ' ']}, 'subsets.notes.file_list', ['non-empty']),
        ({'file_list': ['a.txt'], 'text_field': 'body'}, 'subsets.notes', ['text_field', '.jsonl']),
        ({'corpus_file': 'a.jsonl', 'text_field': ''}, 'subsets.notes.text_field', ['empty']),
        ({'text_field': 'body'}, 'subsets.notes', ['text_field']),
    ],
)
def test_bad_corpus_parameters(subset: dict, param: str, fragments: list[str]) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params({'subsets': {'notes': {'language': 'en', **subset}}})
    assert info.value.param == param
    for fragment in fragments:
        assert fragment in str(info.value)


def test_new_subset_may_name_its_files_with_file_list_only(tmp_path: Path) -> None:
    with pytest.raises(NiahConfigError, match=r"needs 'corpus_file' and 'language'.*'file_list'"):
        parse_params({'subsets': {'notes': {'language': 'en'}}})
    assert custom(tmp_path, file_list=['x.txt']).corpus_files == ('x.txt',)


@pytest.mark.parametrize(
    ('lines', 'line_number', 'fragment'),
    [
        (['{"text": "Fine."}', '{"text": "Broken'], 2, 'not a JSON record'),
        (['', '{"text": "Fine."}', '', '["a list"]'], 4, 'a JSON array, not an object'),
        (['"just a string"'], 1, 'a JSON string, not an object'),
        (['{"text": "Fine."}', '{"body": "x", "id": 3}'], 2, "no 'text' field (its fields: 'body', 'id')"),
        (['{"text": null}'], 1, "field 'text' is a JSON null, not a string"),
        (['{"text": ["a"]}'], 1, "field 'text' is a JSON array, not a string"),
        (['{"text": 12}'], 1, "field 'text' is a JSON number, not a string"),
        (['{"text": "Fine."}', '[' * 100_000], 2, 'not a JSON record'),  # deep nesting must not crash
        (['{"text": "Fine."}', '{"text": 1' + '0' * 5000 + '}'], 2, 'not a JSON record'),  # huge number
    ],
)
def test_bad_jsonl_record_names_file_and_line(tmp_path: Path, lines: list[str], line_number: int, fragment: str):
    write_jsonl(tmp_path / 'good.jsonl', ['Good.'])
    (tmp_path / 'bad.jsonl').write_text('\n'.join(lines) + '\n', encoding='utf-8')
    with pytest.raises(NiahConfigError) as info:
        load_corpus(tmp_path, custom(tmp_path, file_list=['good.jsonl', 'bad.jsonl']))
    assert info.value.param == 'subsets.notes.file_list'
    message = str(info.value)
    assert "'bad.jsonl'" in message and "'notes'" in message
    assert f'line {line_number}:' in message and fragment in message


def test_jsonl_without_records_or_text(tmp_path: Path) -> None:
    (tmp_path / 'blank.jsonl').write_text('\n  \n', encoding='utf-8')
    with pytest.raises(NiahConfigError, match=r"'blank\.jsonl' of subset 'notes' holds no records"):
        load_corpus(tmp_path, custom(tmp_path, corpus_file='blank.jsonl'))
    write_jsonl(tmp_path / 'empty_text.jsonl', ['', '  '])
    with pytest.raises(NiahConfigError, match='is empty') as info:
        load_corpus(tmp_path, custom(tmp_path, corpus_file='empty_text.jsonl'))
    assert info.value.param == 'subsets.notes.corpus_file'


def test_missing_file_of_a_file_list(tmp_path: Path) -> None:
    write_jsonl(tmp_path / 'here.jsonl', ['Here.'])
    with pytest.raises(NiahConfigError) as info:
        load_corpus(tmp_path, custom(tmp_path, file_list=['here.jsonl', 'gone.jsonl']))
    assert info.value.param == 'subsets.notes.file_list'
    assert "'gone.jsonl'" in str(info.value) and 'not found' in str(info.value) and 'here.jsonl' in str(info.value)


# ---- containment, size and content limits ----------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> tuple[Path, Path]:
    """A corpus directory and, next to it, a readable secret the config must not reach."""
    corpus_dir = tmp_path / 'corpus'
    corpus_dir.mkdir()
    (corpus_dir / 'ok.txt').write_text('Inside the folder.', encoding='utf-8')
    secret = tmp_path / 'secret.txt'
    secret.write_text('A secret sentence outside the corpus folder.', encoding='utf-8')
    return corpus_dir, secret


@pytest.mark.parametrize('key', ['corpus_file', 'file_list'])
@pytest.mark.parametrize('kind', ['absolute', 'dotdot', 'dotdot_inside'])
def test_paths_outside_the_corpus_directory_are_refused(outside: tuple[Path, Path], key: str, kind: str) -> None:
    corpus_dir, secret = outside
    (corpus_dir / 'sub').mkdir()
    name = {'absolute': str(secret), 'dotdot': '../secret.txt', 'dotdot_inside': 'sub/../ok.txt'}[kind]
    value = name if key == 'corpus_file' else ['ok.txt', name]
    with pytest.raises(NiahConfigError) as info:
        load_corpus(corpus_dir, custom(corpus_dir, **{key: value}))
    assert info.value.param == f'subsets.notes.{key}'
    assert "'notes'" in str(info.value) and 'inside the directory' in str(info.value)


@pytest.mark.parametrize('key', ['corpus_file', 'file_list'])
def test_symlink_pointing_out_is_refused(outside: tuple[Path, Path], key: str) -> None:
    corpus_dir, secret = outside
    (corpus_dir / 'link.txt').symlink_to(secret)
    (corpus_dir / 'linked_dir').symlink_to(secret.parent, target_is_directory=True)
    for name in ('link.txt', 'linked_dir/secret.txt'):
        value = name if key == 'corpus_file' else [name]
        with pytest.raises(NiahConfigError) as info:
            load_corpus(corpus_dir, custom(corpus_dir, **{key: value}))
        assert info.value.param == f'subsets.notes.{key}'
        assert 'outside the directory' in str(info.value) and "'notes'" in str(info.value)


def test_symlinks_inside_the_directory_are_followed(outside: tuple[Path, Path]) -> None:
    corpus_dir, _ = outside
    (corpus_dir / 'alias.txt').symlink_to(corpus_dir / 'ok.txt')
    linked_root = corpus_dir.parent / 'corpus_link'
    linked_root.symlink_to(corpus_dir, target_is_directory=True)  # local_path itself may be a symlink
    assert load_corpus(linked_root, custom(corpus_dir, corpus_file='alias.txt')).text == 'Inside the folder.'


def test_corpus_size_cap_covers_all_files_of_a_subset(tmp_path: Path) -> None:
    from evalscope_niah.making.corpus import MAX_CORPUS_BYTES

    assert MAX_CORPUS_BYTES == 64 * 2**20
    half = b'Words of prose. ' * (MAX_CORPUS_BYTES // 2 // 16)
    (tmp_path / 'one.txt').write_bytes(half)
    (tmp_path / 'two.txt').write_bytes(half + b'One byte more.')
    with pytest.raises(NiahConfigError) as info:
        load_corpus(tmp_path, custom(tmp_path, file_list=['one.txt', 'two.txt']))
    assert info.value.param == 'subsets.notes.file_list'
    assert "'notes'" in str(info.value) and '64 MiB' in str(info.value)
    assert len(load_corpus(tmp_path, custom(tmp_path, corpus_file='one.txt')).text) == len(half)


@pytest.mark.parametrize(
    ('raw', 'refused'),
    [
        (b'\x00\x01\x02\x03' * 100 + b'Some text.', True),
        (b'Prose. ' * 100 + b'\x1b[0m\x07', False),  # a few stray bytes in real text are tolerated
        (b'A' * 98 + b'\x00\x0c', True),  # 2%
        (b'A' * 99 + b'\x0c', False),  # 1%: the limit itself
        (b'Tabs\tand\r\nline\nbreaks\r are text.' * 10, False),
    ],
)
def test_control_characters(tmp_path: Path, raw: bytes, refused: bool) -> None:
    (tmp_path / 'file.txt').write_bytes(raw)
    subset = custom(tmp_path, corpus_file='file.txt')
    if not refused:
        assert load_corpus(tmp_path, subset).text
        return
    with pytest.raises(NiahConfigError) as info:
        load_corpus(tmp_path, subset)
    assert info.value.param == 'subsets.notes.corpus_file'
    assert 'control characters' in str(info.value) and "'file.txt'" in str(info.value)


def test_control_characters_inside_jsonl_strings(tmp_path: Path) -> None:
    write_jsonl(tmp_path / 'escaped.jsonl', ['\u0000\u0001\u0002 mostly control characters'])
    with pytest.raises(NiahConfigError, match=r"'escaped\.jsonl'.*control characters"):
        load_corpus(tmp_path, custom(tmp_path, corpus_file='escaped.jsonl'))


# ---- end to end: a subset read from two JSON Lines files, through EvalScope's run_task ---------------------------


def test_file_list_subset_runs_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip('evalscope')
    from evalscope import TaskConfig, run_task

    from evalscope_niah.making.corpus import DEMO_CORPUS_DIR
    from evalscope_niah.params.subsets import EN_ANSWER, EN_NEEDLE, EN_QUESTION
    from evalscope_niah.testing.openai_server import OpenAICompatServer
    from tests.support.reports import cell_scores
    from tests.support.tasks import task_settings

    paragraphs = (DEMO_CORPUS_DIR / 'english.txt').read_text(encoding='utf-8').split('\n\n')
    first, second = paragraphs[:4], paragraphs[4:]  # the first file is ~300 tokens: every haystack crosses over
    corpus_dir = tmp_path / 'cdme'
    corpus_dir.mkdir()
    write_jsonl(corpus_dir / 'part_b.jsonl', second, field='body')
    write_jsonl(corpus_dir / 'part_a.jsonl', first, field='body')
    subset = {
        'file_list': ['part_a.jsonl', 'part_b.jsonl'],
        'text_field': 'body',
        'language': 'en',
        'needles': [EN_NEEDLE],
        'retrieval_question': EN_QUESTION,
        'answer': EN_ANSWER,
    }
    extra = {'context_lengths': [900, 1500], 'document_depth_percents': [0, 100], 'subsets': {'cdme': subset}}

    def reader(messages: list[dict]) -> str:
        text = messages[-1]['content'].split('<text>', 1)[1].split('</text>', 1)[0]
        return EN_NEEDLE if EN_NEEDLE in text else 'The document does not say.'

    with OpenAICompatServer({'reader': reader}) as server:
        settings = task_settings(server, corpus_dir, tmp_path / 'work', model='reader', extra=extra, subsets=['cdme'])
        report = run_task(TaskConfig(**settings))['needle_haystack']
        requests = server.requests
    assert cell_scores(report) == {('cdme', length, depth): 1.0 for length in (900, 1500) for depth in (0, 100)}
    assert len(requests) == 4
    # Every haystack holds the first file's last record, the paragraph break, then the second file's first record.
    seam = f'{first[-1]}\n\n{second[0]}'
    for request in requests:
        assert seam in request.messages[-1]['content']
    expected = load_corpus(corpus_dir, parse_params(extra).resolve_subset('cdme'))
    predictions = tmp_path / 'work' / 'predictions' / 'reader' / 'needle_haystack_cdme.jsonl'
    rows = [json.loads(line) for line in predictions.read_text(encoding='utf-8').splitlines()]
    assert {row['metadata']['corpus_sha256'] for row in rows} == {expected.sha256}
    assert {row['metadata']['corpus_file'] for row in rows} == {'part_a.jsonl + part_b.jsonl'}


@pytest.mark.parametrize(
    ('make', 'kind'),
    [
        (os.mkfifo, 'a FIFO'),
        (os.mkdir, 'a directory'),
    ],
)
def test_a_corpus_path_that_is_not_a_regular_file_says_what_it_is(tmp_path: Path, make, kind: str) -> None:
    make(tmp_path / 'odd.jsonl')
    with pytest.raises(NiahConfigError) as info:
        load_corpus(tmp_path, custom(tmp_path, corpus_file='odd.jsonl'))
    message = str(info.value)
    assert f"'odd.jsonl' of subset 'notes' in {tmp_path} is not a regular file ({kind})" in message
    assert 'not found' not in message


def test_a_corpus_path_that_is_a_socket_says_so(tmp_path: Path) -> None:
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(tmp_path / 'odd.jsonl'))
        with pytest.raises(NiahConfigError, match=r'is not a regular file \(a socket\)'):
            load_corpus(tmp_path, custom(tmp_path, corpus_file='odd.jsonl'))


def test_a_corpus_path_that_is_a_device_says_so(tmp_path: Path) -> None:
    (tmp_path / 'null.jsonl').symlink_to('/dev/null')
    with pytest.raises(NiahConfigError, match=r'is not a regular file \(a character device\)'):
        load_corpus(tmp_path, custom(tmp_path, corpus_file='null.jsonl'))
