"""`evalscope-niah demo`: the whole job on the real local model, and against any OpenAI-compatible endpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalscope_niah.demo import DemoOptions, run_demo
from evalscope_niah.errors import NiahConfigError
from evalscope_niah.results import RESULTS_FILE, read_results
from tests.support.openai_server import OpenAICompatServer, needle_finder


@pytest.mark.parametrize(
    ('options', 'param'),
    [
        (DemoOptions(api_url='http://127.0.0.1:9/v1'), '--api-url/--model'),
        (DemoOptions(subsets=['klingon']), '--subset'),
        (DemoOptions(context_lengths=[9000]), '--lengths'),
    ],
)
def test_bad_options_fail_before_anything_starts(options: DemoOptions, param: str) -> None:
    with pytest.raises(NiahConfigError) as error:
        run_demo(options, say=lambda line: None)
    assert error.value.param == param


def test_demo_against_another_endpoint_prints_cells(tmp_path: Path) -> None:
    lines: list[str] = []
    with OpenAICompatServer({'remote': needle_finder}) as server:
        options = DemoOptions(
            api_url=server.base_url,
            model='remote',
            judge='rule',
            context_lengths=[500, 800],
            depth_percents=[0.0, 100.0],
            work_dir=tmp_path,
        )
        report_dir = run_demo(options, say=lines.append)
        assert len(server.requests_for('remote')) == 8
    output = '\n'.join(lines)
    assert 'judge: the rule score' in output
    assert 'english: accuracy 1.00' in output and 'chinese: accuracy 1.00' in output
    assert (report_dir / 'needle_haystack_heatmap_english.png').is_file()


@pytest.mark.slow
def test_demo_on_the_real_local_model(tmp_path: Path) -> None:
    """SmolLM2-135M through llama.cpp, judged by itself (JSON-constrained): real answers, parsed verdicts."""
    lines: list[str] = []
    options = DemoOptions(context_lengths=[400], depth_percents=[0.0, 100.0], subsets=['english'], work_dir=tmp_path)
    report_dir = run_demo(options, say=lines.append)
    results = read_results(report_dir / RESULTS_FILE)
    assert [(r.context_length, r.depth_percent) for r in results] == [(400, 0.0), (400, 100.0)]
    # The constrained judge always returns a verdict; whatever it thinks, it is parsed, not a failure.
    assert all(result.judge_status == 'ok' for result in results)
    assert all(result.accuracy is not None and 0.0 <= result.accuracy <= 1.0 for result in results)
    output = '\n'.join(lines)
    assert 'judge: the same model (smollm2-135m-instruct)' in output
    assert 'heatmap:' in output
