"""`evalscope-niah demo`: the whole job on the real local model, and against any OpenAI-compatible endpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalscope_niah.demo import DemoOptions, run_demo
from evalscope_niah.errors import NiahConfigError
from evalscope_niah.reporting.outputs import RESULTS_FILE
from evalscope_niah.reporting.result_files import read_results
from evalscope_niah.testing.openai_server import OpenAICompatServer, needle_finder


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
    assert 'depth % \\ Qwen3 tokens' in output  # another endpoint: lengths counted by the default Qwen3 tokenizer
    assert (report_dir / 'needle_haystack_heatmap_english.png').is_file()


def test_a_stopped_demo_resumes_with_use_cache(tmp_path: Path) -> None:
    """The Ctrl-C line says 'Resume with --use-cache DIR': the demo takes it, and the finished answers are not asked
    again."""
    from evalscope_niah.cli_args import build_parser

    with OpenAICompatServer({'remote': needle_finder}) as server:
        options = DemoOptions(
            api_url=server.base_url, model='remote', judge='rule', context_lengths=[500], depth_percents=[0.0],
            subsets=['english'], work_dir=tmp_path / 'first',
        )  # fmt: skip
        first = run_demo(options, say=lambda line: None)
        asked = len(server.requests_for('remote'))
        output_dir = first.parents[1]  # <work dir>/<run>/reports/<model>: the run's folder, as the Ctrl-C line names
        flags = ['demo', '--api-url', server.base_url, '--model', 'remote', '--use-cache', str(output_dir)]
        parsed = build_parser(dict.fromkeys(('preview', 'plot', 'compare', 'demo', 'doctor')), description='')
        assert parsed.parse_args(flags).use_cache == output_dir
        again = run_demo(
            DemoOptions(**{**options.__dict__, 'work_dir': tmp_path / 'second', 'use_cache': output_dir}),
            say=lambda line: None,
        )
        assert asked == 1 and len(server.requests_for('remote')) == asked  # nothing re-asked
    assert read_results(again / RESULTS_FILE) == read_results(first / RESULTS_FILE)


def _verbose_finder(messages: list[dict]) -> str:
    """A model that answers the way instruction-tuned models do: a preamble, the quoted needle, an explanation and
    a closing remark (about 80 words), far longer than the needle."""
    needle = needle_finder(messages)
    if any('\u4e00' <= char <= '\u9fff' for char in needle):
        return (
            f'根据文档，答案就在这句话里：“{needle}”这句话直接回答了你的问题。文档的其余部分讲的是别的内容，'
            '比如西天取经路上的种种故事，与这个问题关系不大，所以答案就是上面这句话所说的。希望这对你有帮助！'
        )
    return (
        f'Based on the document, here is the answer. The relevant passage states: "{needle}" This sentence answers '
        'your question directly. The rest of the document is about other subjects entirely, such as essays on '
        'startups, programming languages and how to do great work, so it is the only information that bears on your '
        'question. I hope this helps!'
    )


def test_demo_scores_a_verbose_right_answer_as_right(tmp_path: Path) -> None:
    lines: list[str] = []
    with OpenAICompatServer({'remote': _verbose_finder}) as server:
        options = DemoOptions(
            api_url=server.base_url,
            model='remote',
            judge='rule',
            context_lengths=[500],
            depth_percents=[0.0, 100.0],
            work_dir=tmp_path,
        )
        run_demo(options, say=lines.append)
    output = '\n'.join(lines)
    assert 'english: accuracy 1.00' in output and 'chinese: accuracy 1.00' in output, output


def _states_the_fact(answer: str, subset: str) -> bool:
    """Read by a person's standard, independently of the rule scorer: the needle's key fact is in the answer."""
    if subset == 'english':
        return 'sandwich' in answer.lower() and 'dolores park' in answer.lower()
    return '上海人工智能实验室' in answer


@pytest.mark.slow
def test_demo_on_the_real_local_model(tmp_path: Path) -> None:
    """SmolLM2-135M through llama.cpp, both subsets, judged by itself: the judge check runs and is printed, the
    subsets are scored (by rule when the judge fails its check), and the printed table agrees with the answers."""
    lines: list[str] = []
    options = DemoOptions(context_lengths=[300, 600], depth_percents=[0.0, 100.0], work_dir=tmp_path)
    report_dir = run_demo(options, say=lines.append)
    output = '\n'.join(lines)
    results = read_results(report_dir / RESULTS_FILE)
    assert {(r.subset, r.context_length, r.depth_percent) for r in results} == {
        (subset, length, depth) for subset in ('english', 'chinese') for length in (300, 600) for depth in (0.0, 100.0)
    }
    for subset in ('english', 'chinese'):
        check = next(line for line in lines if line.startswith(f'judge check ({subset}):'))
        if 'NOT qualified' in check:
            assert all(r.scoring == 'rule_fallback' for r in results if r.subset == subset and r.accuracy is not None)
    assert '(scored by rule: the judge failed qualification)' in output or 'NOT qualified' not in output
    # Lengths are the model's own tokens: the server read exactly what each cell says.
    assert all(r.served_prompt_tokens == r.context_length for r in results)
    assert 'depth % \\ smollm2-135m tokens' in output  # and the table says so, with the served model's name
    scored = [r for r in results if r.accuracy is not None]
    assert any(r.subset == 'english' for r in scored)
    agree = [(r.accuracy >= 0.5) == _states_the_fact(r.answer or '', r.subset) for r in scored]
    assert sum(agree) >= 0.9 * len(agree), [(r.subset, r.accuracy, r.answer) for r in scored]
    # The printed table holds each cell's mean accuracy, as the results file has it.
    for subset in ('english', 'chinese'):
        table = output.split(f'subset: {subset}\n', 1)[1].split('\n')[1:3]
        for row, depth in zip(table, (0.0, 100.0), strict=True):
            for length, shown in zip((300, 600), row.split()[1:], strict=True):
                cell = [
                    r.accuracy
                    for r in scored
                    if (r.subset, r.context_length, r.depth_percent) == (subset, length, depth)
                ]
                assert shown == (f'{sum(cell) / len(cell):.2f}' if cell else '—')
    assert 'heatmap:' in output
