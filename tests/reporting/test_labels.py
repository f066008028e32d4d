"""Behavioural tests for evalscope_niah.reporting.labels: token and depth labels, the terminal cell table."""

from __future__ import annotations

import dataclasses
import re

import pytest

from evalscope_niah.reporting.labels import (
    file_name_part,
    format_cell_table,
    format_tokens,
    length_axis_label,
    length_labels,
    length_unit,
    subset_tokenizer,
    tokenizer_display_name,
)
from evalscope_niah.reporting.page_text import EN, ZH, PageText, page_text, reason_text, subset_language
from evalscope_niah.reporting.stats import (
    summarize_cells,
)
from tests.support.results import errored, sample

# --------------------------------------------------------------------------------------------------------------------
# Labels and table
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('tokens', 'unit', 'expected'),
    [
        (500, 1000, '500'),
        (1000, 1000, '1k'),
        (4600, 1000, '4.6k'),
        (128000, 1000, '128k'),
        (1_000_000, 1000, '1M'),
        (4096, 1024, '4k'),
        (131072, 1024, '128k'),
        (1536, 1024, '1.5k'),
    ],
)
def test_format_tokens(tokens: int, unit: int, expected: str) -> None:
    assert format_tokens(tokens, unit=unit) == expected


def test_length_labels_pick_round_unique_labels() -> None:
    assert length_labels([1000, 4600, 32000, 128000]) == ['1k', '4.6k', '32k', '128k']
    assert length_labels([1024, 4096, 32768, 131072]) == ['1k', '4k', '32k', '128k']
    assert length_labels([1000, 10071]) == ['1k', '10.1k']  # rounded, still unique
    assert length_labels([4096, 4100]) == ['4,096', '4,100']  # both would read '4.1k'


def test_format_cell_table_grid() -> None:
    results = [
        sample(1.0, context_length=1000, depth_percent=0.0),
        sample(0.0, context_length=1000, depth_percent=0.0),
        sample(1.0, context_length=128000, depth_percent=0.0),
        sample(0.25, context_length=4000, depth_percent=100.0),
        errored(context_length=128000, depth_percent=100.0),
        sample(1.0, subset='other', context_length=2000, depth_percent=50.0),
    ]
    table = format_cell_table(summarize_cells(results), subset='en')
    lines = table.splitlines()
    assert lines[0] == 'subset: en'
    assert lines[1].split()[-3:] == ['1k', '4k', '128k']
    assert lines[2].split() == ['0', '0.50', '—', '1.00']  # 4k at depth 0 was never run
    assert lines[3].split() == ['100', '—', '0.25', '—']  # 128k at depth 100 only errored
    assert len(lines) == 4  # the other subset's depth 50 does not leak in
    assert len({len(line) for line in lines[1:]}) == 1  # aligned columns


def test_format_cell_table_errors() -> None:
    with pytest.raises(ValueError, match='no cells'):
        format_cell_table(summarize_cells([sample()]), subset='missing')
    cells = summarize_cells([sample()])
    with pytest.raises(ValueError, match='duplicate'):
        format_cell_table(cells + cells, subset='en')


@pytest.mark.parametrize(
    ('name', 'expected'),
    [
        ('english', 'english'),
        ('en.v2', 'en.v2'),
        ('../../etc', '.._.._etc'),
        ('a b/c', 'a_b_c'),
        ('中文', '_'),
        ('', '_'),
    ],
)
def test_file_name_part_keeps_names_inside_the_directory(name: str, expected: str) -> None:
    assert file_name_part(name) == expected


# --------------------------------------------------------------------------------------------------------------------
# The tokenizer that counted the lengths
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('tokenizer', 'expected'),
    [
        ('Qwen/Qwen3-0.6B', 'Qwen3'),  # a tokenizer path names the family's tokenizer: the size goes
        ('Qwen/Qwen2.5-7B-Instruct', 'Qwen2.5'),
        ('tiktoken:cl100k_base', 'cl100k_base'),
        ('server:SmolLM2-135M-Instruct', 'SmolLM2-135M'),  # the served model's own tokens: its name, size kept
        ('server:smollm2-135m-instruct', 'smollm2-135m'),  # the demo's llama.cpp alias
        ('server:SmolLM2-135M-Instruct.Q4_1.gguf', 'SmolLM2-135M'),
        ('/models/my-tokenizer/', 'my-tokenizer'),  # a local directory: its folder name
        (None, None),
        ('', None),
    ],
)
def test_tokenizer_display_name(tokenizer: str | None, expected: str | None) -> None:
    assert tokenizer_display_name(tokenizer) == expected


def test_length_labels_name_the_tokenizer_or_say_tokens() -> None:
    assert length_unit('Qwen/Qwen3-0.6B') == 'Qwen3 tokens'
    assert length_axis_label('server:SmolLM2-135M-Instruct') == 'Context length (SmolLM2-135M tokens)'
    assert length_axis_label(None) == 'Context length (tokens)'  # results from before the tokenizer was recorded


def test_format_cell_table_corner_names_the_tokenizer() -> None:
    counted = [dataclasses.replace(sample(1.0), tokenizer='tiktoken:cl100k_base'), sample(0.0, subset='old')]
    cells = summarize_cells(counted)
    assert subset_tokenizer(cells, subset='en') == 'tiktoken:cl100k_base'
    assert format_cell_table(cells, subset='en').splitlines()[1].startswith('depth % \\ cl100k_base tokens')
    assert format_cell_table(cells, subset='old').splitlines()[1].startswith('depth % \\ tokens')


# --------------------------------------------------------------------------------------------------------------------
# The heatmaps' words, one table per language
# --------------------------------------------------------------------------------------------------------------------


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, tuple):
        return [s for item in value for s in _strings(item)]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    return []


@pytest.mark.parametrize('field', [field.name for field in dataclasses.fields(PageText) if field.name != 'html_lang'])
def test_each_word_of_the_pages_has_a_chinese_twin_with_the_same_blanks(field: str) -> None:
    english, chinese = _strings(getattr(EN, field)), _strings(getattr(ZH, field))
    assert len(english) == len(chinese)
    for en, zh in zip(english, chinese, strict=True):
        # The same '{name}' blanks (in either order), so one call fills either language; the unfinished run's note
        # names its state in each language's words ({status} the raw one, {state} translated).
        blanks_en, blanks_zh = set(re.findall(r'\{\w*\}', en)), set(re.findall(r'\{\w*\}', zh))
        if field == 'unfinished_note':
            blanks_en, blanks_zh = blanks_en - {'{status}'}, blanks_zh - {'{state}'}
        assert blanks_en == blanks_zh, (en, zh)
        # No English words left in the Chinese (token is EvalScope's own word; n is the count's symbol).
        assert not set(re.findall(r'[A-Za-z]+', re.sub(r'\{\w*\}', '', zh))) - {'token', 'n', 'CI'}, zh
    assert getattr(EN, field) == getattr(page_text('en'), field) == getattr(page_text('fr'), field)


def test_a_subsets_language_is_the_runs_then_the_built_in_subsets() -> None:
    assert subset_language('chinese') == 'zh' and subset_language('english') == 'en' and subset_language('x') == 'en'
    assert subset_language('x', {'x': 'zh'}) == 'zh' and subset_language('chinese', {'chinese': 'en'}) == 'en'
    assert length_axis_label('Qwen/Qwen3-0.6B', text=ZH) == '上下文长度（Qwen3 token）'
    assert length_unit(None, text=ZH) == 'token'


def test_every_reason_a_length_is_unknown_has_its_words_in_each_language() -> None:
    """length_status counts unscored samples in its own words; a kind added there without words here would show
    English on a Chinese page."""
    from evalscope_niah.reporting.length_status import _UNSCORED_KINDS
    from evalscope_niah.reporting.sweep_plan import UNTESTED_KIND

    kinds = {words for _, one, many in _UNSCORED_KINDS for words in (one, many)} | set(UNTESTED_KIND)
    assert kinds == set(EN.unscored_kinds) == set(ZH.unscored_kinds)
    assert reason_text('3 server errors, 1 cut reply', EN) == '3 server errors, 1 cut reply'
    assert reason_text('3 server errors, 1 cut reply', ZH) == '3 个服务错误、1 个被截断的回复'
    assert reason_text('6 samples not tested', ZH) == '6 个样本未测试'  # a length an adaptive sweep did not send
    assert reason_text(None, ZH) == '已评分的样本太少'
