"""`evalscope-niah plot` / `compare` on hostile results files: one clear error naming the file and line for a
malformed row, memory bounded per line, grids too large to draw refused, and model text escaped in the HTML."""

from __future__ import annotations

import json
import math
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from evalscope_niah.cli import main
from evalscope_niah.reporting.outputs import RESULTS_FILE
from evalscope_niah.reporting.result_files import (
    MAX_DRAWN_LENGTHS,
    MAX_RESULT_LINE_BYTES,
    read_results,
    read_results_to_draw,
)

ROW = {
    'subset': 'english',
    'context_length': 600,
    'depth_percent': 0.0,
    'accuracy': 1.0,
    'rule_recall': 1.0,
    'levenshtein': 1.0,
    'judge_accuracy': None,
    'judge_status': 'not_called',
}


def _run_dir(root: Path, lines: list[str] | bytes) -> Path:
    """A work dir holding one results file with ``lines`` (or raw bytes)."""
    report = root / 'run' / 'reports' / 'model'
    report.mkdir(parents=True)
    data = lines if isinstance(lines, bytes) else ''.join(line + '\n' for line in lines).encode('utf-8')
    (report / RESULTS_FILE).write_bytes(data)
    return root / 'run'


def _both(run: Path, tmp_path: Path) -> list[int]:
    return [main(['plot', str(run)]), main(['compare', str(run), '--output', str(tmp_path / 'compare.png')])]


@pytest.mark.parametrize(
    ('bad_row', 'fragment'),
    [
        ({**ROW, 'accuracy': math.nan}, 'accuracy must be in [0, 1] or None, got nan'),
        ({**ROW, 'accuracy': 1e308}, 'accuracy must be in [0, 1] or None'),
        ({**ROW, 'context_length': 10**300}, 'context_length must be from 1 to 100000000'),
        ({**ROW, 'served_prompt_tokens': 10**15}, 'served_prompt_tokens must be an int from 0 to 100000000'),
        ({k: v for k, v in ROW.items() if k != 'accuracy'}, 'missing SampleResult field: accuracy'),
        ({**ROW, 'subset': ['english']}, 'subset must be a string'),
        ({**ROW, 'x' * 100_000: 1}, 'unknown SampleResult fields'),
        ([1, 2, 3], 'expected a JSON object'),
    ],
    ids=['nan', 'huge-float', 'huge-int', 'huge-served', 'missing', 'list-subset', 'huge-key', 'not-object'],
)
def test_a_malformed_row_is_one_error_naming_file_and_line(
    bad_row: Any, fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run_dir(tmp_path, [json.dumps(ROW), json.dumps(bad_row)])
    assert _both(run, tmp_path) == [1, 1]
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2, errors  # one line each, no traceback
    for line in errors:
        assert f'{RESULTS_FILE}:2: invalid result line' in line and fragment in line
        assert len(line) < 600  # a hostile value is cut, never echoed whole
    assert not list(run.rglob('*.png')) and not (tmp_path / 'compare.png').exists()


def test_bytes_that_are_not_utf8_name_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_dir(tmp_path, json.dumps(ROW).encode() + b'\n{"subset": "\xff\xfe"}\n')
    assert _both(run, tmp_path) == [1, 1]
    assert capsys.readouterr().err.count(f'{RESULTS_FILE}:2: invalid result line: not UTF-8') == 2


def test_a_huge_line_is_refused_before_it_is_read_whole(tmp_path: Path) -> None:
    line = json.dumps({**ROW, 'answer': 'x' * (20 * MAX_RESULT_LINE_BYTES)})
    run = _run_dir(tmp_path, [json.dumps(ROW), line])
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=rf':2: invalid result line: longer than {MAX_RESULT_LINE_BYTES} bytes'):
            read_results(next(run.rglob(RESULTS_FILE)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * MAX_RESULT_LINE_BYTES  # a bounded piece of the 20 MB line, not the line


def test_a_grid_too_large_to_draw_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [json.dumps({**ROW, 'context_length': 100 + i}) for i in range(MAX_DRAWN_LENGTHS + 1)]
    run = _run_dir(tmp_path, rows)
    results_file = next(run.rglob(RESULTS_FILE))
    assert len(read_results(results_file)) == len(rows)  # a valid file: only drawing it is refused
    with pytest.raises(ValueError, match=f"subset 'english' holds {MAX_DRAWN_LENGTHS + 1} context lengths"):
        read_results_to_draw(results_file)
    assert _both(run, tmp_path) == [1, 1]
    assert capsys.readouterr().err.count(f'a heatmap draws at most {MAX_DRAWN_LENGTHS} lengths') == 2


def test_100k_rows_with_script_tags_draw_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hostile = '</script><script>alert(1)</script>'
    rows = [
        json.dumps(
            {
                **ROW,
                'subset': hostile,
                'context_length': 1000 * (1 + i % 10),
                'depth_percent': float(10 * (i // 10 % 11)),
                'accuracy': float(i % 3 == 0),
                'answer': hostile,
            }
        )
        for i in range(100_000)
    ]
    run = _run_dir(tmp_path, rows)
    assert main(['plot', str(run)]) == 0
    (html_file,) = run.rglob('*.html')
    html = html_file.read_text(encoding='utf-8')
    assert '<script>alert' not in html and '&lt;/script&gt;&lt;script&gt;alert(1)' in html
    assert html.count('</script>') == html.count('<script')  # only the page's own script tags
    assert main(['compare', str(run), '--output', str(tmp_path / 'compare.png')]) == 0
    assert (tmp_path / 'compare.csv').is_file()
