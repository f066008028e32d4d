"""`evalscope-niah doctor`: each check ok, a problem with its fix, or skipped with why (never ok); exit 1 on any
problem. It reads --dataset-args as eval does and refuses what eval would refuse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip('evalscope')

from evalscope_niah.cli import main
from evalscope_niah.making.tokenization import shipped_qwen3_dir
from evalscope_niah.testing.openai_server import OpenAICompatServer, needle_finder


def _doctor(capsys, *args: str) -> tuple[int, str]:
    code = main(['doctor', *args])
    return code, capsys.readouterr().out


def test_everything_in_place_is_ok(fixture_corpus_dir: Path, capsys) -> None:
    code, out = _doctor(
        capsys, '--dataset-args', json.dumps({'local_path': str(fixture_corpus_dir)}), '--judge', '{"strategy": "rule"}'
    )
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].startswith('ok') and 'evalscope: 1.14' in lines[0]
    assert any(line.startswith('ok') and '--datasets niah: evalscope-niah' in line for line in lines)
    assert any(line.startswith('ok') and 'corpus chinese' in line for line in lines)
    assert not any(line.startswith('problem') for line in lines)
    assert any(line.startswith('ok') and 'samples:' in line for line in lines)
    # No server given: the window is not checked, and says so instead of ok.
    assert 'skipped  model window: not checked: no --api-url' in out


def test_problems_name_their_fix_and_fail_the_command(fixture_corpus_dir: Path, tmp_path: Path, capsys) -> None:
    judge = {'models': [{'model_id': 'j', 'api_url': 'not a url'}]}
    code, out = _doctor(
        capsys, '--dataset-args', json.dumps({'local_path': str(tmp_path)}), '--judge', json.dumps(judge)
    )
    assert code == 1
    assert 'problem  corpus english' in out and 'not found' in out
    assert "problem  judge: 'j' has no http(s) api_url" in out
    assert out.count('fix:') >= 2


def test_no_judge_is_a_problem_before_any_run(capsys) -> None:
    code, out = _doctor(capsys)
    assert code == 1 and 'problem  judge: none configured' in out


def _state(out: str, name: str) -> str:
    [line] = [line for line in out.splitlines() if line.split(':')[0].split(maxsplit=1)[1:] == [name]]
    return line.split()[0]


@pytest.mark.parametrize('key', ['needle_haystack', 'niah'])
def test_the_keyed_form_is_read_as_eval_reads_it(key: str, tmp_path: Path, capsys) -> None:
    """The form `eval` takes, with a local_path that is not there and a length past what the corpus can fill:
    the corpus is a problem (it was read), and nothing that was not checked says ok."""
    dataset_args = {key: {'local_path': str(tmp_path / 'missing'), 'extra_params': {'context_lengths_max': 9999999}}}
    code, out = _doctor(capsys, '--dataset-args', json.dumps(dataset_args), '--judge', '{"strategy": "rule"}')
    assert code == 1, out
    assert _state(out, 'corpus') == 'problem' and 'missing' in out
    assert _state(out, 'samples') == 'skipped' and _state(out, 'model window') == 'skipped'
    assert 'no local_path' not in out


def test_a_length_the_corpus_cannot_fill_is_refused_as_eval_refuses_it(fixture_corpus_dir: Path, capsys) -> None:
    dataset_args = {
        'needle_haystack': {'local_path': str(fixture_corpus_dir), 'extra_params': {'context_lengths_max': 9999999}}
    }
    code, out = _doctor(capsys, '--dataset-args', json.dumps(dataset_args), '--judge', '{"strategy": "rule"}')
    assert code == 1, out
    assert _state(out, 'parameters') == 'ok' and _state(out, 'samples') == 'problem'
    assert 'max_corpus_repeats' in out, out


def test_keys_eval_refuses_are_problems(capsys) -> None:
    for dataset_args, named in (
        ({'needle_haystack': {'context_lengths': [1000]}}, 'put it under extra_params'),
        ({'needle_haystack': {'extra_params': {}, 'colour': 1}}, "unknown key 'colour'"),
        ({'needle_haystack': {'subset_list': ['english']}, 'niah': {'subset_list': ['chinese']}}, 'give one'),
    ):
        code, out = _doctor(capsys, '--dataset-args', json.dumps(dataset_args), '--judge', '{"strategy": "rule"}')
        assert code == 1 and _state(out, 'dataset_args') == 'problem' and named in out, out
        assert _state(out, 'tokenizer') == 'skipped'


def test_without_local_path_the_corpus_is_skipped_not_ok(capsys) -> None:
    code, out = _doctor(capsys, '--dataset-args', '{"needle_haystack": {}}', '--judge', '{"strategy": "rule"}')
    assert _state(out, 'corpus') == 'skipped' and 'no local_path' in out
    assert _state(out, 'samples') == 'skipped'
    assert code == 0  # nothing refused; the last line counts what was not checked
    assert out.splitlines()[-1].endswith('3 skipped'), out


def test_the_window_of_the_model_server_is_checked(fixture_corpus_dir: Path, capsys) -> None:
    """Against the test server with a small window: the longest length does not fit and is named; lengths that
    fit are ok. The only requests are to that server's window and tokenize routes (no completion)."""
    server = OpenAICompatServer(
        {'windowed': needle_finder}, api_style='vllm', tokenizer_dir=str(shipped_qwen3_dir()), context_window=1000
    )
    with server:
        for lengths, state in (([600, 2000], 'problem'), ([600], 'ok')):
            dataset_args = {'local_path': str(fixture_corpus_dir), 'extra_params': {'context_lengths': lengths}}
            code, out = _doctor(
                capsys, '--dataset-args', json.dumps(dataset_args), '--judge', '{"strategy": "rule"}',
                '--api-url', server.base_url, '--model', 'windowed', '--max-tokens', '100',
            )  # fmt: skip
            assert _state(out, 'model window') == state, out
            assert code == (1 if state == 'problem' else 0)
        assert server.requests_for('windowed') == []  # never a completion
    assert '[2000]' in out or 'fits 1000 tokens' in out
