"""Sample generation: grid order, limit, determinism, records, custom prompts and subsets, and early errors."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.making.haystack import END_MARGIN_TOKENS, SENTENCE_SEARCH_TOKENS
from evalscope_niah.making.prompts import DEFAULT_SYSTEM_PROMPT, PromptSpec
from evalscope_niah.making.samples import ABSENT_REFERENCE, GridCell, NeedleSample, iter_samples
from evalscope_niah.making.tokenization import load_tokenizer
from evalscope_niah.params.subsets import EN_ANSWER, EN_NEEDLE, EN_QUESTION, ZH_ANSWER, ZH_NEEDLE, ZH_QUESTION
from evalscope_niah.tasks.answer_format import answer_format_guide
from evalscope_niah.tasks.compose import parameter_value, parse_params
from evalscope_niah.tasks.reasoning.chains import reasoning_chains
from evalscope_niah.tasks.single.bank import load_needle_bank
from tests.support.samples import context_of

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
    cells = params.cells(['english', 'chinese'])
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
    expected = [cell for name in ('english', 'chinese') for cell in params.cells([name])[:limit]]
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
from evalscope_niah.tasks.compose import parse_params
from evalscope_niah.making.samples import iter_samples
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


# ==== new features: tasks, controls, needle bank, repeats, buffers, guide, divergence ==============================


BOTH = ['english', 'chinese']
LANGUAGE = {'english': 'en', 'chinese': 'zh'}
# What may precede a sentence start in the corpus (as tests/making/test_haystack.py): a sentence end or closing quote.
SENTENCE_END_CHARS = set('.!?"\'”’)]。！？；…」』）')  # written out: the rule's characters, checked independently

FEATURES: dict[str, dict] = {
    'multi_retrieval': {
        'task': 'multi_retrieval',
        'num_needles': 4,
        'context_lengths': [700, 1500],
        'document_depth_percents': [0, 30, 100],
    },
    'reasoning': {
        'task': 'reasoning',
        'diff': 20,
        'context_lengths': [1200, 2000],
        'document_depth_percents': [0, 10, 50, 90],
    },
    'control': {'absent_control': True, 'context_lengths': [600, 1400], 'document_depth_percents': [0, 50, 100]},
    'control_tasks': {
        'absent_control': True,
        'subsets': {'english': {'task': 'reasoning'}, 'chinese': {'task': 'multi_retrieval'}},
        'context_lengths': [900],
        'document_depth_percents': [40],
    },
    'bank': {
        'n_needles': 2,
        'sample_method': 'sequential',
        'n_runs': 2,
        'context_lengths': [700],
        'document_depth_percents': [25, 75],
    },
    'repeats': {'num_repeats': 3, 'context_lengths': [800, 1600], 'document_depth_percents': [20, 80]},
    'buffers': {
        'start_buffer': 200,
        'end_buffer': 150,
        'length_buffer': 37,
        'context_lengths': [900, 2000],
        'document_depth_percents': [0, 50, 100],
    },
    'guide': {'guide': True, 'context_lengths': [700], 'document_depth_percents': [50]},
}


@cache
def _built(corpus_dir: str, feature: str, path: str) -> tuple[NeedleSample, ...]:
    extra = {**FEATURES[feature], 'tokenizer_path': path}
    return tuple(iter_samples(parse_params(extra), corpus_dir=Path(corpus_dir), subsets=BOTH))


def built(fixture_corpus_dir: Path, feature: str, path: str = QWEN) -> tuple[NeedleSample, ...]:
    """The samples of a FEATURES config, built once per session."""
    return _built(str(fixture_corpus_dir), feature, path)


def rendered_tokens(sample: NeedleSample, path: str = QWEN) -> int:
    tokenizer = load_tokenizer(path)
    return tokenizer.count(tokenizer.render_chat(sample.messages()))


def corpus_text(fixture_corpus_dir: Path, sample: NeedleSample) -> str:
    return (fixture_corpus_dir / sample.corpus_file).read_text(encoding='utf-8')


# ---- grid with controls and replicates -----------------------------------------------------------------------------


def test_grid_order_with_control_repeats_and_picks() -> None:
    params = parse_params(
        {
            'context_lengths': [1300, 600],
            'document_depth_percents': [50, 0],
            'absent_control': True,
            'num_repeats': 2,
            'n_runs': 3,
        }
    )
    cells = params.cells(BOTH)
    expected = [
        GridCell(subset, length, depth, repeat, pick)
        for subset in BOTH
        for length in (600, 1300)
        for depth in (0.0, 50.0, None)
        for repeat in range(2)
        for pick in range(3)
    ]
    assert cells == expected
    assert len(cells) == 2 * 2 * (2 + 1) * 2 * 3
    assert [cell.control for cell in cells[:18]] == [False] * 12 + [True] * 6


@pytest.mark.parametrize(
    ('extra', 'per_subset'),
    [
        ({}, 2 * 3),
        ({'absent_control': True}, 2 * 4),
        ({'num_repeats': 3}, 2 * 3 * 3),
        ({'n_needles': 2, 'n_runs': 2}, 2 * 3 * 2),  # n_needles spreads over the cells, n_runs repeats them
        ({'absent_control': True, 'num_repeats': 2, 'n_runs': 3}, 2 * 4 * 2 * 3),
    ],
)
def test_grid_counts(extra: dict, per_subset: int) -> None:
    params = parse_params({**SMALL, **extra})
    assert len(params.cells(BOTH)) == 2 * per_subset
    assert len(params.cells(['english'])) == per_subset


def test_iter_samples_follows_the_grid_with_controls_and_replicates(fixture_corpus_dir: Path) -> None:
    extra = {
        'context_lengths': [600, 900],
        'document_depth_percents': [30],
        'absent_control': True,
        'num_repeats': 2,
        'n_runs': 2,
    }
    produced = samples(fixture_corpus_dir, extra, subsets=BOTH)
    cells = parse_params(extra).cells(BOTH)
    assert [(s.subset, s.context_length, s.depth_percent, s.repeat, s.pick) for s in produced] == [
        (c.subset, c.context_length, c.depth_percent, c.repeat, c.pick) for c in cells
    ]
    assert [s.control for s in produced] == [c.control for c in cells]
    for s in produced:
        assert rendered_tokens(s) == s.context_length == s.prompt_tokens


# ---- exact lengths for every feature -------------------------------------------------------------------------------


@pytest.mark.parametrize('path', [QWEN, CL100K])
@pytest.mark.parametrize('feature', sorted(FEATURES))
def test_every_feature_builds_prompts_of_exactly_the_length_asked(
    fixture_corpus_dir: Path, feature: str, path: str
) -> None:
    produced = built(fixture_corpus_dir, feature, path)
    params = parse_params(FEATURES[feature])
    assert len(produced) == len(params.cells(BOTH))
    for s in produced:
        target = s.context_length - params.length_buffer
        assert rendered_tokens(s, path) == target == s.prompt_tokens, (s.subset, s.context_length, s.depth_percent)
        context = context_of(s)
        for needle in s.needles:
            assert context.count(needle) == 1, (s.subset, s.context_length, s.depth_percent, needle)


# ---- multi_retrieval ---------------------------------------------------------------------------------------------

_MULTI_NEEDLE = {
    'en': re.compile(r'^One of the special magic numbers for (\w+) is: (\d{7})\.$'),
    'zh': re.compile(r'^(\w+)的一个特殊魔法数字是：(\d{7})。$'),
}


def test_multi_retrieval_needles_keys_and_question(fixture_corpus_dir: Path) -> None:
    produced = built(fixture_corpus_dir, 'multi_retrieval')
    assert len(produced) == 2 * 2 * 3
    for s in produced:
        assert s.task == 'multi_retrieval'
        assert len(s.needles) == 4
        matches = [_MULTI_NEEDLE[s.language].match(needle) for needle in s.needles]
        assert all(matches), s.needles
        keys = {match.group(1) for match in matches}
        assert len(keys) == 1  # one invented key, several values
        (key,) = keys
        assert key in s.question and s.question.endswith('?' if s.language == 'en' else '？')
        values = tuple(match.group(2) for match in matches)
        assert s.answer_keys == values and len(set(values)) == 4
        assert all(re.fullmatch(r'[1-9]\d{6}', value) for value in values)
        context = context_of(s)
        positions = [context.index(needle) for needle in s.needles]
        assert positions == sorted(positions)  # inserted in order, spread toward the end
        for value in values:
            assert context.count(value) == 1
        assert len(s.achieved_depth_percents) == 4
        assert list(s.achieved_depth_percents) == sorted(s.achieved_depth_percents)
    # Every (subset, depth) picks its own key and numbers, and asks the same ones at every length.
    by_position: dict[tuple[str, float | None], set[tuple[str, ...]]] = {}
    for s in produced:
        by_position.setdefault((s.subset, s.depth_percent), set()).add(s.answer_keys)
    assert all(len(picked) == 1 for picked in by_position.values())
    assert len({next(iter(picked)) for picked in by_position.values()}) == len(by_position) == len(produced) // 2


def test_multi_retrieval_is_deterministic_and_follows_the_seed(fixture_corpus_dir: Path) -> None:
    extra = {**FEATURES['multi_retrieval'], 'context_lengths': [700]}
    first = samples(fixture_corpus_dir, extra, subsets=BOTH)
    again = samples(fixture_corpus_dir, extra, subsets=BOTH)
    assert records_json(first) == records_json(again)
    reseeded = samples(fixture_corpus_dir, {**extra, 'sampling_seed': 1}, subsets=BOTH)
    assert [s.context_length for s in reseeded] == [s.context_length for s in first]
    for old, new in zip(first, reseeded, strict=True):
        assert old.answer_keys != new.answer_keys
        assert old.needles != new.needles
        assert rendered_tokens(new) == new.context_length


# ---- reasoning -------------------------------------------------------------------------------------------------------


def test_reasoning_links_in_chain_order_at_depth_plus_diff(fixture_corpus_dir: Path) -> None:
    produced = built(fixture_corpus_dir, 'reasoning')
    diff = FEATURES['reasoning']['diff']
    tokenizer = load_tokenizer(QWEN)
    for s in produced:
        chain = reasoning_chains(s.language)[0]  # repeat 0 asks chain 0
        assert s.needles == chain.needles
        assert s.answer_keys == (chain.answer,)
        assert s.question == chain.question
        assert s.reference_answer == chain.reference
        context = context_of(s)
        positions = [context.index(link) for link in chain.needles]
        assert all(context.count(link) == 1 for link in chain.needles)
        assert positions == sorted(positions) and len(set(positions)) == len(positions)
        expected = [min(100.0, s.depth_percent + number * diff) for number in range(len(chain.needles))]
        achieved = s.achieved_depth_percents
        assert len(achieved) == len(expected)
        assert list(achieved) == sorted(achieved)
        link_tokens = [tokenizer.count(link) for link in chain.needles]
        for number, (want, got) in enumerate(zip(expected, achieved, strict=True)):
            where = (s.subset, s.context_length, s.depth_percent, achieved)
            assert got <= 100, where
            if want < 100:
                assert abs(got - want) <= 5, where
            else:
                # Capped at 100: only the end margin, the links that follow and half a sentence come after it.
                following = END_MARGIN_TOKENS + sum(link_tokens[number:]) + 40
                assert got >= 100 - 100 * following / s.haystack_tokens, where


def test_reasoning_repeats_ask_different_chains(fixture_corpus_dir: Path) -> None:
    extra = {'task': 'reasoning', 'num_repeats': 2, 'context_lengths': [1500], 'document_depth_percents': [20]}
    produced = samples(fixture_corpus_dir, extra, subsets=BOTH)
    for s in produced:
        assert s.needles == reasoning_chains(s.language)[s.repeat].needles
        assert rendered_tokens(s) == 1500


def _reasoning_shuffled(fixture_corpus_dir: Path, subset: str, seed: int) -> NeedleSample:
    extra = {
        'task': 'reasoning',
        'shuffle_links': True,
        'sampling_seed': seed,
        'context_lengths': [1500],
        'document_depth_percents': [10],
    }
    (sample,) = samples(fixture_corpus_dir, extra, subsets=[subset])
    return sample


@pytest.mark.parametrize('subset', BOTH)
def test_reasoning_shuffle_links_changes_the_order_not_the_set(fixture_corpus_dir: Path, subset: str) -> None:
    chain = reasoning_chains(LANGUAGE[subset])[0]
    shuffled = None
    for seed in range(20):
        sample = _reasoning_shuffled(fixture_corpus_dir, subset, seed)
        assert sorted(sample.needles) == sorted(chain.needles)
        assert sample.answer_keys == (chain.answer,)
        if sample.needles != chain.needles:
            shuffled = sample
            break
    assert shuffled is not None, 'no seed in 0..19 shuffles the links'
    # The links appear in the context in the (shuffled) insertion order, each once.
    context = context_of(shuffled)
    positions = [context.index(link) for link in shuffled.needles]
    assert positions == sorted(positions)
    assert [context.count(link) for link in chain.needles] == [1] * len(chain.needles)
    assert rendered_tokens(shuffled) == 1500
    # Deterministic: the same seed shuffles the same way.
    again = _reasoning_shuffled(fixture_corpus_dir, subset, seed)
    assert again.needles == shuffled.needles and again.user_prompt == shuffled.user_prompt


# ---- needle-absent control -----------------------------------------------------------------------------------------


def test_control_cells_have_no_needle(fixture_corpus_dir: Path) -> None:
    produced = built(fixture_corpus_dir, 'control')
    assert len(produced) == 2 * 2 * 4
    by_length = defaultdict(list)
    for s in produced:
        by_length[(s.subset, s.context_length)].append(s)
    for (subset, length), cell in by_length.items():
        assert [s.control for s in cell] == [False, False, False, True]
        control = cell[-1]
        needle, answer = (EN_NEEDLE, EN_ANSWER) if subset == 'english' else (ZH_NEEDLE, ZH_ANSWER)
        assert control.depth_percent is None
        assert control.needles == ()
        assert control.achieved_depth_percent is None and control.achieved_depth_percents == ()
        assert needle not in control.user_prompt and answer not in control.user_prompt
        assert control.reference_answer == ABSENT_REFERENCE[LANGUAGE[subset]]
        assert ABSENT_REFERENCE == {'en': 'The document does not say.', 'zh': '文中没有提到。'}
        assert control.answer_keys == (answer,) == cell[0].answer_keys  # kept to detect guesses
        assert control.question == cell[0].question
        assert rendered_tokens(control) == length == control.prompt_tokens
        record = control.to_record()
        assert record['control'] is True and record['depth_percent'] is None and record['needles'] == []


def test_control_cells_of_other_tasks_have_none_of_the_tasks_needles(fixture_corpus_dir: Path) -> None:
    produced = built(fixture_corpus_dir, 'control_tasks')
    english = [s for s in produced if s.subset == 'english']
    chinese = [s for s in produced if s.subset == 'chinese']
    assert [s.control for s in english] == [s.control for s in chinese] == [False, True]
    chain = reasoning_chains('en')[0]
    assert english[0].task == 'reasoning' and english[0].needles == chain.needles
    assert all(link not in english[1].user_prompt for link in chain.needles)
    assert english[1].answer_keys == (chain.answer,)
    assert chinese[0].task == 'multi_retrieval' and len(chinese[0].needles) == 3
    assert '特殊魔法数字是：' not in context_of(chinese[1])
    assert len(chinese[1].answer_keys) == 3
    assert all(value not in chinese[1].user_prompt for value in chinese[1].answer_keys)
    for s in produced:
        assert rendered_tokens(s) == s.context_length


# ---- needle bank ---------------------------------------------------------------------------------------------------


def _bank_entries(language: str):
    return [entry for entry in load_needle_bank('builtin') if entry.language == language]


@pytest.mark.parametrize('method', ['sequential', 'fixed', 'random'])
def test_needle_bank_picks(fixture_corpus_dir: Path, method: str) -> None:
    extra = {
        'n_needles': 2,
        'n_runs': 2,
        'sample_method': method,
        'fixed_index': 3,
        'context_lengths': [700],
        'document_depth_percents': [20, 60],
    }
    params = parse_params(extra)
    # inspect_evals: the two needles spread over the two cells, the second run shifted by one; a sample per run.
    assert parameter_value(params, 'needle_bank') == 'builtin' and params.needles_per_cell() == 2
    produced = samples(fixture_corpus_dir, extra, subsets=BOTH)
    assert len(produced) == 2 * 2 * 2
    for subset in BOTH:
        mine = [s for s in produced if s.subset == subset]
        entries = _bank_entries(LANGUAGE[subset])
        assert [(s.depth_percent, s.pick) for s in mine] == [(20.0, 0), (20.0, 1), (60.0, 0), (60.0, 1)]
        picked = []
        for s in mine:
            (entry,) = [item for item in entries if item.needle == s.needles[0]]  # the bank's, in the language
            picked.append(entry)
            assert s.needles == (entry.needle,)
            assert context_of(s).count(entry.needle) == 1
            assert s.question == entry.question
            assert s.answer_keys == (entry.answer,)
            assert s.reference_answer == entry.needle
            assert rendered_tokens(s) == 700
        if method == 'sequential':  # cell (20, run 0), (20, run 1), (60, run 0), (60, run 1)
            assert picked == [entries[3], entries[4], entries[4], entries[3]]
        elif method == 'fixed':
            assert picked == [entries[3]] * 4
        else:  # two distinct entries, each cell given both over the runs
            assert picked[0] == picked[3] != picked[1] == picked[2]
    if method == 'random':
        assert records_json(samples(fixture_corpus_dir, extra, subsets=BOTH)) == records_json(produced)


def test_needle_bank_sequential_config_entries_match_the_subset_language(fixture_corpus_dir: Path) -> None:
    produced = built(fixture_corpus_dir, 'bank')
    assert len(produced) == 2 * 2 * 2  # subsets x depths x n_runs: inspect_evals spreads n_needles over the cells
    for s in produced:
        (entry,) = [item for item in load_needle_bank('builtin') if item.needle == s.needles[0]]
        assert entry.language == s.language == LANGUAGE[s.subset]
        position = [25, 75].index(s.depth_percent)
        assert entry == _bank_entries(s.language)[(position + s.pick) % 2]


# ---- repeats: haystacks from different corpus points ---------------------------------------------------------------


def test_repeats_start_at_different_sentence_starts(fixture_corpus_dir: Path) -> None:
    produced = built(fixture_corpus_dir, 'repeats')
    assert len(produced) == 2 * 2 * 2 * 3
    cells = defaultdict(list)
    starts = defaultdict(set)
    for s in produced:
        cells[(s.subset, s.context_length, s.depth_percent)].append(s)
        starts[(s.subset, s.repeat)].add(s.start_token)
    for (subset, _, _), cell in cells.items():
        assert [s.repeat for s in cell] == [0, 1, 2]
        assert cell[0].start_token == 0
        assert cell[0].start_token < cell[1].start_token < cell[2].start_token
        assert len({context_of(s) for s in cell}) == 3
        text = corpus_text(fixture_corpus_dir, cell[0])
        for s in cell:
            assert rendered_tokens(s) == s.context_length
            head = context_of(s).lstrip()[:30]
            offset = text.find(head)
            assert offset >= 0, head
            if s.repeat == 0:
                assert offset == 0 or not text[:offset].strip()
            else:
                assert text[:offset].rstrip()[-1] in SENTENCE_END_CHARS, (subset, s.repeat, text[offset - 20 : offset])
    # A repeat's start is the same for every length and depth, so those prompts share their beginning.
    assert all(len(tokens) == 1 for tokens in starts.values())


# ---- start / end / length buffers ---------------------------------------------------------------------------------


def test_needles_stay_out_of_the_buffers(fixture_corpus_dir: Path) -> None:
    produced = built(fixture_corpus_dir, 'buffers')
    tokenizer = load_tokenizer(QWEN)
    start_buffer, end_buffer = FEATURES['buffers']['start_buffer'], FEATURES['buffers']['end_buffer']
    assert len(produced) == 2 * 2 * 3
    for s in produced:
        assert s.prompt_tokens == s.context_length - 37
        context = context_of(s)
        needle = s.needles[0]
        position = context.index(needle)
        before = tokenizer.count(context[:position])
        after = tokenizer.count(context[position + len(needle) :])
        where = (s.subset, s.context_length, s.depth_percent, before, after)
        # One token of slack for how the context splits at the needle's edges.
        assert before >= start_buffer - 1, where
        assert after >= end_buffer - 1, where
        if s.depth_percent == 0:
            assert before <= start_buffer + SENTENCE_SEARCH_TOKENS, where
        if s.depth_percent == 100:
            assert after <= end_buffer + SENTENCE_SEARCH_TOKENS, where


@pytest.mark.parametrize(
    ('extra', 'param'),
    [
        ({'start_buffer': 300}, 'start_buffer'),
        ({'start_buffer': 300, 'end_buffer': 300}, 'start_buffer'),
        ({'end_buffer': 300}, 'end_buffer'),
        ({'length_buffer': 300}, 'length_buffer'),
    ],
)
def test_length_too_small_for_the_buffers_names_the_buffer(fixture_corpus_dir: Path, extra: dict, param: str) -> None:
    config = {'context_lengths': [400, 2000], 'document_depth_percents': [50], **extra}
    with pytest.raises(NiahConfigError) as info:
        samples(fixture_corpus_dir, config, subsets=['english'])
    assert info.value.param == param
    assert '[400]' in str(info.value)
    shortest = int(str(info.value).rsplit('shortest usable length is ', 1)[1].split()[0].rstrip('.;,'))
    assert 400 < shortest < 2000
    # Without the buffer the same length is fine; with it, the shortest length it names is.
    unbuffered = {**config, 'context_lengths': [400], **dict.fromkeys(extra, 0)}
    assert len(samples(fixture_corpus_dir, unbuffered, subsets=['english'])) == 1
    (sample,) = samples(fixture_corpus_dir, {**config, 'context_lengths': [shortest]}, subsets=['english'])
    assert rendered_tokens(sample) == sample.prompt_tokens == shortest - config.get('length_buffer', 0)


# ---- guide -------------------------------------------------------------------------------------------------------


def test_guide_appends_the_answer_format_hint(fixture_corpus_dir: Path) -> None:
    english, chinese = built(fixture_corpus_dir, 'guide')
    en_hint = answer_format_guide(needle=EN_NEEDLE, answer=EN_ANSWER, language='en')
    zh_hint = answer_format_guide(needle=ZH_NEEDLE, answer=ZH_ANSWER, language='zh')
    assert en_hint.startswith('Answer in the format:') and EN_ANSWER not in en_hint
    assert ZH_ANSWER not in zh_hint and '____' in zh_hint
    assert english.question == f'{EN_QUESTION} {en_hint}'
    assert chinese.question == f'{ZH_QUESTION}{zh_hint}'
    for s in (english, chinese):
        assert s.user_prompt.count(s.question) == 1
        assert rendered_tokens(s) == 700


def test_guide_for_bank_reasoning_and_replaced_needles(fixture_corpus_dir: Path) -> None:
    base = {'guide': True, 'context_lengths': [900], 'document_depth_percents': [30]}
    for s in samples(fixture_corpus_dir, {**base, 'needle_bank': 'builtin'}, subsets=BOTH):
        (entry,) = [item for item in load_needle_bank('builtin') if item.needle == s.needles[0]]
        hint = answer_format_guide(needle=entry.needle, answer=entry.answer, language=s.language)
        assert s.question == entry.question + (' ' if s.language == 'en' else '') + hint
        assert entry.answer not in s.question
    for s in samples(fixture_corpus_dir, {**base, 'task': 'reasoning'}, subsets=BOTH):
        chain = reasoning_chains(s.language)[0]
        hint = answer_format_guide(needle=chain.needles[-1], answer=chain.answer, language=s.language)
        assert s.question.endswith(hint) and s.question.startswith(chain.question)
    # Replaced needles have no known answer: the generic hint.
    replaced = samples(fixture_corpus_dir, {**base, 'needles': ['The teapot is kept on the top shelf.']}, subsets=BOTH)
    for s in replaced:
        generic = answer_format_guide(needle=s.needles[0], answer=None, language=s.language)
        assert s.question.endswith(generic)
        assert s.answer_keys == ()
        assert rendered_tokens(s) == 900


# ---- divergence token ------------------------------------------------------------------------------------------------


def _first_difference(first: list[int] | str, second: list[int] | str) -> int:
    for index, (a, b) in enumerate(zip(first, second, strict=False)):
        if a != b:
            return index
    return min(len(first), len(second))


@pytest.mark.parametrize('path', [QWEN, CL100K])
def test_needle_prompts_share_tokens_up_to_their_divergence_token(fixture_corpus_dir: Path, path: str) -> None:
    extra = {
        'context_lengths': [900, 1500],
        'document_depth_percents': [0, 20, 60, 100],
        'num_repeats': 2,
        'tokenizer_path': path,
    }
    produced = samples(fixture_corpus_dir, extra, subsets=BOTH)
    tokenizer = load_tokenizer(path)
    ids = [tokenizer.encode(tokenizer.render_chat(s.messages())) for s in produced]
    checked = 0
    for i, a in enumerate(produced):
        assert 0 < a.divergence_token < a.prompt_tokens
        context = context_of(a)
        needle_at = a.user_prompt.index(context) + context.index(a.needles[0])
        if a.depth_percent == 100:
            needle_at -= 1  # the line break that opens a needle ending the document
        for j, b in enumerate(produced):
            if i == j or (a.subset, a.start_token) != (b.subset, b.start_token):
                continue
            if b.divergence_token >= a.divergence_token:
                assert ids[i][: a.divergence_token] == ids[j][: a.divergence_token], (
                    a.context_length,
                    b.context_length,
                )
                # In text: the user prompts agree at least up to the shallower prompt's needle.
                assert _first_difference(a.user_prompt, b.user_prompt) >= needle_at
                checked += 1
            if b.context_length == a.context_length and b.depth_percent > a.depth_percent and a.depth_percent > 0:
                # ... and not much further: the needle makes them differ right there.
                assert 0 <= _first_difference(ids[i], ids[j]) - a.divergence_token <= 3
    assert checked > 50


# ---- regressions: controls share their start, every cell is checked before the first sample ---------------------


@pytest.mark.parametrize('path', [QWEN, CL100K])
def test_control_haystack_starts_where_the_needle_haystacks_of_its_start_do(
    fixture_corpus_dir: Path, path: str
) -> None:
    extra = {
        'context_lengths': [1000, 1600],
        'document_depth_percents': [20],
        'absent_control': True,
        'num_repeats': 2,
        'tokenizer_path': path,
    }
    produced = samples(fixture_corpus_dir, extra, subsets=BOTH)
    heads = {(s.subset, s.start_token): context_of(s)[:40] for s in produced if not s.control}
    shifted = [
        (s.subset, s.context_length, s.repeat, context_of(s)[:20])
        for s in produced
        if s.control and context_of(s)[:40] != heads[(s.subset, s.start_token)]
    ]
    assert shifted == []


@pytest.mark.parametrize('path', [QWEN, CL100K])
def test_control_divergence_token_ends_with_its_haystack(fixture_corpus_dir: Path, path: str) -> None:
    extra = {'context_lengths': [1000], 'document_depth_percents': [50], 'absent_control': True, 'tokenizer_path': path}
    tokenizer = load_tokenizer(path)
    controls = [s for s in samples(fixture_corpus_dir, extra, subsets=BOTH) if s.control]
    assert len(controls) == 2
    for s in controls:
        rendered = tokenizer.render_chat(s.messages())
        context = context_of(s)
        suffix = rendered[rendered.index(context) + len(context) :]
        assert tokenizer.count(suffix) > 10
        assert s.divergence_token <= s.prompt_tokens - tokenizer.count(suffix) + 1, (s.subset, s.divergence_token)


def _all_or_nothing(fixture_corpus_dir: Path, extra: dict, subset: str) -> int:
    """iter_samples promises every check before the first sample: either next() fails, or every sample builds."""
    generator = iter_samples(parse_params(extra), corpus_dir=fixture_corpus_dir, subsets=[subset])
    try:
        first = next(generator)
    except NiahConfigError:
        return 0
    rest = list(generator)  # must not raise now
    for s in (first, *rest):
        assert rendered_tokens(s) == s.context_length
    return 1 + len(rest)


@pytest.mark.parametrize('subset', BOTH)
def test_reasoning_repeats_at_the_shortest_usable_length_build_or_fail_upfront(
    fixture_corpus_dir: Path, subset: str
) -> None:
    extra = {'task': 'reasoning', 'num_repeats': 4, 'document_depth_percents': [0, 50]}
    with pytest.raises(NiahConfigError) as info:
        samples(fixture_corpus_dir, {**extra, 'context_lengths': [50]}, subsets=[subset])
    shortest = int(str(info.value).rsplit('shortest usable length is ', 1)[1].split()[0].rstrip('.;,'))
    assert _all_or_nothing(fixture_corpus_dir, {**extra, 'context_lengths': [shortest]}, subset) == 2 * 4


def test_multi_retrieval_near_the_minimum_builds_or_fails_upfront(fixture_corpus_dir: Path) -> None:
    extra = {'task': 'multi_retrieval', 'num_needles': 5, 'distractors': 0, 'document_depth_percent_intervals': 11}
    built_counts = [
        _all_or_nothing(fixture_corpus_dir, {**extra, 'context_lengths': [length]}, 'english')
        for length in range(258, 270)
    ]
    assert 11 in built_counts  # some of these lengths do work
