"""`evalscope-niah preview` and `plot` as a user runs them: real processes, real files."""

from __future__ import annotations

import csv
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from evalscope_niah.cli import main
from evalscope_niah.reporting.outputs import RESULTS_FILE
from evalscope_niah.reporting.result_files import read_results, write_results
from evalscope_niah.reporting.sample_record import SampleResult

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


@pytest.mark.parametrize('key', ['needle_haystack', 'niah'])
def test_preview_reads_the_keyed_form_as_eval_does(key: str, fixture_corpus_dir: Path) -> None:
    """The form `evalscope eval` takes gives the same samples as the entry alone."""
    entry = {'local_path': str(fixture_corpus_dir), 'extra_params': {'context_lengths': [400]}}
    outputs = []
    for dataset_args in (entry, {key: entry, 'gsm8k': {'few_shot_num': 0}}):
        completed = _preview('--dataset-args', json.dumps(dataset_args), '--subset', 'english', '--limit', '1')
        assert completed.returncode == 0, completed.stderr
        outputs.append(completed.stdout)
    assert outputs[0] == outputs[1] and json.loads(outputs[0])['context_length'] == 400


@pytest.mark.parametrize(
    ('arguments', 'fragment'),
    [
        (
            ['--dataset-args', '{"extra_params": {"context_lengths_min": 9, "context_lengths_max": 5}}'],
            'context_lengths_min',
        ),
        (['--dataset-args', '{"bogus": 1}'], "unknown key 'bogus'"),
        (['--dataset-args', '{"needle_haystack": {"bogus": 1}}'], "unknown key 'bogus'"),
        (
            ['--dataset-args', '{"needle_haystack": {"local_path": "/no/such/dir"}}'],
            "'/no/such/dir' is not a directory",
        ),
        (['--dataset-args', '{"needle_haystack": {}, "niah": {"subset_list": ["english"]}}'], 'give one of them'),
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


# --------------------------------------------------------------------------------------------------------------------
# plot: effective length, --csv; compare
# --------------------------------------------------------------------------------------------------------------------


def _result(subset: str, length: int, depth: float | None, accuracy: float) -> SampleResult:
    return SampleResult(
        subset=subset,
        context_length=length,
        depth_percent=depth,
        accuracy=accuracy,
        rule_recall=accuracy,
        levenshtein=None,
        judge_accuracy=None,
        judge_status='not_called',
        control=depth is None,
        task_values={'guessed': 0.0} if depth is None else {},
    )


def _write_run(work_dir: Path, model: str, good_up_to: dict[str, int], *, run: str = '20250101_000000') -> Path:
    """A finished run: accuracy 1 up to `good_up_to[subset]` tokens, 0 beyond, plus one control per length."""
    results = [
        _result(subset, length, depth, 1.0 if length <= limit else 0.0)
        for subset, limit in good_up_to.items()
        for length in (1000, 2000, 4000)
        for depth in (0.0, 50.0, 100.0, None)
    ]
    path = work_dir / run / 'reports' / model / RESULTS_FILE
    write_results(path, results)
    return path.parent


def test_plot_marks_effective_length_computed_or_stored(tmp_path: Path, capsys) -> None:
    from evalscope_niah.reporting.outputs import SUMMARY_FILE
    from evalscope_niah.reporting.result_files import read_results, write_summary_json
    from tests.support.results import EFFECTIVE_THRESHOLD, PASS_MARK

    report_dir = _write_run(tmp_path / 'run', 'model', {'english': 2000})
    assert main(['plot', str(tmp_path / 'run')]) == 0
    page = (report_dir / 'needle_haystack_heatmap_english.html').read_text(encoding='utf-8')
    assert 'effective context length: 2k' in page
    # A run that stored its summary (its own threshold and mode) is drawn with that, not recomputed.
    results = read_results(report_dir / RESULTS_FILE)
    summary = json.loads(
        write_summary_json(
            report_dir / SUMMARY_FILE, results, threshold=EFFECTIVE_THRESHOLD, pass_mark=PASS_MARK
        ).read_text(encoding='utf-8')
    )
    summary['effective_context_length']['english']['length'] = 1000
    (report_dir / SUMMARY_FILE).write_text(json.dumps(summary), encoding='utf-8')
    assert main(['plot', str(tmp_path / 'run')]) == 0
    page = (report_dir / 'needle_haystack_heatmap_english.html').read_text(encoding='utf-8')
    assert 'effective context length: 1k' in page
    # A stale summary naming a length this grid does not have is ignored, with a note.
    summary['effective_context_length']['english']['length'] = 8000
    (report_dir / SUMMARY_FILE).write_text(json.dumps(summary), encoding='utf-8')
    assert main(['plot', str(tmp_path / 'run')]) == 0
    assert 'ignoring' in capsys.readouterr().err
    page = (report_dir / 'needle_haystack_heatmap_english.html').read_text(encoding='utf-8')
    assert 'effective context length: 2k' in page
    # A stored bound is drawn as one; one naming an unknown length off this grid is stale like any other.
    summary['effective_context_length']['english'].update(
        length=1000, unknown_length=2000, unknown_reason='2 cut replies'
    )
    (report_dir / SUMMARY_FILE).write_text(json.dumps(summary), encoding='utf-8')
    assert main(['plot', str(tmp_path / 'run')]) == 0
    page = (report_dir / 'needle_haystack_heatmap_english.html').read_text(encoding='utf-8')
    assert 'effective context length: at least 1k; 2k unknown: 2 cut replies' in page
    summary['effective_context_length']['english']['unknown_length'] = 3000
    (report_dir / SUMMARY_FILE).write_text(json.dumps(summary), encoding='utf-8')
    assert main(['plot', str(tmp_path / 'run')]) == 0
    assert 'ignoring' in capsys.readouterr().err


@pytest.mark.parametrize(
    'arguments',
    [
        [],  # neither form
        ['WORK', '--csv', 'CSV'],  # both forms
        ['WORK', '--dataset-length', '4k'],  # --csv only options
        ['WORK', '--output-dir', 'OUT'],
    ],
)
def test_plot_requires_exactly_one_input_form(arguments: list[str], tmp_path: Path, capsys) -> None:
    _write_run(tmp_path / 'run', 'model', {'english': 2000})
    csv_path = tmp_path / 'summary.csv'
    csv_path.write_text('dataset,m\nLength1000Depth0_origin_en_4k,100.00\n', encoding='utf-8')
    replace = {'WORK': str(tmp_path / 'run'), 'CSV': str(csv_path), 'OUT': str(tmp_path / 'out')}
    assert main(['plot', *(replace.get(a, a) for a in arguments)]) == 2
    assert 'error' in capsys.readouterr().err
    assert not (tmp_path / 'out').exists()


OPENCOMPASS_SUMMARY = """\
dataset,version,metric,mode,internlm2-chat-7b,qwen/qwen-7b
Length1000Depth0_origin_en_4k,a1b2c3,score,gen,100.00,90.00
Length4000Depth0_origin_en_4k,a1b2c3,score,gen,50.00,-
Length1000Depth0_origin_zh_4k,a1b2c3,score,gen,70.00,60.00
Length16000Depth0_origin_en_200k,d4e5f6,score,gen,33.33,20.00
Length200000Depth100_origin_en_200k,d4e5f6,score,gen,12.50,0.00
"""


def test_plot_from_opencompass_csv(tmp_path: Path, capsys) -> None:
    csv_path = tmp_path / 'summary.csv'
    csv_path.write_text(OPENCOMPASS_SUMMARY, encoding='utf-8')
    assert main(['plot', '--csv', str(csv_path), '--show-score']) == 0
    names = sorted(p.name for p in tmp_path.iterdir() if p.suffix in ('.png', '.html'))
    assert names == [
        f'needle_haystack_heatmap_{model}_{subset}.{ext}'
        for model in ('internlm2-chat-7b', 'qwen_qwen-7b')  # '/' is not a file-name character
        for subset in ('origin_en', 'origin_zh')
        for ext in ('html', 'png')
    ]
    assert capsys.readouterr().out.count('\n') == len(names)
    page = (tmp_path / 'needle_haystack_heatmap_qwen_qwen-7b_origin_en.html').read_text(encoding='utf-8')
    assert '<h1>qwen/qwen-7b</h1>' in page
    assert '>0.90<' in page  # 90.00 in the CSV is 0.90 on our 0-1 scale
    with Image.open(tmp_path / 'needle_haystack_heatmap_internlm2-chat-7b_origin_en.png') as image:
        assert image.format == 'PNG' and image.width > 500


def test_plot_from_opencompass_csv_by_dataset_length(tmp_path: Path, capsys) -> None:
    csv_path = tmp_path / 'summary.csv'
    csv_path.write_text(OPENCOMPASS_SUMMARY, encoding='utf-8')
    out = tmp_path / 'plots' / '200k'
    assert main(['plot', '--csv', str(csv_path), '--dataset-length', '200K', '--output-dir', str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        'needle_haystack_heatmap_internlm2-chat-7b_origin_en.html',
        'needle_haystack_heatmap_internlm2-chat-7b_origin_en.png',
        'needle_haystack_heatmap_qwen_qwen-7b_origin_en.html',
        'needle_haystack_heatmap_qwen_qwen-7b_origin_en.png',
    ]
    page = (out / 'needle_haystack_heatmap_internlm2-chat-7b_origin_en.html').read_text(encoding='utf-8')
    assert [label in page for label in ('>16k<', '>200k<', '>1k<')] == [True, True, False]
    capsys.readouterr()
    assert main(['plot', '--csv', str(csv_path), '--dataset-length', '128k', '--output-dir', str(out / 'x')]) == 1
    err = capsys.readouterr().err
    assert '128k' in err and 'dataset lengths present: 4k, 200k' in err
    assert not (out / 'x').exists()


def test_plot_csv_refuses_two_models_sharing_file_names(tmp_path: Path, capsys) -> None:
    first, second = tmp_path / 'a.csv', tmp_path / 'b.csv'
    first.write_text('dataset,m/x\nLength1000Depth0_origin_en_4k,100.00\n', encoding='utf-8')
    second.write_text('dataset,m_x\nLength1000Depth0_origin_en_4k,50.00\n', encoding='utf-8')
    assert main(['plot', '--csv', str(first), str(second)]) == 1
    assert 'share the file names' in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ['a.csv', 'b.csv']  # nothing half-drawn


def test_plot_from_our_cells_csv_and_missing_csv(tmp_path: Path, capsys) -> None:
    from evalscope_niah.reporting.outputs import CELLS_FILE
    from evalscope_niah.reporting.result_files import read_results, write_cells_csv
    from evalscope_niah.reporting.stats import summarize_cells

    report_dir = _write_run(tmp_path / 'run', 'my-model', {'english': 2000})
    cells_csv = write_cells_csv(report_dir / CELLS_FILE, summarize_cells(read_results(report_dir / RESULTS_FILE)))
    assert main(['plot', '--csv', str(cells_csv), '--output-dir', str(tmp_path / 'out')]) == 0
    assert (tmp_path / 'out' / 'needle_haystack_heatmap_my-model_english.png').is_file()
    assert main(['plot', '--csv', str(tmp_path / 'nope.csv')]) == 1
    assert 'nope.csv' in capsys.readouterr().err


def test_compare_two_work_dirs_with_the_same_model_id(tmp_path: Path, monkeypatch, capsys) -> None:
    _write_run(tmp_path / 'run-a', 'qwen', {'english': 4000, 'chinese': 1000})
    _write_run(tmp_path / 'run-b', 'qwen', {'english': 2000})
    _write_run(tmp_path / 'run-b', 'llama', {'english': 0, 'chinese': 4000}, run='20250102_000000')
    monkeypatch.chdir(tmp_path)
    assert main(['compare', 'run-a', 'run-b']) == 0
    out = capsys.readouterr().out.splitlines()
    # Default output: compare.png (+ compare.csv) in the current directory.
    assert out[-2:] == ['compare.png', 'compare.csv']
    with Image.open(tmp_path / 'compare.png') as image:
        assert image.format == 'PNG' and image.width > image.height  # 3 model columns x 2 subset rows
    table = out[:-2]
    assert table[0].startswith('effective context length (absolute')
    assert table[1].split() == ['model', 'chinese', 'english']
    rows = {line.split('  ')[0]: line.split() for line in table[2:]}
    assert set(rows) == {'qwen (run-a)', 'qwen (run-b)', 'llama'}
    assert rows['qwen (run-a)'][-6:] == ['1k', '[1k,', '1k]', '4k', '[4k,', '4k]']
    assert rows['qwen (run-b)'][-4:] == ['n/a', '2k', '[2k,', '2k]']  # no chinese subset in that run
    assert rows['llama'][-6:] == ['4k', '[4k,', '4k]', 'none', '[none,', 'none]']
    with open(tmp_path / 'compare.csv', encoding='utf-8', newline='') as handle:
        records = list(csv.DictReader(handle))
    assert [(r['model'], r['subset'], r['effective_length']) for r in records] == [
        ('qwen (run-a)', 'chinese', '1000'),
        ('qwen (run-a)', 'english', '4000'),
        ('qwen (run-b)', 'english', '2000'),  # runs in the order found: work dir, then path
        ('llama', 'chinese', '4000'),
        ('llama', 'english', ''),
    ]


def test_compare_output_threshold_and_mode(tmp_path: Path, capsys) -> None:
    _write_run(tmp_path / 'run', 'm', {'english': 2000})
    output = tmp_path / 'new' / 'dir' / 'models.png'
    assert (
        main(['compare', str(tmp_path / 'run'), '--output', str(output), '--mode', 'relative', '--threshold', '0.5'])
        == 0
    )
    assert output.is_file() and (output.parent / 'models.csv').is_file()
    assert 'effective context length (relative' in capsys.readouterr().out
    with open(output.parent / 'models.csv', encoding='utf-8', newline='') as handle:
        (record,) = csv.DictReader(handle)
    assert (record['mode'], record['threshold'], record['base_score'], record['effective_length']) == (
        'relative',
        '0.5',
        '1.0',
        '2000',
    )


def test_compare_errors(tmp_path: Path, capsys) -> None:
    _write_run(tmp_path / 'run', 'm', {'english': 2000})
    (tmp_path / 'empty').mkdir()
    assert main(['compare', str(tmp_path / 'run'), str(tmp_path / 'empty'), '--output', str(tmp_path / 'c.png')]) == 1
    err = capsys.readouterr().err
    assert str(tmp_path / 'empty') in err and RESULTS_FILE in err and str(tmp_path / 'run') + ',' not in err
    assert not (tmp_path / 'c.png').exists()
    assert main(['compare', str(tmp_path / 'run'), '--threshold', '1.5', '--output', str(tmp_path / 'c.png')]) == 2
    assert '--threshold' in capsys.readouterr().err
    assert not (tmp_path / 'c.png').exists()


def test_plot_can_label_lengths_in_the_tokens_the_model_read(tmp_path: Path) -> None:
    from evalscope_niah.reporting.length_status import EffectiveBound
    from evalscope_niah.reporting.outputs import RESULTS_FILE as RESULTS
    from evalscope_niah.reporting.outputs import in_served_tokens

    report_dir = tmp_path / 'reports' / 'm'
    report_dir.mkdir(parents=True)
    results = [
        SampleResult(
            subset='chinese', context_length=length, depth_percent=depth, accuracy=1.0, rule_recall=1.0,
            levenshtein=1.0, judge_accuracy=None, judge_status='not_called', served_prompt_tokens=served,
        )
        for length, served in ((1000, 2180), (2000, 4350))
        for depth in (0.0, 100.0)
    ]  # fmt: skip
    write_results(report_dir / RESULTS, results)
    relabelled, effective = in_served_tokens(results, {'chinese': 2000})
    assert sorted({r.context_length for r in relabelled}) == [2180, 4350] and effective == {
        'chinese': EffectiveBound(4350)
    }
    # A bound's unknown length is relabelled too.
    _, bound = in_served_tokens(results, {'chinese': EffectiveBound(1000, 2000, '2 server errors')})
    assert bound == {'chinese': EffectiveBound(2180, 4350, '2 server errors')}
    assert main(['plot', str(tmp_path), '--served-tokens']) == 0
    html = (report_dir / 'needle_haystack_heatmap_served_chinese.html').read_text(encoding='utf-8')
    # The chinese subset's page says so in Chinese (the English subset's: 'tokens the model read').
    assert '大海捞针（按模型读入的 token 计）' in html and '2,180' in html and '4,350' in html
    assert '上下文长度（模型读入的 token）' in html
    assert (report_dir / 'needle_haystack_heatmap_served_chinese.png').is_file()


def test_plot_names_the_tokenizer_that_counted_and_served_tokens_say_so(tmp_path: Path) -> None:
    report_dir = _write_run(tmp_path / 'run', 'model', {'english': 2000})
    results = [dataclasses.replace(r, tokenizer='Qwen/Qwen3-0.6B') for r in read_results(report_dir / RESULTS_FILE)]
    write_results(report_dir / RESULTS_FILE, results)
    assert main(['plot', str(tmp_path / 'run')]) == 0
    page = (report_dir / 'needle_haystack_heatmap_english.html').read_text(encoding='utf-8')
    assert 'Context length (Qwen3 tokens)' in page
    served = [dataclasses.replace(r, served_prompt_tokens=r.context_length + 7) for r in results]
    write_results(report_dir / RESULTS_FILE, served)
    assert main(['plot', str(tmp_path / 'run'), '--served-tokens']) == 0
    page = (report_dir / 'needle_haystack_heatmap_served_english.html').read_text(encoding='utf-8')
    assert 'Context length (served tokens)' in page  # the server's own count, not Qwen3's any more
    assert 'Needle in a haystack (tokens the model read)' in page
