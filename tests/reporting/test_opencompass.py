"""Behavioural tests for evalscope_niah.reporting.opencompass: OpenCompass summary CSVs, ours and theirs."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from evalscope_niah.reporting.opencompass import read_summary_csv, write_opencompass_summary
from evalscope_niah.reporting.outputs import CELLS_FILE, opencompass_summary_file, write_opencompass_summaries
from evalscope_niah.reporting.result_files import write_cells_csv
from evalscope_niah.reporting.stats import (
    CellSummary,
    summarize_cells,
)
from tests.support.results import at_length, control, errored, sample

# --------------------------------------------------------------------------------------------------------------------
# OpenCompass NeedleBench / CDME summary CSV
# --------------------------------------------------------------------------------------------------------------------

# What OpenCompass' NeedleBench summarizer writes: four meta columns, scores in 0-100 with two decimals, '-' for a
# missing result, group-average rows and a header repeated after a dataset that has no result.
OPENCOMPASS_CSV = """\
dataset,version,metric,mode,internlm2-chat-7b,qwen-7b-chat
Length1000Depth0_origin_en_4k,a1b2c3,score,gen,100.00,90.00
Length1000Depth50_origin_en_4k,a1b2c3,score,gen,80.00,-
Length4000Depth0_origin_en_4k,a1b2c3,score,gen,50.00,40.00
Length4000Depth50_origin_en_4k,a1b2c3,score,gen,0.00,10.00
Length1000Depth0_origin_zh_4k,a1b2c3,score,gen,70.00,60.00
Single-Needle-Retrieval(S-RT)-4K,-,naive_average,gen,60.00,50.00
Length16000Depth0_origin_en_200k,d4e5f6,score,gen,33.33,-
Length200000Depth100_origin_en_200k,d4e5f6,score,gen,12.50,-
Length99000Depth0_origin_en_999k,-,-,-,-,-
dataset,version,metric,mode,internlm2-chat-7b,qwen-7b-chat
"""


def write_opencompass_csv(tmp_path: Path, text: str = OPENCOMPASS_CSV) -> Path:
    path = tmp_path / 'summary_20240101_000000.csv'
    path.write_text(text, encoding='utf-8')
    return path


def by_key(cells: list[CellSummary]) -> dict[tuple[str, int, float], float | None]:
    return {(c.subset, c.context_length, c.depth_percent): c.accuracy for c in cells}


def test_read_opencompass_summary_csv(tmp_path: Path) -> None:
    models = read_summary_csv(write_opencompass_csv(tmp_path))
    assert list(models) == ['internlm2-chat-7b', 'qwen-7b-chat']
    intern = by_key(models['internlm2-chat-7b'])
    assert intern == {
        ('origin_en', 1000, 0.0): 1.0,
        ('origin_en', 1000, 50.0): 0.8,
        ('origin_en', 4000, 0.0): 0.5,
        ('origin_en', 4000, 50.0): 0.0,
        ('origin_en', 16000, 0.0): pytest.approx(0.3333),
        ('origin_en', 200000, 100.0): 0.125,
        ('origin_zh', 1000, 0.0): 0.7,
    }
    # '-' is no result, not zero; the group-average row and the repeated header are not cells.
    assert ('origin_en', 1000, 50.0) not in by_key(models['qwen-7b-chat'])
    assert len(models['qwen-7b-chat']) == 4
    cell = models['qwen-7b-chat'][0]
    assert (cell.n, cell.ci_low, cell.ci_high, cell.errors) == (1, None, None, 0)
    # Cells come sorted, ready for cell_grid / plot_all.
    keys = [(c.subset, c.context_length, c.depth_percent) for c in models['internlm2-chat-7b']]
    assert keys == sorted(keys)


@pytest.mark.parametrize(('size', 'lengths'), [('200K', {16000, 200000}), ('4k', {1000, 4000}), ('4K', {1000, 4000})])
def test_read_opencompass_csv_filters_by_dataset_length(tmp_path: Path, size: str, lengths: set[int]) -> None:
    cells = read_summary_csv(write_opencompass_csv(tmp_path), dataset_length=size)['internlm2-chat-7b']
    assert {c.context_length for c in cells} == lengths


def test_read_opencompass_csv_unknown_dataset_length_lists_those_present(tmp_path: Path) -> None:
    path = write_opencompass_csv(tmp_path)
    with pytest.raises(ValueError, match=r'dataset lengths present: 4k, 200k, 999k'):
        read_summary_csv(path, dataset_length='128k')
    with pytest.raises(ValueError, match='dataset_length'):
        read_summary_csv(path, dataset_length='lots')


def test_dataset_length_matches_by_value(tmp_path: Path) -> None:
    text = 'dataset,version,metric,mode,m\nLength1000000Depth0_origin_en_1000k,-,score,gen,100.00\n'
    path = write_opencompass_csv(tmp_path, text)
    assert len(read_summary_csv(path, dataset_length='1M')['m']) == 1


def test_read_newer_opencompass_layout_without_meta_columns(tmp_path: Path) -> None:
    # Newer NeedleBench summarizers keep only the dataset column before the models; old CDME names have a prefix.
    text = 'dataset,glm-4\nCDME_Length1000Depth0,100.00\nCDME_Length1000Depth12.5,25.00\n'
    models = read_summary_csv(write_opencompass_csv(tmp_path, text))
    assert by_key(models['glm-4']) == {('CDME', 1000, 0.0): 1.0, ('CDME', 1000, 12.5): 0.25}


def test_read_opencompass_csv_rejects_overlapping_suites_and_bad_scores(tmp_path: Path) -> None:
    overlapping = (
        'dataset,version,metric,mode,m\n'
        'Length16000Depth0_origin_en_128k,-,score,gen,100.00\n'
        'Length16000Depth0_origin_en_200k,-,score,gen,90.00\n'
    )
    path = write_opencompass_csv(tmp_path, overlapping)
    with pytest.raises(ValueError, match=r'two scores.*128k, 200k'):
        read_summary_csv(path)
    assert by_key(read_summary_csv(path, dataset_length='200k')['m']) == {('origin_en', 16000, 0.0): 0.9}
    for score in ('150.00', 'abc', 'nan'):
        bad = f'dataset,version,metric,mode,m\nLength1000Depth0_origin_en_4k,-,score,gen,{score}\n'
        with pytest.raises(ValueError, match=':2:'):
            read_summary_csv(write_opencompass_csv(tmp_path, bad))
    with pytest.raises(ValueError, match='neither'):
        read_summary_csv(write_opencompass_csv(tmp_path, 'foo,bar\n1,2\n'))
    with pytest.raises(ValueError, match='no NeedleBench cell rows'):
        read_summary_csv(write_opencompass_csv(tmp_path, 'dataset,version,metric,mode,m\nmmlu,-,acc,gen,50\n'))


def test_opencompass_summaries_one_file_per_subset(tmp_path: Path) -> None:
    results = [
        *at_length(1000, [1.0, 1.0, 0.0]),  # depths 0, 50, 100
        sample(1 / 3, context_length=128000, depth_percent=33.333333333333336),
        errored(context_length=128000, depth_percent=100.0),  # no score: no row
        sample(1.0, subset='zh', context_length=500, depth_percent=0.0),
        control(1.0),  # controls are not cells
    ]
    paths = write_opencompass_summaries(tmp_path, summarize_cells(results), model='my-model')
    assert [p.name for p in paths] == [
        'needle_haystack_summary_opencompass_en.csv',
        'needle_haystack_summary_opencompass_zh.csv',
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in paths]  # no temp files left
    assert paths[0].read_text(encoding='utf-8').splitlines() == [
        'dataset,version,metric,mode,my-model',
        'Length1000Depth0_en_128k,,score,gen,100.00',
        'Length1000Depth50_en_128k,,score,gen,100.00',
        'Length1000Depth100_en_128k,,score,gen,0.00',
        'Length128000Depth33.33_en_128k,,score,gen,33.33',
    ]
    assert paths[1].read_text(encoding='utf-8').splitlines() == [
        'dataset,version,metric,mode,my-model',
        'Length500Depth0_zh_0.5k,,score,gen,100.00',
    ]
    back = read_summary_csv(paths[0])
    assert list(back) == ['my-model']
    assert by_key(back['my-model']) == {
        ('en', 1000, 0.0): 1.0,
        ('en', 1000, 50.0): 1.0,
        ('en', 1000, 100.0): 0.0,
        ('en', 128000, 33.33): pytest.approx(0.3333),
    }
    assert by_key(read_summary_csv(paths[1], dataset_length='0.5k')['my-model']) == {('zh', 500, 0.0): 1.0}


def test_opencompass_summary_refuses_two_subsets_and_colliding_names(tmp_path: Path) -> None:
    cells = summarize_cells([sample(1.0), sample(1.0, subset='zh')])
    with pytest.raises(ValueError, match='one subset per OpenCompass summary'):
        write_opencompass_summary(tmp_path / 'x.csv', cells, model='m')
    with pytest.raises(ValueError, match='model'):
        write_opencompass_summary(tmp_path / 'x.csv', cells[:1], model='')
    clash = summarize_cells([sample(1.0, subset='a b'), sample(1.0, subset='a/b')])
    with pytest.raises(ValueError, match='collide'):
        write_opencompass_summaries(tmp_path, clash, model='m')
    assert list(tmp_path.iterdir()) == []
    assert opencompass_summary_file('../../etc') == 'needle_haystack_summary_opencompass_.._.._etc.csv'


def test_old_combined_summary_still_reads(tmp_path: Path) -> None:
    # What runs before per-subset files wrote: all subsets in one file, '-' where a cell had no score.
    path = tmp_path / 'needle_haystack_summary_opencompass.csv'
    path.write_text(
        'dataset,version,metric,mode,m\n'
        'Length1000Depth0_en_4k,-,score,gen,100.00\n'
        'Length4000Depth0_en_4k,-,score,gen,-\n'
        'Length1000Depth0_zh_4k,-,score,gen,50.00\n',
        encoding='utf-8',
    )
    assert by_key(read_summary_csv(path)['m']) == {('en', 1000, 0.0): 1.0, ('zh', 1000, 0.0): 0.5}


def test_read_summary_csv_reads_our_cells_csv_named_by_folder(tmp_path: Path) -> None:
    cells = summarize_cells(at_length(1000, [1.0, 0.0, 1.0, 1.0]))
    path = write_cells_csv(tmp_path / 'reports' / 'qwen2.5-7b' / CELLS_FILE, cells)
    assert read_summary_csv(path) == {'qwen2.5-7b': cells}
    with pytest.raises(ValueError, match='dataset lengths present: none'):
        read_summary_csv(path, dataset_length='4k')


# --------------------------------------------------------------------------------------------------------------------
# What OpenCompass' CDME plotting script (tools/tools_needleinahaystack.py) does with our files
# --------------------------------------------------------------------------------------------------------------------


def opencompass_heatmaps(path: Path) -> dict[str, dict[tuple[int, int], float]]:
    """Per model column, the (Length, Depth) -> mean score grid, computed the way OpenCompass' script does it:
    pandas reads the CSV, Length and Depth come out of the dataset name, every column after the four meta
    columns is a model, its values go through float(), and rows of one cell are averaged.
    """
    pandas = pytest.importorskip('pandas')
    frame = pandas.read_csv(path)
    cells = frame['dataset'].map(lambda name: tuple(int(v) for v in re.search(r'Length(\d+)Depth(\d+)', name).groups()))
    grids: dict[str, dict[tuple[int, int], float]] = {}
    for model in frame.columns[4:]:
        scores: dict[tuple[int, int], list[float]] = {}
        for cell, value in zip(cells, frame[model], strict=True):
            scores.setdefault(cell, []).append(float(value))
        grids[model] = {cell: sum(values) / len(values) for cell, values in scores.items()}
    return grids


def test_opencompass_script_reads_each_subset_file_alone(tmp_path: Path) -> None:
    results = [
        *at_length(1000, [1.0, 0.5, 0.0]),  # en: depths 0, 50, 100
        errored(context_length=2000, depth_percent=0.0),  # en: a cell without a score
        sample(0.25, context_length=2000, depth_percent=50.0),
        sample(1.0, subset='zh', context_length=1000, depth_percent=0.0),  # zh would be averaged into en's grid
        sample(0.0, subset='zh', context_length=1000, depth_percent=50.0),
    ]
    en, zh = write_opencompass_summaries(tmp_path, summarize_cells(results), model='qwen')
    assert opencompass_heatmaps(en) == {
        'qwen': {(1000, 0): 100.0, (1000, 50): 50.0, (1000, 100): 0.0, (2000, 50): 25.0}  # (2000, 0) left empty
    }
    assert opencompass_heatmaps(zh) == {'qwen': {(1000, 0): 100.0, (1000, 50): 0.0}}
    # And the same files read back through `evalscope-niah plot --csv`.
    assert {c.subset for c in read_summary_csv(en)['qwen']} == {'en'}


def test_opencompass_files_are_spreadsheet_safe(tmp_path: Path) -> None:
    subset = '=HYPERLINK("http://evil.example","x")'
    cells = summarize_cells([sample(1.0, subset=subset), sample(0.5, subset=subset, depth_percent=50.0)])
    (path,) = write_opencompass_summaries(tmp_path, cells, model='@model')
    assert path.name == 'needle_haystack_summary_opencompass__HYPERLINK_http_evil.example_x_.csv'
    with open(path, encoding='utf-8', newline='') as handle:
        fields = [field for row in csv.reader(handle) for field in row]
    assert not any(field.startswith(('=', '+', '-', '@', '\t', '\r')) for field in fields)
    back = read_summary_csv(path)
    assert list(back) == ['@model']
    assert {c.subset for c in back['@model']} == {subset}
    assert opencompass_heatmaps(path) == {"'@model": {(1000, 0): 100.0, (1000, 50): 50.0}}
