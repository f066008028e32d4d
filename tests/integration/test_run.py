"""`evalscope-niah eval`: EvalScope's own CLI with our benchmark, taking --dataset-args in the form preview and doctor
take too (the plain entry, keyed here under each of our names in --datasets)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ('entry', 'said'),
    [
        ({'extra_params': {'bogus': 1}}, 'evalscope-niah: error: bogus: unknown parameter'),
        ({'context_lengths': [600]}, 'evalscope-niah: error: context_lengths: is a benchmark parameter'),
    ],
    ids=['unknown parameter', 'parameter outside extra_params'],
)
def test_a_refusal_under_plain_evalscope_eval_is_one_line(
    entry: dict, said: str, fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    """Plain `evalscope eval` (a real process) refusing our parameters: one line and exit 2, no traceback."""
    dataset_args = {'needle_haystack': {'local_path': str(fixture_corpus_dir), **entry}}
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        command = [
            str(Path(sys.executable).with_name('evalscope')), 'eval', '--model', MODEL, '--api-url', server.base_url,
            '--api-key', 'x', '--eval-type', 'openai_api', '--datasets', 'needle_haystack',
            '--dataset-args', json.dumps(dataset_args), '--judge', '{"strategy": "rule"}',
            '--work-dir', str(tmp_path), '--no-timestamp',
        ]  # fmt: skip
        env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(REPO), os.environ.get('PYTHONPATH', '')])}
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert server.requests_for(MODEL) == []
    output = done.stdout + done.stderr
    assert done.returncode == 2 and 'Traceback' not in output, output
    assert [line for line in output.splitlines() if line.startswith('evalscope-niah: error:')] == [
        line for line in output.splitlines() if line.startswith(said)
    ], output
    assert said in output
