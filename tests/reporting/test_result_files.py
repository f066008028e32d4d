"""Behavioural tests for evalscope_niah.reporting.result_files: results JSONL, cells CSV, summary JSON, CSV safety."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path

import pytest

from evalscope_niah.reporting.outputs import CELLS_FILE, RESULTS_FILE, SUMMARY_FILE
from evalscope_niah.reporting.result_files import (
    CELL_CSV_COLUMNS,
    csv_text,
    effective_lengths,
    read_cells_csv,
    read_results,
    read_summary_json,
    spreadsheet_unescape,
    subset_effective,
    write_cells_csv,
    write_results,
    write_summary_json,
)
from evalscope_niah.reporting.sample_record import MAX_TEXT_CHARS, SampleResult, bounded_text
from evalscope_niah.reporting.stats import (
    effective_context_length,
    summarize_cells,
    summarize_controls,
    summarize_subsets,
)
from tests.support.results import (
    EFFECTIVE_THRESHOLD,
    PASS_MARK,
    at_length,
    control,
    curve,
    errored,
    judged,
    mixed_results,
    sample,
)

# --------------------------------------------------------------------------------------------------------------------
# Persistence
# --------------------------------------------------------------------------------------------------------------------


def test_jsonl_round_trip_exact(tmp_path: Path) -> None:
    results = mixed_results()
    path = write_results(tmp_path / 'results.jsonl', results)
    lines = path.read_text(encoding='utf-8').splitlines()
    assert len(lines) == len(results)
    assert all(isinstance(json.loads(line), dict) for line in lines)
    assert read_results(path) == results


def test_jsonl_reader_skips_blank_lines_and_reports_bad_line(tmp_path: Path) -> None:
    path = tmp_path / 'r.jsonl'
    good = json.dumps(sample().to_dict())
    path.write_text(f'{good}\n\n{good}\n', encoding='utf-8')
    assert len(read_results(path)) == 2
    path.write_text(f'{good}\n{{"subset": \n', encoding='utf-8')
    with pytest.raises(ValueError, match=':2:'):
        read_results(path)
    path.write_text('[1, 2]\n', encoding='utf-8')
    with pytest.raises(ValueError, match=':1:'):
        read_results(path)


def test_cells_csv_round_trip_exact(tmp_path: Path) -> None:
    cells = summarize_cells(mixed_results() + [sample(s, rule_recall=s) for s in (1.0, 0.0, 1.0)])
    assert any(c.accuracy is None for c in cells) and any(c.ci_low is not None for c in cells)
    # The run's tasks declare precision, so the column is there though no cell holds a value.
    path = write_cells_csv(tmp_path / 'cells.csv', cells, value_columns=('precision',))
    header = (
        'subset,context_length,depth_percent,n,accuracy,rule_recall,levenshtein,judge_failures,errors,ci_low,ci_high,'
        'no_answer,tokenizer,unknown,precision'
    )
    assert path.read_text(encoding='utf-8').splitlines()[0] == header
    assert len(path.read_text(encoding='utf-8').splitlines()) == len(cells) + 1
    assert read_cells_csv(path) == cells


def test_cells_csv_rejects_wrong_header_and_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / 'cells.csv'
    path.write_text('subset,n\nen,1\n', encoding='utf-8')
    with pytest.raises(ValueError, match='header'):
        read_cells_csv(path)
    path.write_text(','.join(CELL_CSV_COLUMNS) + '\nen,notanint,0.0,1,1.0,,,0,0,,\n', encoding='utf-8')
    with pytest.raises(ValueError, match='invalid cell row'):
        read_cells_csv(path)


def test_cells_csv_keeps_the_tokenizer_that_counted_and_old_files_have_none(tmp_path: Path) -> None:
    results = [dataclasses.replace(r, tokenizer='Qwen/Qwen3-0.6B') for r in mixed_results()]
    cells = summarize_cells(results)
    assert {cell.tokenizer for cell in cells} == {'Qwen/Qwen3-0.6B'}
    path = write_cells_csv(tmp_path / 'cells.csv', cells)
    assert read_cells_csv(path) == cells
    old = tmp_path / 'old.csv'
    old.write_text(','.join(CELL_CSV_COLUMNS) + ',no_answer\nen,1000,0.0,2,0.5,0.5,,0,0,0.0,1.0,0\n', encoding='utf-8')
    assert [cell.tokenizer for cell in read_cells_csv(old)] == [None]


def test_old_cells_csv_without_precision_still_reads(tmp_path: Path) -> None:
    path = tmp_path / 'old.csv'
    path.write_text(','.join(CELL_CSV_COLUMNS) + '\nen,1000,0.0,2,0.5,0.5,,0,0,0.0,1.0\n', encoding='utf-8')
    (cell,) = read_cells_csv(path)
    assert (cell.accuracy, cell.ci_high, cell.task_values, cell.no_answer) == (0.5, 1.0, {}, 0)
    # The previous format: a precision column after the fixed ones, empty where a cell had none.
    path.write_text(
        ','.join((*CELL_CSV_COLUMNS, 'precision'))
        + '\nen,1000,0.0,2,0.5,0.5,,0,0,0.0,1.0,0.25\nen,1000,50.0,1,1.0,1.0,,0,0,,,\n',
        encoding='utf-8',
    )
    assert [cell.task_values for cell in read_cells_csv(path)] == [{'precision': 0.25}, {}]
    cells = summarize_cells([sample(1.0, precision=0.25), sample(0.0, precision=0.75)])
    assert read_cells_csv(write_cells_csv(tmp_path / 'new.csv', cells))[0].task_values == {'precision': 0.5}


def test_summary_json_round_trip(tmp_path: Path) -> None:
    results = [
        *curve(1.0, 0.9, 0.2),
        *at_length(1000, [0.0] * 4, subset='zh'),
        control(1.0, context_length=1000),
        control(0.0, guessed=True, context_length=2000),
        control(1.0, subset='ctrl-only'),  # a subset with controls only has no effective length
    ]
    path = write_summary_json(tmp_path / SUMMARY_FILE, results, threshold=0.8, mode='relative', pass_mark=PASS_MARK)
    assert [p.name for p in tmp_path.iterdir()] == [SUMMARY_FILE]
    data = json.loads(path.read_text(encoding='utf-8'))
    assert set(data) == {'effective_context_length', 'controls', 'subsets'}
    assert sorted(data['effective_context_length']) == ['en', 'zh']
    assert data['effective_context_length']['en']['length'] == 2000
    assert data['effective_context_length']['en']['mode'] == 'relative'
    assert data['effective_context_length']['zh']['length'] is None
    summary = read_summary_json(path)
    assert summary.effective_context_length['en'] == effective_context_length(
        results, subset='en', threshold=0.8, mode='relative'
    )
    assert list(summary.controls) == summarize_controls(results)
    assert list(summary.subsets) == summarize_subsets(results, pass_mark=PASS_MARK)


def test_cells_csv_names_the_unknown_cells_and_why(tmp_path: Path) -> None:
    # A cell whose samples all errored is unknown (not a 0): the CSV says so, with the count of each kind.
    results = [sample(1.0), *[errored(depth_percent=50.0) for _ in range(3)], sample(1.0, depth_percent=100.0)]
    results.append(errored(depth_percent=100.0))
    cells = summarize_cells(results)
    assert [(c.depth_percent, c.unknown) for c in cells] == [(0.0, None), (50.0, '3 server errors'), (100.0, None)]
    path = write_cells_csv(tmp_path / 'cells.csv', cells)
    rows = list(csv.DictReader(path.read_text(encoding='utf-8').splitlines()))
    assert [(row['unknown'], row['errors'], row['accuracy']) for row in rows] == [
        ('', '0', '1.0'),
        ('3 server errors', '3', ''),
        ('', '1', '1.0'),
    ]
    assert read_cells_csv(path) == cells


def test_summary_json_reports_a_bound_with_the_unknown_length(tmp_path: Path) -> None:
    results = [*curve(1.0, 1.0), *[errored(context_length=4000) for _ in range(3)]]
    path = write_summary_json(tmp_path / SUMMARY_FILE, results, threshold=EFFECTIVE_THRESHOLD, pass_mark=PASS_MARK)
    entry = json.loads(path.read_text(encoding='utf-8'))['effective_context_length']['en']
    assert (entry['length'], entry['unknown_length'], entry['unknown_reason']) == (2000, 4000, '3 server errors')
    assert [item['status'] for item in entry['per_length']] == ['pass', 'pass', 'unknown']
    assert [item['passes'] for item in entry['per_length']] == [True, True, False]  # as before: False unless a pass
    assert read_summary_json(path).effective_context_length['en'].bound.unknown_length == 4000


def test_summary_json_of_an_older_version_reads_with_two_outcomes(tmp_path: Path) -> None:
    path = write_summary_json(tmp_path / SUMMARY_FILE, curve(1.0, 0.0), threshold=0.8, pass_mark=PASS_MARK)
    data = json.loads(path.read_text(encoding='utf-8'))
    entry = data['effective_context_length']['en']
    for key in ('unknown_length', 'unknown_reason'):
        del entry[key]
    for item in entry['per_length']:
        for key in ('status', 'unscored', 'unknown'):
            del item[key]
    path.write_text(json.dumps(data), encoding='utf-8')
    effective = read_summary_json(path).effective_context_length['en']
    assert [item.status for item in effective.per_length] == ['pass', 'fail']
    assert (effective.length, effective.unknown_length) == (1000, None)
    item = data['effective_context_length']['en']['per_length'][0]
    item['status'] = '<b>maybe</b>'
    path.write_text(json.dumps(data), encoding='utf-8')
    with pytest.raises(ValueError, match=r'not a needle_haystack summary.*status must be one of'):
        read_summary_json(path)
    item['status'] = 'pass'
    for field, value in (('unknown_length', '2000'), ('unknown_length', True), ('unknown_reason', 'x' * 10**6)):
        entry[field] = value
        path.write_text(json.dumps(data), encoding='utf-8')
        with pytest.raises(ValueError, match=f'not a needle_haystack summary.*{field} must be'):
            read_summary_json(path)
        entry.pop(field)


def test_summary_json_validates_and_reader_rejects_other_files(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match='threshold'):
        write_summary_json(tmp_path / 's.json', curve(1.0), threshold=2.0, pass_mark=PASS_MARK)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / 'other.json').write_text('{"effective_context_length": 3}', encoding='utf-8')
    with pytest.raises(ValueError, match='not a needle_haystack summary'):
        read_summary_json(tmp_path / 'other.json')
    (tmp_path / 'broken.json').write_text('{', encoding='utf-8')
    with pytest.raises(ValueError, match='not a needle_haystack summary'):
        read_summary_json(tmp_path / 'broken.json')


# --------------------------------------------------------------------------------------------------------------------
# What the model said, and how it was scored
# --------------------------------------------------------------------------------------------------------------------

NEW_FIELDS = ('answer', 'reasoning', 'judge_rating', 'served_prompt_tokens', 'served_completion_tokens', 'scoring')


def test_new_fields_round_trip_and_are_absent_when_unset(tmp_path: Path) -> None:
    full = dataclasses.replace(
        judged(1.0, 1.0),
        answer='The best thing is to eat a sandwich in "Dolores Park".\n',
        reasoning='the document says…',
        judge_rating=10.0,
        served_prompt_tokens=4000,
        served_completion_tokens=12,
        scoring='judge',
    )
    plain = sample()
    path = write_results(tmp_path / RESULTS_FILE, [full, plain])
    first, second = (json.loads(line) for line in path.read_text(encoding='utf-8').splitlines())
    assert {name: first[name] for name in NEW_FIELDS} == {name: getattr(full, name) for name in NEW_FIELDS}
    assert not set(NEW_FIELDS) & set(second)  # old layout, byte for byte, when nothing new is known
    assert read_results(path) == [full, plain]


def test_rows_from_before_answers_still_read() -> None:
    old_row = {k: v for k, v in judged(0.5, 0.5).to_dict().items() if k not in NEW_FIELDS}
    restored = SampleResult.from_dict(old_row)
    assert all(getattr(restored, name) is None for name in NEW_FIELDS)


def test_answer_and_reasoning_are_bounded_with_a_cut_marker() -> None:
    long = 'a' * 5000
    result = dataclasses.replace(sample(), answer=long, reasoning='b' * 1001)
    assert result.answer is not None and result.reasoning is not None
    assert len(result.answer) <= MAX_TEXT_CHARS and len(result.reasoning) <= MAX_TEXT_CHARS
    assert result.answer.startswith('a' * 900) and result.answer.endswith('chars]')
    # The marker says how much is missing.
    kept = result.answer.index(' […cut ')
    assert f'cut {5000 - kept} chars' in result.answer
    # Reading a bounded record back does not cut it again.
    assert SampleResult.from_dict(result.to_dict()) == result
    assert bounded_text('short') == 'short' and bounded_text(None) is None
    with pytest.raises(ValueError, match='limit'):
        bounded_text('x' * 50, limit=5)


@pytest.mark.parametrize(
    ('change', 'fragment'),
    [
        ({'scoring': 'vibes'}, 'scoring'),
        ({'scoring': 'judge'}, 'judge_status'),  # scored by a judge that never answered
        ({'judge_rating': float('nan')}, 'judge_rating'),
        ({'served_prompt_tokens': -1}, 'served_prompt_tokens'),
    ],
)
def test_new_fields_are_validated(change: dict[str, object], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        dataclasses.replace(sample(), **change)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    'change',
    [{'answer': 3}, {'judge_rating': '10'}, {'served_completion_tokens': 1.5}, {'served_prompt_tokens': True}],
)
def test_new_fields_from_dict_are_typed(change: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        SampleResult.from_dict({**sample().to_dict(), **change})


# --------------------------------------------------------------------------------------------------------------------
# Spreadsheet safety
# --------------------------------------------------------------------------------------------------------------------

FORMULA_SUBSET = '=HYPERLINK("http://evil.example","click")'


@pytest.mark.parametrize('text', [FORMULA_SUBSET, '+1', '-1', '@SUM(A1)', '\tx', '\rx', "'quoted", 'plain', ''])
def test_csv_text_quotes_formula_starts_and_reads_back(text: str) -> None:
    (row,) = list(csv.reader(io.StringIO(csv_text([[text, 1, -0.5, None]]), newline='')))
    assert row[1:] == ['1', '-0.5', '']  # numbers are numbers, None is empty
    if text[:1] in ('=', '+', '-', '@', '\t', '\r', "'"):
        assert row[0] == "'" + text
    else:
        assert row[0] == text
    assert spreadsheet_unescape(row[0]) == text


def test_cells_csv_with_a_formula_subset_is_safe_and_round_trips(tmp_path: Path) -> None:
    cells = summarize_cells([sample(1.0, subset=FORMULA_SUBSET), sample(0.0, subset='-minus')])
    path = write_cells_csv(tmp_path / CELLS_FILE, cells)
    with open(path, encoding='utf-8', newline='') as handle:
        fields = [field for row in csv.reader(handle) for field in row]
    assert not any(field.startswith(('=', '+', '@', '\t', '\r')) for field in fields)
    assert not any(field.startswith('-') and not _is_number(field) for field in fields)
    assert read_cells_csv(path) == cells


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_cells_csv_counts_replies_with_no_final_answer(tmp_path: Path) -> None:
    cells = summarize_cells([sample(1.0), sample(None, no_answer='reasoning_only'), sample(precision=0.5)])
    path = write_cells_csv(tmp_path / 'cells.csv', cells)
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding='utf-8'))))
    assert [(row['n'], row['no_answer'], row['precision']) for row in rows] == [('2', '1', '0.5')]
    assert read_cells_csv(path) == cells


# ---- one effective length per subset, stated by the report and the files alike -----------------------------------


def test_an_effective_length_is_passed_on_for_the_same_rows_in_another_order() -> None:
    rows = curve(1.0, 0.9, 0.5) + at_length(1000, [1.0, 0.0], subset='zh')
    first = subset_effective(rows, subset='en', threshold=EFFECTIVE_THRESHOLD)
    again = subset_effective(list(reversed(rows)), subset='en', threshold=EFFECTIVE_THRESHOLD, known=first)
    assert again is first  # not a second bootstrap
    assert first.length == effective_context_length(rows, subset='en', threshold=EFFECTIVE_THRESHOLD)
    assert effective_lengths(rows, threshold=EFFECTIVE_THRESHOLD, known={'en': first})['en'] is first.length


@pytest.mark.parametrize(
    'change',
    ['a row changed', 'a row more', 'another threshold', 'another mode'],
)
def test_an_effective_length_is_computed_again_when_its_rows_or_rule_differ(change: str) -> None:
    rows = curve(1.0, 0.9, 0.5)
    known = subset_effective(rows, subset='en', threshold=EFFECTIVE_THRESHOLD)
    threshold, mode = EFFECTIVE_THRESHOLD, 'absolute'
    if change == 'a row changed':
        rows = [dataclasses.replace(rows[-1], accuracy=1.0), *rows[:-1]]
    elif change == 'a row more':
        rows = [*rows, errored(context_length=4000, depth_percent=50.0)]
    elif change == 'another threshold':
        threshold = 0.5
    else:
        mode = 'relative'
    found = subset_effective(rows, subset='en', threshold=threshold, mode=mode, known=known)
    assert found is not known
    assert found.length == effective_context_length(rows, subset='en', threshold=threshold, mode=mode)


# ---- lengths the run did not send (an adaptive sweep stopped on its budget) ----------------------------------------


def test_a_length_not_sent_bounds_an_effective_length_it_would_have_extended() -> None:
    """Every sent length passes, the next grid length was never sent: at least the longest sent, that one unknown
    (named, with why), never settled: the model may hold the whole grid."""
    rows = curve(1.0, 1.0)  # 1k and 2k sent, all right
    found = subset_effective(rows, subset='en', threshold=EFFECTIVE_THRESHOLD, untested={8000: 'x', 4000: 'why'})
    length = found.length
    assert (length.length, length.unknown_length, length.unknown_reason) == (2000, 4000, 'why')
    assert length.bound.is_bound and length.ci_high is not None and length.ci_high <= 2000
    settled = subset_effective(rows, subset='en', threshold=EFFECTIVE_THRESHOLD)
    assert (settled.length.length, settled.length.unknown_length) == (2000, None)
    again = subset_effective(rows, subset='en', threshold=EFFECTIVE_THRESHOLD, known=settled, untested={4000: 'why'})
    assert again is not settled and again.length.unknown_length == 4000
    assert subset_effective(rows, subset='en', threshold=EFFECTIVE_THRESHOLD, known=found) is not found  # rule differs


@pytest.mark.parametrize(
    ('accuracies', 'expected'),
    [
        ((1.0, 0.2), (1000, None)),  # a sent length fails below the untested one: settled, it is not reached
        ((0.2, 1.0), (None, None)),  # the shortest fails: nothing passes, whatever is above
    ],
)
def test_a_length_not_sent_above_a_failing_one_changes_nothing(accuracies: tuple, expected: tuple) -> None:
    rows = curve(*accuracies)
    found = subset_effective(rows, subset='en', threshold=EFFECTIVE_THRESHOLD, untested={4000: 'why'}).length
    assert (found.length, found.unknown_length) == expected


def test_a_length_not_sent_above_an_unknown_one_leaves_the_unknown_one_named() -> None:
    rows = [*curve(1.0), errored(context_length=2000, depth_percent=50.0)]
    found = subset_effective(rows, subset='en', threshold=EFFECTIVE_THRESHOLD, untested={4000: 'why'}).length
    assert (found.length, found.unknown_length, found.unknown_reason) == (1000, 2000, '1 server error')


def test_a_results_or_summary_file_nested_deeper_than_json_is_refused_naming_it(tmp_path: Path) -> None:
    """A few KB of brackets exceed json's recursion: each reader raises its one ValueError, never RecursionError."""
    deep = '[' * 5000 + ']' * 5000
    results = tmp_path / RESULTS_FILE
    results.write_text(json.dumps(dataclasses.asdict(mixed_results()[0])) + '\n' + deep + '\n', encoding='utf-8')
    with pytest.raises(ValueError, match=':2: invalid result line'):
        read_results(results)
    summary = tmp_path / SUMMARY_FILE
    summary.write_text(deep, encoding='utf-8')
    with pytest.raises(ValueError, match='not a needle_haystack summary: RecursionError'):
        read_summary_json(summary)
