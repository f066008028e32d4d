"""Every path a run writes is inside its work dir, whatever the model id: `safe_names.safe_name` on hostile names
(``..``, absolute ids, both systems' separators, Windows device names, names that differ only in case, empty and
over-long ones), and whole runs with such ids, through run_task and through `evalscope-niah eval`, checked by
walking every file written and reading every line printed.
"""

from __future__ import annotations

import csv
import json
import ntpath
import os
import posixpath
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.params.subsets import check_subset_list
from evalscope_niah.safe_names import MAX_SAFE_NAME_CHARS, is_kept_as_is, safe_name

HOSTILE = [
    '../../escaped',
    '..',
    '.',
    '',
    '/etc/escaped',
    'C:\\Windows\\escaped',
    '\\\\server\\share\\x',
    'a/../../b',
    'a\\..\\..\\b',
    'CON',
    'con',
    'nul.txt',
    'COM1',
    'lpt9.jsonl',
    'Model',
    'model',
    'MODEL',
    'name.',
    'name ',
    '~',
    '~root',
    '-rf',
    'x' * 300,
    'ä' * 200,
    'Qwen/Qwen2.5-7B-Instruct',
    'qwen2.5-7b-instruct',
    'new\nline',
    'nul\x00byte',
    'model~0123456789abcdef',
    '\udcff',
]
_DEVICES = {'con', 'prn', 'aux', 'nul'} | {f'{d}{n}' for d in ('com', 'lpt') for n in range(10)}


@pytest.mark.parametrize('name', HOSTILE)
def test_a_safe_name_is_one_plain_segment_on_both_systems(name, tmp_path):
    safe = safe_name(name)
    assert safe not in ('', '.', '..') and len(safe) <= MAX_SAFE_NAME_CHARS
    assert all(ch.isascii() and (ch.isalnum() or ch in '._-~') for ch in safe), safe
    assert not safe.startswith(('.', '-', '~')) and not safe.endswith(('.', ' '))
    assert safe.split('.')[0].lower() not in _DEVICES
    for system in (posixpath, ntpath):
        assert system.basename(system.join('work', safe)) == safe and not system.isabs(safe)
    assert (tmp_path / safe).resolve().parent == tmp_path.resolve()
    assert (safe == name) == is_kept_as_is(name)


def test_two_names_never_share_a_folder_not_even_on_a_case_blind_disk():
    names = [*HOSTILE, *(f'{stem}{suffix}' for stem in ('a', 'A', 'a.', 'a/') for suffix in ('', '~', '.', 'b', 'B'))]
    names += [safe_name(name) for name in HOSTILE]  # a safe name given as an id is another id
    distinct = sorted(set(names))
    assert len({safe_name(name).casefold() for name in distinct}) == len(distinct)


def test_a_plain_id_keeps_its_name():
    for name in ('qwen2.5-7b-instruct', 'gpt-4o-mini', 'm', 'llama3_8b'):
        assert safe_name(name) == name


def test_subsets_that_differ_only_in_case_are_refused_before_any_file():
    # A subset names files ('needle_haystack_<subset>.jsonl'); its characters are already path-safe (SUBSET_NAME_RULE).
    with pytest.raises(NiahConfigError) as refused:
        check_subset_list(['english', 'English'])
    assert (
        refused.value.param == 'subset_list' and "'english' and 'English' differ only in case" in refused.value.detail
    )
    for hostile in ('../x', '.hidden', 'a/b', 'a\\b', '', 'x' * 65):
        with pytest.raises(NiahConfigError):
            check_subset_list([hostile])


def test_plot_of_hostile_model_columns_draws_inside_its_output_dir_and_refuses_case_twins(tmp_path, capsys):
    from evalscope_niah.cli import main

    out = tmp_path / 'deep' / 'out'
    csv_path = tmp_path / 'summary.csv'
    csv_path.write_text('dataset,../../escaped,/abs\nLength1000Depth0_origin_en_4k,100.00,50.00\n', encoding='utf-8')
    assert main(['plot', '--csv', str(csv_path), '--output-dir', str(out)]) == 0
    drawn = {path.resolve() for path in tmp_path.rglob('*.png')}
    assert len(drawn) == 2 and all(path.parent == out.resolve() for path in drawn)
    twins = tmp_path / 'twins.csv'
    twins.write_text('dataset,Model,model\nLength1000Depth0_origin_en_4k,100.00,50.00\n', encoding='utf-8')
    assert main(['plot', '--csv', str(twins), '--output-dir', str(tmp_path / 'twins')]) == 1
    assert 'share the file names' in capsys.readouterr().err and not (tmp_path / 'twins').exists()


# ---- whole runs ----------------------------------------------------------------------------------------------

pytest.importorskip('evalscope')

from evalscope import TaskConfig, run_task  # noqa: E402

from evalscope_niah.reporting.outputs import opencompass_summary_file  # noqa: E402
from evalscope_niah.testing.openai_server import OpenAICompatServer, needle_finder  # noqa: E402
from tests.support.tasks import task_settings  # noqa: E402

MODEL = 'needle-finder'
EXTRA = {'context_lengths': [600], 'document_depth_percents': [50]}
REPO = Path(__file__).resolve().parents[1]


def _files(root: Path) -> set[Path]:
    return {path.resolve() for path in root.rglob('*') if path.is_file() or path.is_symlink()}


def _check_run(root: Path, work_dir: Path, before: set[Path], model_id: str) -> None:
    """Every file the run wrote is in the work dir; predictions and reviews are two files of their own kind; the
    report and the OpenCompass CSV name the user's id, as data."""
    written = _files(root) - before
    outside = sorted(str(path) for path in written if not path.is_relative_to(work_dir.resolve()))
    assert outside == []
    folder = safe_name(model_id)
    [prediction] = (work_dir / 'predictions' / folder).glob('*.jsonl')
    [review] = (work_dir / 'reviews' / folder).glob('*.jsonl')
    assert prediction.resolve() != review.resolve()
    assert all('model_output' in json.loads(line) for line in prediction.read_text(encoding='utf-8').splitlines())
    assert all('sample_score' in json.loads(line) for line in review.read_text(encoding='utf-8').splitlines())
    report_dir = work_dir / 'reports' / folder
    assert json.loads((report_dir / 'needle_haystack.json').read_text(encoding='utf-8'))['model_name'] == model_id
    with open(report_dir / opencompass_summary_file('english'), encoding='utf-8', newline='') as handle:
        assert next(csv.reader(handle))[-1] == model_id


@pytest.mark.parametrize('model_id', ['../../escaped', 'ABSOLUTE', 'a\\..\\..\\win', 'CON', ''])
def test_a_run_with_a_hostile_model_id_writes_only_inside_its_work_dir(tmp_path, fixture_corpus_dir, model_id):
    work_dir = tmp_path / 'deep' / 'er' / 'work'
    model_id = str(tmp_path / 'absolute') if model_id == 'ABSOLUTE' else model_id
    before = _files(tmp_path)
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        settings = task_settings(server, fixture_corpus_dir, work_dir, model=MODEL, extra=EXTRA, subsets=['english'])
        run_task(TaskConfig(**settings, model_id=model_id))
    _check_run(tmp_path, work_dir, before, model_id or MODEL)  # EvalScope names an empty id after the model


def test_the_cli_with_an_escaping_model_id_writes_and_prints_only_the_work_dir(tmp_path, fixture_corpus_dir):
    work_dir = tmp_path / 'deep' / 'work'
    before = _files(tmp_path)
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        settings: dict[str, Any] = task_settings(server, fixture_corpus_dir, work_dir, model=MODEL, extra=EXTRA)
        command = [
            str(Path(sys.executable).with_name('evalscope-niah')), 'eval', '--model', MODEL, '--model-id',
            '../../escaped', '--api-url', server.base_url, '--api-key', 'x', '--datasets', 'needle_haystack',
            '--dataset-args', json.dumps({'needle_haystack': {**settings['dataset_args']['needle_haystack'],
                                                              'subset_list': ['english']}}),
            '--judge', json.dumps({'strategy': 'rule'}), '--work-dir', str(work_dir), '--no-timestamp',
        ]  # fmt: skip
        env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(REPO), os.environ.get('PYTHONPATH', '')])}
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    _check_run(tmp_path, work_dir, before, '../../escaped')
    escaped = str((work_dir / 'predictions' / '../../escaped').resolve().parent)
    assert [line for line in output.splitlines() if escaped + os.sep + 'escaped' in line] == []


def test_ids_that_differ_only_in_case_keep_apart_in_one_work_dir(tmp_path, fixture_corpus_dir):
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        settings = task_settings(server, fixture_corpus_dir, tmp_path, model=MODEL, extra=EXTRA, subsets=['english'])
        for model_id in ('Model', 'model'):
            run_task(TaskConfig(**settings, model_id=model_id))
    folders = sorted(path.name for path in (tmp_path / 'reports').iterdir() if path.is_dir())
    assert len({folder.casefold() for folder in folders}) == 2
    for model_id in ('Model', 'model'):
        report = tmp_path / 'reports' / safe_name(model_id) / 'needle_haystack.json'
        assert json.loads(report.read_text(encoding='utf-8'))['model_name'] == model_id


def test_a_cache_under_the_old_folder_name_is_refused_with_the_rename_not_recomputed(tmp_path, fixture_corpus_dir):
    # Work dirs written before ids became safe folder names hold reports/Model/...: resuming one must not silently
    # recompute every sample under reports/Model~<hash>/.
    safe = safe_name('Model')
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        settings = task_settings(server, fixture_corpus_dir, tmp_path, model=MODEL, extra=EXTRA, subsets=['english'])
        run_task(TaskConfig(**settings, model_id='Model'))
        for kind in ('predictions', 'reviews', 'reports'):
            (tmp_path / kind / safe).rename(tmp_path / kind / 'Model')
        asked = len(server.requests_for(MODEL))
        with pytest.raises(NiahConfigError) as refused:
            run_task(TaskConfig(**settings, model_id='Model', use_cache=str(tmp_path)))
        assert refused.value.param == 'use_cache' and repr(safe) in refused.value.detail
        assert str(tmp_path / 'predictions' / 'Model') in refused.value.detail
        for kind in ('predictions', 'reviews', 'reports'):  # done as the error says, the resume asks for nothing
            (tmp_path / kind / 'Model').rename(tmp_path / kind / safe)
        run_task(TaskConfig(**settings, model_id='Model', use_cache=str(tmp_path)))
        assert len(server.requests_for(MODEL)) == asked


# ---- files a run reads stay where the user pointed -----------------------------------------------------------------

NEEDLES = REPO / 'tests' / 'data' / 'needlebench' / 'needles.jsonl'


def _needle_file_run(corpus_dir: Path, work_dir: Path, needle_file_name: str) -> tuple[NiahConfigError, list]:
    """A run whose NeedleBench needle file is ``needle_file_name``: the error it stops with, and the requests the
    server got (none may come: the needle would be sent)."""
    extra = {**EXTRA, 'needle_file_name': needle_file_name}
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        settings = task_settings(server, corpus_dir, work_dir, model=MODEL, extra=extra, subsets=['english'])
        with pytest.raises(NiahConfigError) as refused:
            run_task(TaskConfig(**settings))
        return refused.value, server.requests


@pytest.mark.parametrize('how', ['dotdot', 'symlink'])
def test_a_needle_file_outside_the_corpus_folder_is_refused_before_any_request(
    tmp_path: Path, fixture_corpus_dir: Path, how: str
) -> None:
    corpus = tmp_path / 'corpus'
    corpus.mkdir()
    for path in fixture_corpus_dir.iterdir():
        (corpus / path.name).write_bytes(path.read_bytes())
    (tmp_path / 'outside').mkdir()
    secret = tmp_path / 'outside' / 'secret.jsonl'
    secret.write_bytes(NEEDLES.read_bytes())
    name = '../outside/secret.jsonl'
    if how == 'symlink':
        name = 'needles.jsonl'
        (corpus / name).symlink_to(secret)
    error, requests = _needle_file_run(corpus, tmp_path / 'work', name)
    assert requests == []
    assert error.param == 'needle_file_name'
    assert ('no absolute path, no ".."' if how == 'dotdot' else 'a symlink pointing out') in error.detail


def test_a_fifo_as_the_needle_file_is_refused_not_read(tmp_path: Path, fixture_corpus_dir: Path) -> None:
    corpus = tmp_path / 'corpus'
    corpus.mkdir()
    for path in fixture_corpus_dir.iterdir():
        (corpus / path.name).write_bytes(path.read_bytes())
    os.mkfifo(corpus / 'needles.jsonl')  # reading it would wait for a writer forever
    error, requests = _needle_file_run(corpus, tmp_path / 'work', 'needles.jsonl')
    assert requests == [] and error.param == 'needle_file_name'
    assert 'is not a regular file (a FIFO)' in error.detail


def test_a_fifo_as_the_needle_bank_is_refused_not_read(tmp_path: Path) -> None:
    from evalscope_niah.tasks.single.bank import load_needle_bank

    os.mkfifo(tmp_path / 'bank.jsonl')
    with pytest.raises(NiahConfigError, match=r'needle_bank: .* is not a regular file \(a FIFO\)'):
        load_needle_bank(tmp_path / 'bank.jsonl')


# ---- model ids: one folder per id, whatever its Unicode spelling; a resume under another id says so ----------------

CAFE_NFC = unicodedata.normalize('NFC', 'Café-Modèl')
CAFE_NFD = unicodedata.normalize('NFD', CAFE_NFC)


def test_nfc_and_nfd_spellings_of_an_id_name_one_folder() -> None:
    assert CAFE_NFC != CAFE_NFD and safe_name(CAFE_NFC) == safe_name(CAFE_NFD)
    assert safe_name('Café') != safe_name('Cafe')  # normalised, not folded


def test_a_resume_under_either_spelling_of_an_id_finds_its_cache(tmp_path, fixture_corpus_dir):
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        settings = task_settings(server, fixture_corpus_dir, tmp_path, model=MODEL, extra=EXTRA, subsets=['english'])
        run_task(TaskConfig(**settings, model_id=CAFE_NFC))
        asked = len(server.requests_for(MODEL))
        run_task(TaskConfig(**settings, model_id=CAFE_NFD, use_cache=str(tmp_path)))
        assert len(server.requests_for(MODEL)) == asked  # nothing asked again
    assert [path.name for path in (tmp_path / 'predictions').iterdir()] == [safe_name(CAFE_NFC)]


def test_a_resume_under_another_id_says_why_in_one_line_before_any_request(tmp_path, fixture_corpus_dir):
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        settings = task_settings(server, fixture_corpus_dir, tmp_path, model=MODEL, extra=EXTRA, subsets=['english'])
        run_task(TaskConfig(**settings, model_id=CAFE_NFC))
        asked = len(server.requests)
        with pytest.raises(NiahConfigError) as refused:
            run_task(TaskConfig(**settings, model_id='another-model', use_cache=str(tmp_path)))
        assert len(server.requests) == asked
    message = refused.value.detail
    assert refused.value.param == 'use_cache' and '\n' not in message
    assert repr(CAFE_NFC) in message and "'another-model'" in message  # the id then (as given) and now
    assert '--model-id' in message and 'new work dir' in message and 'sha256' not in message
