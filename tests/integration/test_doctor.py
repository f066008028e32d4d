"""`evalscope-niah doctor`: offline checks, each ok or a problem with its fix; exit 1 on any problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip('evalscope')

from evalscope_niah.cli import main


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
