"""outputs.py holds the one table of a run's file names: no other module of the package spells one out."""

from __future__ import annotations

from pathlib import Path

import pytest

import evalscope_niah
from evalscope_niah.reporting.outputs import OUTPUT_FILE_NAMES, RESULTS_FILE, OutputFiles, find_results_files

PACKAGE_DIR = Path(evalscope_niah.__file__).parent


def test_only_outputs_spells_out_a_file_name_of_the_run() -> None:
    spelled = {
        str(path.relative_to(PACKAGE_DIR)): [name for name in OUTPUT_FILE_NAMES if name in path.read_text('utf-8')]
        for path in PACKAGE_DIR.rglob('*.py')
        if path.name != 'outputs.py'
    }
    assert {module: names for module, names in spelled.items() if names} == {}


def test_each_benchmark_name_has_its_own_file_names() -> None:
    niah, default = OutputFiles('niah'), OutputFiles()
    assert default.results == RESULTS_FILE and niah.results == 'niah_results.jsonl'
    assert niah.heatmap_prefix == 'niah_heatmap' and niah.opencompass_summary_prefix == 'niah_summary_opencompass'
    niah_names = {niah.results, niah.cells, niah.summary, niah.judge_check}
    assert len(niah_names) == 4 and not niah_names & set(OUTPUT_FILE_NAMES)
    with pytest.raises(ValueError, match='output prefix'):
        OutputFiles('../elsewhere')


def test_results_files_of_either_name_are_found_and_named_back(tmp_path: Path) -> None:
    for prefix, model in (('needle_haystack', 'a'), ('niah', 'a'), ('niah', 'b')):
        report = tmp_path / 'reports' / model
        report.mkdir(parents=True, exist_ok=True)
        (report / OutputFiles(prefix).results).write_text('', encoding='utf-8')
    (tmp_path / 'reports' / 'a' / 'other_results.jsonl').write_text('', encoding='utf-8')
    found = find_results_files(tmp_path)
    assert [(path.parent.name, OutputFiles.of_results_file(path).prefix) for path in found] == [
        ('a', 'needle_haystack'),
        ('a', 'niah'),
        ('b', 'niah'),
    ]
    assert find_results_files(tmp_path / 'missing') == []
    with pytest.raises(ValueError, match='not a results file'):
        OutputFiles.of_results_file(tmp_path / 'reports' / 'a' / 'other_results.jsonl')
