"""What a resume compares: cached rows as EvalScope reads them, each recorded input against the sample built now."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.making.prompts import PromptSpec
from evalscope_niah.making.resume_match import (
    CachedRow,
    cached_input_changes,
    check_cached_inputs,
    haystack_changes,
    read_cached_rows,
    spot_checked_index,
)
from evalscope_niah.metadata import SampleMeta

PROMPT = PromptSpec()
META = SampleMeta(
    subset='english',
    language='en',
    task='single',
    context_length=600,
    depth_percent=50.0,
    repeat=0,
    pick=0,
    needles=('The secret word is apricot.',),
    question='What is the secret word?',
    reference_answer='apricot',
    answer_keys=('apricot',),
    start_token=0,
    divergence_token=300,
    corpus_file='english.txt',
    corpus_sha256='a' * 64,
    tokenizer='Qwen/Qwen3-0.6B',
)


def _row(meta: SampleMeta, *, index: int = 0, prompt: PromptSpec = PROMPT, haystack: str = 'hay') -> CachedRow:
    """A prediction row as EvalScope writes it: JSON types (lists), measured values, the messages sent."""
    messages = [*prompt.messages(context=haystack, question=meta.question), {'role': 'assistant', 'content': 'x'}]
    metadata = json.loads(json.dumps(meta.with_build(prompt_tokens=598, divergence_token=311).to_dict()))
    return CachedRow.from_row({'index': index, 'metadata': metadata, 'messages': messages})


def test_rows_are_read_as_evalscope_reads_them(tmp_path: Path) -> None:
    path = tmp_path / 'predictions.jsonl'
    lines = [json.dumps({'index': 0, 'v': 1}), '{"index": 1, "v"', json.dumps({'index': 0, 'metadata': {'v': 2}}), '[]']
    lines.append('[' * 5000 + ']' * 5000)  # nested deeper than json's recursion: skipped as a cut row is
    path.write_text('\n'.join(lines) + '\n', encoding='utf-8')
    # The last row of an index wins; cut rows skipped.
    assert read_cached_rows(path) == {0: CachedRow.from_row({'index': 0, 'metadata': {'v': 2}})}
    assert read_cached_rows(tmp_path / 'absent.jsonl') == {}


def test_same_inputs_differ_in_nothing_measured_values_aside() -> None:
    assert cached_input_changes('english', {0: META}, {0: _row(META)}, PROMPT) == []


@pytest.mark.parametrize(
    ('field', 'value'),
    [
        ('corpus_sha256', 'b' * 64),
        ('needles', ('The secret word is plum.',)),
        ('question', 'What word is secret?'),
        ('tokenizer', 'cl100k_base'),
        ('context_length', 900),
        ('start_token', 17),
    ],
)
def test_each_recorded_input_is_compared(field: str, value: object) -> None:
    changes = cached_input_changes('english', {0: dataclasses.replace(META, **{field: value})}, {0: _row(META)}, PROMPT)
    assert [change.field for change in changes] == [field]


def test_a_row_cached_by_0_1_0_names_its_pick_draw_and_still_matches() -> None:
    picked = dataclasses.replace(META, pick=1)
    old = _row(picked)
    metadata = {('draw' if key == 'pick' else key): value for key, value in old.metadata.items()}
    old_row = dataclasses.replace(old, metadata=metadata)
    assert 'pick' not in metadata and metadata['draw'] == 1
    assert cached_input_changes('english', {0: picked}, {0: old_row}, PROMPT) == []
    changes = cached_input_changes('english', {0: META}, {0: old_row}, PROMPT)  # another pick: a change, named
    assert [change.field for change in changes] == ['pick']


def test_the_prompt_frame_is_compared() -> None:
    other = PromptSpec(system_prompt='Answer in French.', user_template='{question}\n---\n{context}')
    fields = [change.field for change in cached_input_changes('english', {0: META}, {0: _row(META)}, other)]
    assert fields == ['system_prompt', 'prompt_template']


def test_what_a_row_does_not_record_and_samples_this_run_lacks_are_not_compared() -> None:
    recorded = json.loads(json.dumps(META.to_dict()))
    del recorded['corpus_sha256']  # written before the field existed
    old = dataclasses.replace(_row(META), metadata=recorded)
    assert (
        cached_input_changes('english', {0: dataclasses.replace(META, corpus_sha256='c' * 64)}, {0: old}, PROMPT) == []
    )
    assert cached_input_changes('english', {}, {5: _row(META, index=5)}, PROMPT) == []  # EvalScope skips it too


def test_one_message_names_each_change_per_subset() -> None:
    rows = {index: _row(META, index=index) for index in range(3)}
    new = dataclasses.replace(META, corpus_sha256='d' * 64)
    changes = cached_input_changes('english', dict.fromkeys(range(3), new), rows, PROMPT)
    with pytest.raises(NiahConfigError) as refused:
        check_cached_inputs(changes, cache_dir='/runs/a', rerun_review=False)
    assert refused.value.param == 'use_cache'
    assert refused.value.detail.count('corpus_sha256') == 1
    detail = refused.value.detail
    assert 'subset english: corpus_sha256 changed (aaaaaaaaaaaa.. -> dddddddddddd..) (in 3 cached samples)' in detail
    assert 'new work dir' in refused.value.detail and 'restore the inputs' in refused.value.detail
    check_cached_inputs([], cache_dir='/runs/a', rerun_review=True)  # nothing changed: nothing raised


def test_the_shortest_matching_sample_is_built_again_and_compared_whole() -> None:
    long = dataclasses.replace(META, context_length=1200)
    expected = {0: long, 1: META, 2: META}
    rows = {index: _row(meta, index=index) for index, meta in expected.items()}
    assert spot_checked_index(expected, rows, []) == 1
    assert spot_checked_index(expected, rows, cached_input_changes('english', {0: META}, rows, PROMPT)) is None
    assert haystack_changes('english', 1, rows[1], PROMPT.user_message(context='hay', question=META.question)) == []
    moved = haystack_changes('english', 1, rows[1], PROMPT.user_message(context='  hay', question=META.question))
    assert [change.field for change in moved] == ['haystack'] and 'start_buffer' in moved[0].note


def test_a_long_prompt_is_kept_by_its_ends_and_compared_by_hash() -> None:
    haystack = 'Hay is dry grass. ' * 20_000  # 360k characters: a row keeps two bounded ends, not the haystack
    row = _row(META, haystack=haystack)
    assert len(row.user_head) + len(row.user_tail) < 40_000
    assert cached_input_changes('english', {0: META}, {0: row}, PROMPT) == []
    sent = PROMPT.user_message(context=haystack, question=META.question)
    assert haystack_changes('english', 0, row, sent) == []
    assert haystack_changes('english', 0, row, sent.replace('dry', 'wet', 1))[0].field == 'haystack'
