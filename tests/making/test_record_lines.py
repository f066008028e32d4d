"""Preview lines: the context's JSON joined from corpus blocks escaped once is json_text of the record."""

from __future__ import annotations

import shutil
from pathlib import Path

from evalscope_niah.escaping import json_text
from evalscope_niah.making.record_lines import iter_record_lines
from evalscope_niah.making.samples import iter_samples
from evalscope_niah.tasks.compose import parse_params


def test_record_lines_are_the_records_json_byte_for_byte(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    """`preview` writes record_line: the context's JSON joined from corpus blocks escaped once must be exactly
    json_text of the record, across block edges, seams between corpus copies, controls and padding-only cells, and
    characters that JSON or our escaping rewrites."""
    english = (fixture_corpus_dir / 'PaulGraham_Essays.txt').read_text(encoding='utf-8')
    # Quote, backslash, tab, DEL, C1, bidi and line separator: each escaped by json.dumps or by the escaping module.
    hostile = english.replace('. ', '. "Q\\t\t\x7f\x85\u202e\u2028" ', 40)
    corpus_dir = tmp_path / 'corpus'
    corpus_dir.mkdir()
    (corpus_dir / 'PaulGraham_Essays.txt').write_text(hostile, encoding='utf-8')
    shutil.copyfile(fixture_corpus_dir / 'Journey_to_the_West.txt', corpus_dir / 'Journey_to_the_West.txt')
    # 6,000 tokens outgrow both corpora, so the haystacks hold seams between copies.
    extra = {'context_lengths': [700, 6000], 'document_depth_percents': [0, 35, 100], 'absent_control': True}
    both = {'subsets': ['english', 'chinese']}
    built = iter_samples(parse_params(extra), corpus_dir=corpus_dir, **both)
    expected = [json_text(sample.to_record(), allow_nan=True).encode('utf-8') for sample in built]
    lines = list(iter_record_lines(parse_params(extra), corpus_dir=corpus_dir, **both))
    assert len(lines) == len(expected) == 16
    assert any('\\u0085' in line.decode('utf-8') for line in lines)  # the hostile text made it into a prompt
    assert lines == expected
