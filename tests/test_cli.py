"""`evalscope-niah preview` and `plot` as a user runs them: real processes, real files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalscope_niah.cli import main
from evalscope_niah.report import RESULTS_FILE, SampleResult, write_results

REQUIRED_FIELDS = {
    'subset',
    'context_length',
    'depth_percent',
    'achieved_depth_percent',
    'prompt_tokens',
    'haystack_tokens',
    'needles',
    'question',
    'messages',
}


def _preview(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, '-m', 'evalscope_niah.cli', 'preview', *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_preview_limit_writes_only_the_first_samples(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    output = tmp_path / 'samples.jsonl'
    dataset_args = {
        'local_path': str(fixture_corpus_dir),
        'extra_params': {'context_lengths': [500, 900], 'document_depth_percents': [0, 50, 100]},
    }
    completed = _preview('--dataset-args', json.dumps(dataset_args), '--limit', '2', '--output', str(output))
    assert completed.returncode == 0, completed.stderr
    records = [json.loads(line) for line in output.read_text(encoding='utf-8').splitlines()]
    assert [(r['subset'], r['context_length'], r['depth_percent']) for r in records] == [
        ('english', 500, 0.0),
        ('english', 500, 50.0),
        ('chinese', 500, 0.0),
        ('chinese', 500, 50.0),
    ]
    for record in records:
        assert set(record) >= REQUIRED_FIELDS
        assert record['prompt_tokens'] == record['context_length']
        assert [message['role'] for message in record['messages']] == ['system', 'user']
        assert record['needles'][0] in record['messages'][1]['content']


def test_preview_to_stdout_with_subset(fixture_corpus_dir: Path) -> None:
    dataset_args = {'local_path': str(fixture_corpus_dir), 'extra_params': {'context_lengths': [400]}}
    completed = _preview('--dataset-args', json.dumps(dataset_args), '--subset', 'chinese', '--limit', '1')
    assert completed.returncode == 0, completed.stderr
    (record,) = [json.loads(line) for line in completed.stdout.splitlines()]
    assert record['subset'] == 'chinese' and record['context_length'] == 400


@pytest.mark.parametrize(
    ('arguments', 'fragment'),
    [
        (
            ['--dataset-args', '{"extra_params": {"context_lengths_min": 9, "context_lengths_max": 5}}'],
            'context_lengths_min',
        ),
        (['--dataset-args', '{"bogus": 1}'], "unknown key 'bogus'"),
        (['--dataset-args', '{"local_path": "/no/such/dir"}'], 'local_path'),
        (['--subset', 'klingon'], "unknown subset 'klingon'"),
        (['--limit', '0'], '--limit'),
        (['--dataset-args', '{"prompt_template": "no placeholders"}'], 'prompt_template'),
    ],
)
def test_preview_bad_input_is_one_clear_error(arguments: list[str], fragment: str, tmp_path: Path, capsys) -> None:
    output = tmp_path / 'out.jsonl'
    assert main(['preview', *arguments, '--output', str(output)]) == 2
    assert fragment in capsys.readouterr().err
    assert not output.exists() and list(tmp_path.iterdir()) == []


def test_preview_error_midway_leaves_no_file(fixture_corpus_dir: Path, tmp_path: Path, capsys) -> None:
    # The second length is too short to hold the prompt: found before anything is written.
    output = tmp_path / 'out.jsonl'
    dataset_args = {'local_path': str(fixture_corpus_dir), 'extra_params': {'context_lengths': [800, 60]}}
    assert main(['preview', '--dataset-args', json.dumps(dataset_args), '--output', str(output)]) == 2
    assert 'context_lengths' in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_plot_redraws_from_results(tmp_path: Path) -> None:
    report_dir = tmp_path / 'run' / 'reports' / 'model'
    results = [
        SampleResult(
            subset='english',
            context_length=length,
            depth_percent=depth,
            accuracy=1.0 if depth < 100 else 0.0,
            rule_recall=1.0,
            levenshtein=0.5,
            judge_accuracy=None,
            judge_status='not_called',
        )
        for length in (1000, 2000)
        for depth in (0.0, 100.0)
    ]
    write_results(report_dir / RESULTS_FILE, results)
    assert main(['plot', str(tmp_path / 'run'), '--show-score']) == 0
    assert (report_dir / 'needle_haystack_heatmap_english.png').read_bytes()[:4] == b'\x89PNG'
    assert (report_dir / 'needle_haystack_heatmap_english.html').is_file()


def test_plot_without_results_fails(tmp_path: Path, capsys) -> None:
    assert main(['plot', str(tmp_path)]) == 1
    assert RESULTS_FILE in capsys.readouterr().err
