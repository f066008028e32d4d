"""`evalscope-niah preview` run in this process, as the tests of tasks, parameters and bad input call it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalscope_niah.cli import main


def run_preview(capsys: pytest.CaptureFixture[str], dataset_args: dict[str, Any], *flags: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``preview --dataset-args <dataset_args> <flags>``."""
    code = main(['preview', '--dataset-args', json.dumps(dataset_args), *flags])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def preview_rows(dataset_args: dict[str, Any], output: Path) -> list[dict[str, Any]]:
    """The samples ``preview`` writes to ``output`` (JSON Lines), read back; the command must succeed."""
    assert main(['preview', '--dataset-args', json.dumps(dataset_args), '--output', str(output)]) == 0
    return [json.loads(line) for line in output.read_text(encoding='utf-8').splitlines()]
