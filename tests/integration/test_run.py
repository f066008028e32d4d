"""`evalscope-niah eval`: EvalScope's own CLI with our benchmark, taking --dataset-args in the form preview and doctor
take too (the plain entry, keyed here under each of our names in --datasets)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip('evalscope')

from evalscope_niah.cli import main
from evalscope_niah.integration.run import keyed_dataset_args
from evalscope_niah.reporting.outputs import OutputFiles
from evalscope_niah.testing.openai_server import OpenAICompatServer, needle_finder

MODEL = 'mock-model'


def test_the_plain_entry_is_keyed_under_our_names_only() -> None:
    plain = json.dumps({'local_path': '/x', 'extra_params': {'context_lengths': [600]}})
    argv = keyed_dataset_args(['--datasets', 'niah', 'gsm8k', '--dataset-args', plain, '--limit', '1'])
    assert json.loads(argv[4]) == {'niah': json.loads(plain)} and argv[5:] == ['--limit', '1']
    both = keyed_dataset_args(['--datasets', 'needle_haystack', 'niah', f'--dataset-args={plain}'])
    assert json.loads(both[3].partition('=')[2]) == {'needle_haystack': json.loads(plain), 'niah': json.loads(plain)}
    for unchanged in (
        ['--datasets', 'niah', '--dataset-args', json.dumps({'niah': {'local_path': '/x'}})],  # keyed already
        ['--datasets', 'gsm8k', '--dataset-args', plain],  # not ours
        ['--datasets', 'niah', '--dataset-args', json.dumps({'gsm8k': {}})],  # another benchmark's entry
        ['--datasets', 'niah', '--dataset-args', 'not json'],  # EvalScope says what is wrong
    ):
        assert keyed_dataset_args(unchanged) == unchanged


def test_eval_runs_with_the_plain_entry(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    dataset_args = {
        'local_path': str(fixture_corpus_dir), 'subset_list': ['english'], 'extra_params': {'context_lengths': [600]}
    }  # fmt: skip
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        code = main(
            [
                'eval', '--model', MODEL, '--api-url', server.base_url, '--api-key', 'x', '--eval-type', 'openai_api',
                '--datasets', 'niah', '--dataset-args', json.dumps(dataset_args),
                '--judge', '{"strategy": "rule"}', '--limit', '2', '--work-dir', str(tmp_path), '--no-timestamp',
            ]
        )  # fmt: skip
        assert code == 0 and server.requests_for(MODEL)
    assert (tmp_path / 'reports' / MODEL / OutputFiles('niah').results).is_file()
