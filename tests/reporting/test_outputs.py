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


def test_the_run_summary_is_computed_once_and_passed_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cells and the effective length (a bootstrap per subset) are computed once for every file and heatmap."""
    import json

    from evalscope_niah.reporting import outputs, result_files, stats
    from tests.support.results import curve

    calls = {'cells': 0, 'effective': 0}

    def counted(name: str, function):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(result_files, 'effective_context_length', counted('effective', stats.effective_context_length))
    monkeypatch.setattr(outputs, 'summarize_cells', counted('cells', stats.summarize_cells))
    outputs.write_run_outputs(tmp_path, curve(1.0, 0.9, 0.2), threshold=0.8, mode='absolute')
    assert calls == {'cells': 1, 'effective': 1}
    # The summary file still holds the effective length of the one subset.
    summary = json.loads((tmp_path / outputs.OutputFiles().summary).read_text(encoding='utf-8'))
    assert list(summary['effective_context_length']) == ['en']
