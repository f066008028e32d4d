"""Sample generation: grid order, limit, determinism, records, custom prompts and subsets, and early errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.params import parse_params
from evalscope_niah.prompts import DEFAULT_SYSTEM_PROMPT, PromptSpec
from evalscope_niah.samples import GridCell, NeedleSample, grid, iter_samples
from evalscope_niah.tokenization import load_tokenizer

QWEN = 'Qwen/Qwen3-0.6B'
CL100K = 'tiktoken:cl100k_base'
IN_ENGLISH_CORPUS = 'Most people assume that the hard part of any project is the work itself.'
IN_CHINESE_CORPUS = '老樵夫每日上山砍柴，阿远便在家中烧水煮饭，日子虽然清苦，倒也安稳。'


def samples(fixture_corpus_dir: Path, extra: dict, **kwargs) -> list[NeedleSample]:
    return list(iter_samples(parse_params(extra), corpus_dir=fixture_corpus_dir, **kwargs))


def records_json(items: list[NeedleSample]) -> str:
    return json.dumps([item.to_record() for item in items], ensure_ascii=False, sort_keys=True)


SMALL = {'context_lengths': [600, 1300], 'document_depth_percents': [0, 40, 100]}


# ---- grid, limit ------------------------------------------------------------------------------------------------


def test_grid_order_lengths_outer_depths_inner() -> None:
    params = parse_params(SMALL)
    cells = grid(params, ['english', 'chinese'])
    assert cells == [
        GridCell(subset, length, depth)
        for subset in ('english', 'chinese')
        for length in (600, 1300)
        for depth in (0.0, 40.0, 100.0)
    ]


@pytest.mark.parametrize('limit', [1, 2, 4, 6, 50])
def test_limit_yields_the_first_cells_of_each_subset(fixture_corpus_dir: Path, limit: int) -> None:
    produced = samples(fixture_corpus_dir, SMALL, subsets=['english', 'chinese'], limit=limit)
    params = parse_params(SMALL)
    expected = [cell for name in ('english', 'chinese') for cell in grid(params, [name])[:limit]]
    assert [(s.subset, s.context_length, s.depth_percent) for s in produced] == [
        (c.subset, c.context_length, c.depth_percent) for c in expected
    ]
    assert len(produced) == 2 * min(limit, 6)


def test_limit_zero_yields_nothing(fixture_corpus_dir: Path) -> None:
    assert samples(fixture_corpus_dir, SMALL, subsets=['english', 'chinese'], limit=0) == []


def test_subsets_are_generated_in_the_order_asked(fixture_corpus_dir: Path) -> None:
    produced = samples(fixture_corpus_dir, SMALL, subsets=['chinese', 'english'], limit=1)
    assert [s.subset for s in produced] == ['chinese', 'english']
    assert [s.language for s in produced] == ['zh', 'en']


# ---- determinism ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize('path', [QWEN, CL100K])
def test_two_runs_give_identical_records(fixture_corpus_dir: Path, path: str) -> None:
    extra = {**SMALL, 'tokenizer_path': path, 'needles': ['The blue kettle is in the attic.', 'It was bought in 1987.']}
    first = records_json(samples(fixture_corpus_dir, extra, subsets=['english', 'chinese']))
    second = records_json(samples(fixture_corpus_dir, extra, subsets=['english', 'chinese']))
    assert first.encode('utf-8') == second.encode('utf-8')


_COLD_RUN = """
import json, sys
from pathlib import Path
from evalscope_niah.params import parse_params
from evalscope_niah.samples import iter_samples
params = parse_params(json.loads(sys.argv[1]))
items = iter_samples(params, corpus_dir=Path(sys.argv[2]), subsets=['english', 'chinese'])
print(json.dumps([item.to_record() for item in items], ensure_ascii=False, sort_keys=True))
"""


@pytest.mark.parametrize('path', [QWEN, CL100K])
def test_cold_run_in_another_process_and_warm_run_give_identical_records(
    fixture_corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """Everything cached on disk by one run (token index, token counts) gives the next run the same samples."""
    cache = tmp_path / 'cache'
    monkeypatch.setenv('EVALSCOPE_NIAH_CACHE', str(cache))
    extra = {**SMALL, 'context_lengths': [700, 5000], 'tokenizer_path': path}
    cold = subprocess.run(
        [sys.executable, '-c', _COLD_RUN, json.dumps(extra), str(fixture_corpus_dir)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, 'EVALSCOPE_NIAH_CACHE': str(cache)},
    ).stdout.strip()
    assert list(cache.rglob('*.npz'))  # the cold run left its token index behind
    warm = records_json(samples(fixture_corpus_dir, extra, subsets=['english', 'chinese']))
    assert json.loads(cold) == json.loads(warm)
    assert cold == warm


# ---- records --------------------------------------------------------------------------------------------------------


def test_to_record_fields(fixture_corpus_dir: Path) -> None:
    (sample,) = samples(
        fixture_corpus_dir, {'context_lengths': [900], 'document_depth_percents': [30]}, subsets=['chinese']
    )
    record = sample.to_record()
    for key in (
        'subset',
        'context_length',
        'depth_percent',
        'achieved_depth_percent',
        'prompt_tokens',
        'haystack_tokens',
        'needles',
        'question',
        'messages',
    ):
        assert key in record, key
    assert record['subset'] == 'chinese' and record['language'] == 'zh'
    assert record['context_length'] == record['prompt_tokens'] == 900
    assert record['depth_percent'] == 30.0
    assert 0 < record['achieved_depth_percent'] < 100
    assert record['achieved_depth_percents'] == [record['achieved_depth_percent']]
    assert 0 < record['haystack_tokens'] < 900
    assert record['needles'] == ['小明最喜欢的实习的地点就是上海人工智能实验室。']
    assert record['question'] == '小明最喜欢的实习地点是哪里？'
    assert record['reference_answer'] == record['needles'][0]
    assert record['corpus_file'] == 'Journey_to_the_West.txt'
    assert len(record['corpus_sha256']) == 64
    assert record['tokenizer'] == QWEN
    messages = record['messages']
    assert isinstance(messages, list) and [set(m) for m in messages] == [{'role', 'content'}] * 2
    assert [m['role'] for m in messages] == ['system', 'user']
    assert messages[0]['content'] == DEFAULT_SYSTEM_PROMPT
    assert record['needles'][0] in messages[1]['content']
    assert (
        messages[1]['content'].rstrip().endswith("Don't give information outside the document or repeat your findings.")
    )
    assert 'system_prompt' not in record and 'user_prompt' not in record
    json.dumps(record, ensure_ascii=False)  # plain JSON types only


# ---- custom prompts and subsets ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('template', 'fragment'),
    [
        ('Answer this: {question}', '{context} exactly once (found 0)'),
        ('{context} and {context}: {question}', '{context} exactly once (found 2)'),
        ('Read {context}.', '{question} exactly once (found 0)'),
        ('{context} {question} {answer}', "unknown placeholder(s) ['answer']"),
        ('{context} {question} {', 'not a valid format string'),
    ],
)
def test_bad_prompt_template(template: str, fragment: str) -> None:
    with pytest.raises(NiahConfigError) as info:
        PromptSpec(user_template=template)
    assert info.value.param == 'prompt_template'
    assert fragment in str(info.value)


@pytest.mark.parametrize('path', [QWEN, CL100K])
@pytest.mark.parametrize(
    'prompt',
    [
        PromptSpec(system_prompt='', user_template='Context:{context}Question:{question}'),
        PromptSpec(system_prompt='Be brief.', user_template='{question}\n{context}'),
        PromptSpec(system_prompt='系统提示。', user_template='资料：{context}。问题：{question} Literal {{braces}}.'),
    ],
)
def test_custom_prompt_keeps_exact_lengths(fixture_corpus_dir: Path, path: str, prompt: PromptSpec) -> None:
    tokenizer = load_tokenizer(path)
    extra = {'context_lengths': [400, 2500], 'document_depth_percents': [0, 60, 100], 'tokenizer_path': path}
    produced = samples(fixture_corpus_dir, extra, subsets=['english', 'chinese'], prompt=prompt)
    assert len(produced) == 12
    for sample in produced:
        messages = sample.messages()
        assert [m['role'] for m in messages] == (['system', 'user'] if prompt.system_prompt else ['user'])
        assert tokenizer.count(tokenizer.render_chat(messages)) == sample.context_length == sample.prompt_tokens
        assert sample.user_prompt.count(sample.needles[0]) == 1
    if '{{braces}}' in prompt.user_template:
        assert 'Literal {braces}.' in produced[0].user_prompt


def test_new_subset_through_iter_samples(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    shutil.copy(fixture_corpus_dir / 'PaulGraham_Essays.txt', tmp_path / 'essays_copy.txt')
    extra = {
        'context_lengths': [1100],
        'document_depth_percents': [50],
        'subsets': {
            'essays2': {
                'corpus_file': 'essays_copy.txt',
                'language': 'en',
                'needles': ['The orange bicycle is chained to the third lamp post.'],
                'retrieval_question': 'Where is the orange bicycle?',
            }
        },
    }
    (sample,) = samples(tmp_path, extra, subsets=['essays2'])
    assert (sample.subset, sample.corpus_file, sample.question) == (
        'essays2',
        'essays_copy.txt',
        'Where is the orange bicycle?',
    )
    tokenizer = load_tokenizer(QWEN)
    assert tokenizer.count(tokenizer.render_chat(sample.messages())) == 1100
    assert 'The orange bicycle is chained to the third lamp post.' in sample.user_prompt


# ---- errors before the first sample ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('extra', 'subset', 'needle'),
    [
        ({'needles': [IN_ENGLISH_CORPUS]}, 'english', IN_ENGLISH_CORPUS),
        ({'subsets': {'chinese': {'needles': [IN_CHINESE_CORPUS]}}}, 'chinese', IN_CHINESE_CORPUS),
        # Whitespace differences do not hide it.
        (
            {'subsets': {'english': {'needles': ['Most people  assume that the hard\npart of any project']}}},
            'english',
            None,
        ),
    ],
)
def test_needle_that_occurs_in_the_corpus_is_rejected(
    fixture_corpus_dir: Path, extra: dict, subset: str, needle: str | None
) -> None:
    with pytest.raises(NiahConfigError) as info:
        samples(fixture_corpus_dir, {**SMALL, **extra}, subsets=[subset])
    assert info.value.param == f'subsets.{subset}.needles'
    assert 'already occurs' in str(info.value)
    assert ('PaulGraham_Essays.txt' if subset == 'english' else 'Journey_to_the_West.txt') in str(info.value)
    if needle:
        assert needle in str(info.value)


def test_too_small_length_names_context_lengths_and_the_minimum(fixture_corpus_dir: Path) -> None:
    with pytest.raises(NiahConfigError) as info:
        samples(fixture_corpus_dir, {'context_lengths': [40, 1000]}, subsets=['english'])
    assert info.value.param == 'context_lengths'
    message = str(info.value)
    assert '[40]' in message
    shortest = int(message.rsplit('shortest usable length is ', 1)[1].split()[0].rstrip('.;,'))
    assert 40 < shortest < 1000
    # The minimum it names works, exactly.
    (sample,) = samples(
        fixture_corpus_dir, {'context_lengths': [shortest], 'document_depth_percents': [50]}, subsets=['english']
    )
    tokenizer = load_tokenizer(QWEN)
    assert tokenizer.count(tokenizer.render_chat(sample.messages())) == shortest
    with pytest.raises(NiahConfigError):
        samples(fixture_corpus_dir, {'context_lengths': [shortest - 1]}, subsets=['english'])


@pytest.mark.parametrize(
    ('extra', 'subsets', 'param'),
    [
        ({'context_lengths': [1000, 50]}, ['english', 'chinese'], 'context_lengths'),
        ({'subsets': {'chinese': {'needles': [IN_CHINESE_CORPUS]}}}, ['english', 'chinese'], 'subsets.chinese.needles'),
        (
            {'subsets': {'chinese': {'corpus_file': 'missing.txt'}}},
            ['english', 'chinese'],
            'subsets.chinese.corpus_file',
        ),
        ({}, ['english', 'klingon'], 'subset_list'),
        ({'tokenizer_path': 'tiktoken:no-such-encoding'}, ['english'], 'tokenizer_path'),
    ],
)
def test_config_errors_come_before_the_first_sample(
    fixture_corpus_dir: Path, extra: dict, subsets: list[str], param: str
) -> None:
    """A bad second subset fails the first next(): no model call is made with a config that cannot finish."""
    generator = iter_samples(
        parse_params({'document_depth_percents': [50], 'context_lengths': [1000], **extra}),
        corpus_dir=fixture_corpus_dir,
        subsets=subsets,
    )
    with pytest.raises(NiahConfigError) as info:
        next(generator)
    assert info.value.param == param
