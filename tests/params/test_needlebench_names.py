"""NeedleBench v2's needle records and picks read as ours (params/needlebench_names.py, the single task's bank)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.params.needlebench_names import pick_per_repeat
from evalscope_niah.tasks.compose import parse_params
from evalscope_niah.tasks.kit import task_params
from evalscope_niah.tasks.registry import get_task
from evalscope_niah.tasks.single.bank import load_needle_bank
from evalscope_niah.tasks.single.params import SingleParams

NEEDLES_FILE = Path(__file__).parents[1] / 'data' / 'needlebench' / 'needles.jsonl'
RECORD = {
    'needle': 'The lighthouse of Kerrow Point is painted in green and white bands.',
    'retrieval_question': 'In which colours is the lighthouse of Kerrow Point painted?',
    'arg1': 'lighthouse of Kerrow Point',
    'arg2': 'green and white bands',
    'gold_standard_answer': 'The lighthouse of Kerrow Point is painted in green and white bands.',
    'language': 'English',
}


def _bank(tmp_path: Path, *records: dict) -> Path:
    path = tmp_path / 'needles.jsonl'
    path.write_text(''.join(json.dumps(record, ensure_ascii=False) + '\n' for record in records), encoding='utf-8')
    return path


def test_needlebench_records_are_bank_entries() -> None:
    bank = load_needle_bank(NEEDLES_FILE)
    records = [json.loads(line) for line in NEEDLES_FILE.read_text('utf-8').splitlines()]
    assert len(bank) == len(records)
    for entry, record in zip(bank, records, strict=True):
        assert entry.needle == record['needle'] and entry.question == record['retrieval_question']
        assert entry.answer == record['arg2']  # the keyword NeedleBench's evaluator looks for
        assert entry.language == {'English': 'en', 'Chinese': 'zh'}[record['language']]


@pytest.mark.parametrize(
    ('change', 'says'),
    [
        ({'arg3': 'x'}, "unknown key 'arg3'; NeedleBench's keys: needle, retrieval_question, arg1, arg2"),
        ({'arg2': None}, "missing key 'arg2'"),
        ({'arg2': 'purple'}, "'answer' 'purple' must occur verbatim in 'needle'"),
        ({'language': 'French'}, "'language' is 'French'"),
    ],
)
def test_bad_needlebench_records_are_refused(tmp_path: Path, change: dict, says: str) -> None:
    record = {key: value for key, value in {**RECORD, **change}.items() if value is not None}
    with pytest.raises(NiahConfigError) as info:
        load_needle_bank(_bank(tmp_path, record))
    assert says in str(info.value)


def test_our_layout_with_a_needlebench_key_names_both_layouts(tmp_path: Path) -> None:
    record = {'needle': RECORD['needle'], 'question': 'q?', 'answer': 'green', 'language': 'en', 'arg1': 'x'}
    with pytest.raises(NiahConfigError) as info:
        load_needle_bank(_bank(tmp_path, record))
    assert "unknown key 'arg1'" in str(info.value) and "NeedleBench's: needle, retrieval_question" in str(info.value)


def test_pick_per_repeat_is_needlebench_pick() -> None:
    entries = list(range(7))
    expected = []
    for counter in range(12):
        random.seed(counter)
        expected.append(random.choice(entries))
    assert list(pick_per_repeat(entries, 12)) == expected


def test_needle_file_name_sets_the_bank_and_resolves_in_the_corpus_folder(tmp_path: Path) -> None:
    params = parse_params({'needle_file_name': 'needles.jsonl', 'num_repeats_per_file': 3})
    assert task_params(params, SingleParams).needle_bank == 'needles.jsonl'
    (tmp_path / 'needles.jsonl').write_bytes(NEEDLES_FILE.read_bytes())
    resolved = get_task('single').with_corpus_folder(params, tmp_path)
    assert task_params(resolved, SingleParams).needle_bank == str(tmp_path / 'needles.jsonl')
    assert resolved.num_repeats == 3 and resolved.needles_per_cell() == 1
    absolute = parse_params({'needle_file_name': str(NEEDLES_FILE)})
    assert get_task('single').with_corpus_folder(absolute, tmp_path) is absolute


def test_needle_file_name_with_bank_pick_options_is_refused() -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params({'needle_file_name': 'needles.jsonl', 'sample_method': 'random'})
    assert info.value.param == 'needle_file_name' and 'sample_method' in str(info.value)
