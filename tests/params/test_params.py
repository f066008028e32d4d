"""Parameters: defaults kept from EvalScope's built-in, grids, per-subset precedence, and every rejection."""

from __future__ import annotations

import ast
import importlib.util
import json
import math
import types
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.integration.param_spec import extra_params_spec
from evalscope_niah.params.run_params import ALIASES, NiahParams
from evalscope_niah.params.run_size import (
    MAX_CONTEXT_LENGTH,
    MAX_SAMPLES_HARD_LIMIT,
    MAX_SAMPLES_PER_RUN,
)
from evalscope_niah.params.subsets import (
    DEFAULT_SUBSETS,
    EN_NEEDLE,
    EN_QUESTION,
    ZH_NEEDLE,
    ZH_QUESTION,
    check_subset_list,
    is_safe_subset_name,
)
from evalscope_niah.tasks import task_names
from evalscope_niah.tasks.compose import check_dataset_args, parameter_value, parameters, parse_params

# The built-in needle_haystack's extra_params defaults (evalscope 1.14), written out so a drift is visible here.
BUILTIN_DEFAULTS = {
    'context_lengths_min': 1000,
    'context_lengths_max': 32000,
    'context_lengths_num_intervals': 10,
    'document_depth_percent_min': 0,
    'document_depth_percent_max': 100,
    'document_depth_percent_intervals': 10,
    'tokenizer_path': 'Qwen/Qwen3-0.6B',
    'show_score': False,
}


def numpy_linear(low: float, high: float, count: int) -> list[int]:
    """What the built-in computes: np.round(np.linspace(...)).astype(int)."""
    return np.round(np.linspace(low, high, num=count, endpoint=True)).astype(int).tolist()


def kamradt_logistic(x: float) -> float:
    """Kamradt's depth spacing, written independently: L * sigmoid(-k (x - x0)) with exact 0 and 100."""
    if x in (0, 100):
        return float(x)
    return round(100 / (1 + math.exp(0.1 * (x - 50))), 3)


# ---- defaults ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(('name', 'value'), sorted(BUILTIN_DEFAULTS.items()))
def test_default_matches_builtin_name_and_value(name: str, value: Any) -> None:
    params = parse_params(None)
    assert getattr(params, name) == value
    assert extra_params_spec()[name]['value'] == value


def test_defaults_match_installed_evalscope_builtin_adapter() -> None:
    """Read the installed built-in adapter's extra_params literal (without importing it) and compare."""
    spec = importlib.util.find_spec('evalscope')
    if spec is None or not spec.submodule_search_locations:
        pytest.skip('evalscope is not installed')
    source_file = (
        Path(next(iter(spec.submodule_search_locations)))
        / 'benchmarks'
        / 'needle_haystack'
        / 'needle_haystack_adapter.py'
    )
    if not source_file.is_file():
        pytest.skip('this evalscope has no built-in needle_haystack adapter')
    builtin: dict[str, Any] = {}
    for node in ast.walk(ast.parse(source_file.read_text(encoding='utf-8'))):
        if isinstance(node, ast.keyword) and node.arg == 'extra_params' and isinstance(node.value, ast.Dict):
            builtin = ast.literal_eval(node.value)
    assert builtin, 'no extra_params literal found in the built-in adapter'
    spec_ours = extra_params_spec()
    for name in BUILTIN_DEFAULTS:
        assert name in builtin, name
        assert spec_ours[name]['value'] == builtin[name]['value'], name


def test_default_grids() -> None:
    params = parse_params({})
    assert params.context_length_grid() == [1000, 4444, 7889, 11333, 14778, 18222, 21667, 25111, 28556, 32000]
    assert params.depth_percent_grid() == [0.0, 11.0, 22.0, 33.0, 44.0, 56.0, 67.0, 78.0, 89.0, 100.0]
    assert params.subset_names() == ['english', 'chinese']
    assert params.needles is None and params.retrieval_question is None


# ---- grids ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('low', 'high', 'count'),
    [
        (1000, 32000, 10),
        (1000, 128000, 15),
        (100, 1000, 10),
        (1, 100, 7),  # 17.5 -> 18, 50.5 -> 50, 83.5 -> 84
        (1, 6, 3),  # 3.5 -> 4: round half to even, as numpy
        (2, 7, 3),  # 4.5 -> 4
        (1, 4, 4),
        (1, 15, 2),
        (500, 7500, 5),
        (1024, 131072, 8),
        (1000, 1000, 1),
        (10, 90, 9),
        (3, 8, 11),  # 3.5 -> 4, 4.5 -> 4, 5.5 -> 6, ...
    ],
)
def test_linear_context_grid_matches_numpy(low: int, high: int, count: int) -> None:
    params = parse_params(
        {'context_lengths_min': low, 'context_lengths_max': high, 'context_lengths_num_intervals': count}
    )
    assert params.context_length_grid() == sorted(set(numpy_linear(low, high, count)))


@pytest.mark.parametrize(('low', 'high', 'count'), [(0, 100, 10), (0, 100, 7), (0, 5, 3), (10, 90, 9), (3, 8, 11)])
def test_linear_depth_grid_matches_numpy(low: int, high: int, count: int) -> None:
    params = parse_params(
        {
            'document_depth_percent_min': low,
            'document_depth_percent_max': high,
            'document_depth_percent_intervals': count,
        }
    )
    expected = sorted({float(value) for value in numpy_linear(low, high, count)})
    assert params.depth_percent_grid() == expected


@pytest.mark.parametrize(
    'extra',
    [
        {'document_depth_percent_intervals': 25},
        {'document_depth_percent_intervals': 49},
        {'document_depth_percent_max': 50, 'document_depth_percent_intervals': 45},
    ],
)
def test_linear_depth_grid_matches_numpy_at_float_ties(extra: dict) -> None:
    # numpy computes i * step + low: another formula (low + (high - low) * i / (count - 1)) rounds 62.5 vs
    # 62.50000000000001 differently here (0..100 in 25 intervals: 63 in the built-in).
    params = parse_params(extra)
    low, high = params.document_depth_percent_min, params.document_depth_percent_max
    count = params.document_depth_percent_intervals
    assert params.depth_percent_grid() == sorted({float(v) for v in numpy_linear(low, high, count)})


def test_linear_context_grid_matches_numpy_at_float_ties() -> None:
    # 500..8000 in 89 intervals: numpy gives 7063 where the naive formula gives 7062.
    params = parse_params(
        {'context_lengths_min': 500, 'context_lengths_max': 8000, 'context_lengths_num_intervals': 89}
    )
    assert params.context_length_grid() == numpy_linear(500, 8000, 89)


def test_sigmoid_spacing_has_exact_ends_and_kamradt_values() -> None:
    params = parse_params({'document_depth_percent_interval_type': 'sigmoid'})
    grid = params.depth_percent_grid()
    assert grid[0] == 0.0 and grid[-1] == 100.0
    assert isinstance(grid[0], float) and isinstance(grid[-1], float)
    points = [100 * i / 9 for i in range(10)]
    assert grid == sorted(kamradt_logistic(x) for x in points)
    assert grid == sorted(set(grid)) and len(grid) == 10
    # Symmetric around 50 and denser near the ends than in the middle.
    for left, right in zip(grid, reversed(grid), strict=True):
        assert left + right == pytest.approx(100, abs=0.002)
    gaps = np.diff(grid)
    assert gaps[0] < gaps[4] and gaps[-1] < gaps[4]


def test_sigmoid_spacing_of_a_narrower_range() -> None:
    params = parse_params(
        {
            'document_depth_percent_interval_type': 'sigmoid',
            'document_depth_percent_min': 10,
            'document_depth_percent_max': 90,
            'document_depth_percent_intervals': 5,
        }
    )
    assert params.depth_percent_grid() == sorted(kamradt_logistic(x) for x in (10, 30, 50, 70, 90))
    single = parse_params({'document_depth_percent_interval_type': 'sigmoid', 'document_depth_percent_intervals': 1})
    assert single.depth_percent_grid() == [0.0]


def test_explicit_lists_override_ranges_and_are_sorted_and_deduplicated() -> None:
    params = parse_params(
        {
            # The ranges below are inconsistent on purpose: explicit lists make them irrelevant.
            'context_lengths_min': 9000,
            'context_lengths_max': 10,
            'context_lengths': [4000, 1000, 4000, 2500],
            'document_depth_percent_min': 90,
            'document_depth_percent_max': 10,
            'document_depth_percents': [50, 0, 50.0, 100, 12.5],
            'document_depth_percent_interval_type': 'sigmoid',
        }
    )
    assert params.context_length_grid() == [1000, 2500, 4000]
    assert params.depth_percent_grid() == [0.0, 12.5, 50.0, 100.0]


@pytest.mark.parametrize(
    ('extra', 'lengths'),
    [
        ({'context_lengths_min': 1000, 'context_lengths_max': 1001, 'context_lengths_num_intervals': 4}, [1000, 1001]),
        ({'context_lengths_min': 2000, 'context_lengths_max': 2000, 'context_lengths_num_intervals': 5}, [2000]),
        ({'context_lengths_min': 1000, 'context_lengths_max': 9000, 'context_lengths_num_intervals': 1}, [1000]),
        (
            {'context_lengths_min': 1000, 'context_lengths_max': 3000, 'context_lengths_num_intervals': 3},
            [1000, 2000, 3000],
        ),
    ],
)
def test_linear_grid_edge_cases(extra: dict, lengths: list[int]) -> None:
    assert parse_params(extra).context_length_grid() == lengths


# ---- subsets ----------------------------------------------------------------------------------------------------


def test_builtin_subsets_default_needles_and_questions() -> None:
    params = parse_params({})
    english, chinese = params.resolve_subset('english'), params.resolve_subset('chinese')
    assert english.needles == (EN_NEEDLE,)
    assert (
        EN_NEEDLE == 'The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.'
    )
    assert english.retrieval_question == EN_QUESTION == 'What is the best thing to do in San Francisco?'
    assert (english.corpus_file, english.language) == ('PaulGraham_Essays.txt', 'en')
    assert chinese.needles == (ZH_NEEDLE,)
    assert ZH_NEEDLE == '小明最喜欢的实习的地点就是上海人工智能实验室。'
    assert chinese.retrieval_question == ZH_QUESTION
    assert (chinese.corpus_file, chinese.language) == ('Journey_to_the_West.txt', 'zh')
    assert english.reference_answer == EN_NEEDLE


TOP_NEEDLE, TOP_QUESTION = 'Top-level needle sentence.', 'What does the top-level needle say?'
SUB_NEEDLE, SUB_QUESTION = 'Per-subset needle sentence.', 'What does the per-subset needle say?'


@pytest.mark.parametrize(
    ('extra', 'subset', 'needles', 'question'),
    [
        ({}, 'english', (EN_NEEDLE,), EN_QUESTION),
        ({}, 'chinese', (ZH_NEEDLE,), ZH_QUESTION),
        ({'needles': [TOP_NEEDLE]}, 'english', (TOP_NEEDLE,), EN_QUESTION),
        ({'needles': [TOP_NEEDLE]}, 'chinese', (TOP_NEEDLE,), ZH_QUESTION),
        ({'retrieval_question': TOP_QUESTION}, 'chinese', (ZH_NEEDLE,), TOP_QUESTION),
        (
            {'needles': [TOP_NEEDLE], 'subsets': {'english': {'needles': [SUB_NEEDLE]}}},
            'english',
            (SUB_NEEDLE,),
            EN_QUESTION,
        ),
        (
            # The per-subset override of english leaves chinese on the top-level values.
            {'needles': [TOP_NEEDLE], 'subsets': {'english': {'needles': [SUB_NEEDLE]}}},
            'chinese',
            (TOP_NEEDLE,),
            ZH_QUESTION,
        ),
        (
            {'retrieval_question': TOP_QUESTION, 'subsets': {'chinese': {'retrieval_question': SUB_QUESTION}}},
            'chinese',
            (ZH_NEEDLE,),
            SUB_QUESTION,
        ),
        (
            {
                'needles': [TOP_NEEDLE],
                'retrieval_question': TOP_QUESTION,
                'subsets': {
                    'english': {'needles': [SUB_NEEDLE, '  Second needle.  '], 'retrieval_question': SUB_QUESTION}
                },
            },
            'english',
            (SUB_NEEDLE, 'Second needle.'),
            SUB_QUESTION,
        ),
    ],
)
def test_needle_and_question_precedence(extra: dict, subset: str, needles: tuple, question: str) -> None:
    resolved = parse_params(extra).resolve_subset(subset)
    assert resolved.needles == needles
    assert resolved.retrieval_question == question
    assert resolved.reference_answer == '\n'.join(needles)


def test_builtin_subset_override_keeps_its_corpus_and_language() -> None:
    resolved = parse_params({'subsets': {'chinese': {'needles': ['某人最爱的颜色是绿色。']}}}).resolve_subset('chinese')
    assert (resolved.corpus_file, resolved.language) == ('Journey_to_the_West.txt', 'zh')
    moved = parse_params({'subsets': {'english': {'corpus_file': 'other.txt'}}}).resolve_subset('english')
    assert (moved.corpus_file, moved.language, moved.needles) == ('other.txt', 'en', (EN_NEEDLE,))


def test_new_subset_via_subsets() -> None:
    params = parse_params(
        {
            'subsets': {
                'legal': {
                    'corpus_file': 'contracts.txt',
                    'language': 'en',
                    'needles': ['Clause 9 was signed in blue ink.'],
                    'retrieval_question': 'What colour was the ink of clause 9?',
                }
            }
        }
    )
    assert params.subset_names() == ['english', 'chinese', 'legal']
    legal = params.resolve_subset('legal')
    assert (legal.name, legal.corpus_file, legal.language) == ('legal', 'contracts.txt', 'en')
    assert legal.needles == ('Clause 9 was signed in blue ink.',)
    assert 'legal' not in DEFAULT_SUBSETS  # the built-in table is not mutated


def test_new_subset_takes_top_level_needles_and_question() -> None:
    params = parse_params(
        {
            'needles': [TOP_NEEDLE],
            'retrieval_question': TOP_QUESTION,
            'subsets': {'notes': {'corpus_file': 'notes.txt', 'language': 'zh'}},
        }
    )
    notes = params.resolve_subset('notes')
    assert (notes.needles, notes.retrieval_question, notes.language) == ((TOP_NEEDLE,), TOP_QUESTION, 'zh')


@pytest.mark.parametrize(
    ('extra', 'param'), [({}, 'subsets.notes.needles'), ({'needles': ['N.']}, 'subsets.notes.retrieval_question')]
)
def test_new_subset_without_needles_or_question_fails_to_resolve(extra: dict, param: str) -> None:
    params = parse_params({**extra, 'subsets': {'notes': {'corpus_file': 'notes.txt', 'language': 'en'}}})
    with pytest.raises(NiahConfigError) as info:
        params.resolve_subset('notes')
    assert info.value.param == param
    assert 'top level' in str(info.value)


# ---- extra_params_spec --------------------------------------------------------------------------------------------

# What EvalScope's spec calls each kind of field, derived from the field's annotation (a parameter added to the run or
# by a registered task needs no entry here; an annotation of a new kind fails until its spec name is decided here).
SPEC_TYPE_NAMES = {bool: 'bool', int: 'int', float: 'float', str: 'str'}


def expected_type(annotation: Any) -> str:
    """The spec's type name of a field: optional fields by their value's type, string choices as 'str', lists by
    their items, the subsets mapping as 'dict'."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (types.UnionType, typing.Union):
        (value,) = [arg for arg in args if arg is not type(None)]
        return expected_type(value)
    if origin is typing.Literal:
        assert all(isinstance(choice, str) for choice in args), annotation
        return 'str'
    if origin is list:
        return f'list[{SPEC_TYPE_NAMES[args[0]]}]'
    if origin is dict:
        return 'dict'
    return SPEC_TYPE_NAMES[annotation]


def test_extra_params_spec_covers_every_field_with_defaults() -> None:
    spec = extra_params_spec()
    known = parameters()
    assert set(spec) == set(known)
    defaults = NiahParams()
    for name, entry in spec.items():
        assert set(entry) == {'type', 'description', 'value'}, name
        assert entry['type'] == expected_type(known[name].field.annotation), name
        assert isinstance(entry['description'], str) and entry['description'].strip(), name
        assert entry['value'] == parameter_value(defaults, name), name
    json.dumps(spec)  # EvalScope stores it as JSON
    # Feeding the spec's values back gives the defaults.
    assert parse_params({name: entry['value'] for name, entry in spec.items()}) == defaults


# ---- rejections -------------------------------------------------------------------------------------------------

BAD_INPUTS = [
    (
        {'context_lengths_min': 5000, 'context_lengths_max': 1000},
        'context_lengths_min',
        'larger than context_lengths_max',
    ),
    ({'context_lengths_num_intervals': 0}, 'context_lengths_num_intervals', 'at least 1'),
    ({'document_depth_percent_intervals': -3}, 'document_depth_percent_intervals', 'at least 1'),
    ({'document_depth_percent_min': -1}, 'document_depth_percent_min', 'between 0 and 100'),
    ({'document_depth_percent_max': 100.5}, 'document_depth_percent_max', 'between 0 and 100'),
    (
        {'document_depth_percent_min': 80, 'document_depth_percent_max': 20},
        'document_depth_percent_min',
        'larger than document_depth_percent_max',
    ),
    ({'document_depth_percents': [0, 50, 120]}, 'document_depth_percents', 'between 0 and 100'),
    ({'document_depth_percents': []}, 'document_depth_percents', 'at least one depth'),
    ({'needles': []}, 'needles', 'at least one needle'),
    ({'needles': ['A real needle.', '   ']}, 'needles', 'non-empty'),
    ({'needles': 'a single string'}, 'needles', 'valid list'),
    ({'needles': [1, 2]}, 'needles.0', 'valid string'),
    (
        {'document_depth_percent_interval_type': 'cubic'},
        'document_depth_percent_interval_type',
        "'linear' or 'sigmoid'",
    ),
    ({'context_lengths_min': 'abc'}, 'context_lengths_min', 'valid integer'),
    ({'context_lengths_num_intervals': 2.5}, 'context_lengths_num_intervals', 'fractional part'),
    ({'show_score': 'maybe'}, 'show_score', 'valid boolean'),
    ({'subsets': ['english']}, 'subsets', 'valid dictionary'),
    ({'subsets': {'legal': {'corpus_file': 'law.txt'}}}, 'subsets.legal', "needs 'corpus_file' and 'language'"),
    ({'subsets': {'legal': {'language': 'en'}}}, 'subsets.legal', "needs 'corpus_file' and 'language'"),
    ({'subsets': {'english': {'needles': []}}}, 'subsets.english.needles', 'at least one needle'),
    ({'subsets': {'chinese': {'needles': ['']}}}, 'subsets.chinese.needles', 'non-empty'),
    ({'subsets': {'english': {'language': 'fr'}}}, 'subsets.english.language', "'en' or 'zh'"),
    ({'subsets': {'english': {'corpus': 'x.txt'}}}, 'subsets.english.corpus', 'Extra inputs'),
    ({'context_lengths': []}, 'context_lengths', 'at least one length'),
    ({'context_lengths': [1000, -5]}, 'context_lengths', 'positive'),
    ({'context_lengths': [1000, 0]}, 'context_lengths', 'positive'),
    ({'context_lengths': [1000.5]}, 'context_lengths.0', 'fractional part'),
    ({'context_lengths': '1000'}, 'context_lengths', 'valid list'),
    ({'context_lengths_min': 0}, 'context_lengths_min', 'positive'),
    ({'context_lengths_max': -1000}, 'context_lengths_max', 'positive'),
    ({'tokenizer_path': '   '}, 'tokenizer_path', 'must not be empty'),
    ({'retrieval_question': ''}, 'retrieval_question', 'must not be empty'),
    ({'context_length_min': 1000}, 'context_length_min', 'allowed parameters are'),
]


@pytest.mark.parametrize(('extra', 'param', 'fragment'), BAD_INPUTS, ids=[case[1] for case in BAD_INPUTS])
def test_bad_input_is_rejected_naming_the_parameter(extra: dict, param: str, fragment: str) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params(extra)
    assert info.value.param == param
    assert fragment in str(info.value)
    assert str(info.value).startswith(f'{param}: ')


def test_bad_input_table_is_large() -> None:
    assert len(BAD_INPUTS) >= 15
    assert len({case[1] for case in BAD_INPUTS}) >= 15


def test_unknown_key_lists_every_allowed_key() -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params({'needls': ['typo'], 'context_lengths_min': 1000})
    assert info.value.param == 'needls'
    for name in parameters():
        assert name in info.value.detail


def test_unknown_subset_via_resolve_subset() -> None:
    params = parse_params({'subsets': {'legal': {'corpus_file': 'law.txt', 'language': 'en'}}})
    with pytest.raises(NiahConfigError) as info:
        params.resolve_subset('french')
    assert info.value.param == 'subset_list'
    assert "'french'" in str(info.value)
    assert "['english', 'chinese', 'legal']" in str(info.value)


def test_config_error_is_not_a_value_error() -> None:
    # A ValueError raised inside a pydantic validator would be wrapped and lose the parameter name.
    assert not issubclass(NiahConfigError, ValueError)


@pytest.mark.parametrize('field', ['retrieval_question', 'corpus_file'])
def test_blank_per_subset_field_is_rejected(field: str) -> None:
    # Rejected when parsing (or at the latest when resolving): never an empty question or file name.
    with pytest.raises(NiahConfigError) as info:
        parse_params({'subsets': {'english': {field: '   '}}}).resolve_subset('english')
    assert info.value.param == f'subsets.english.{field}'
    assert 'empty' in str(info.value)


# ---- aliases of other tools' parameter names ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ('alias', 'canonical', 'value'),
    [
        ('num_repeats_per_file', 'num_repeats', 3),
    ],
)
def test_alias_sets_its_canonical_parameter(alias: str, canonical: str, value: int) -> None:
    params = parse_params({alias: value})
    assert getattr(params, canonical) == value
    assert getattr(params, canonical) != getattr(NiahParams(), canonical)  # the test changes something
    # Giving both with the same value is not a contradiction.
    assert getattr(parse_params({alias: value, canonical: value}), canonical) == value


@pytest.mark.parametrize(
    ('alias', 'canonical', 'value'),
    [('num_repeats_per_file', 'num_repeats', 0)],
)
def test_a_bad_alias_value_is_reported_under_the_alias(alias: str, canonical: str, value: int) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params({alias: value})
    assert info.value.param == alias
    assert f'alias of {canonical}' in str(info.value)


def test_aliases_change_the_grids() -> None:
    params = parse_params({'min_context': 1000, 'max_context': 3000, 'n_contexts': 3, 'n_positions': 3})
    assert params.context_length_grid() == [1000, 2000, 3000]
    assert params.depth_percent_grid() == [0.0, 50.0, 100.0]


@pytest.mark.parametrize(
    ('extra', 'alias'),
    [
        ({'num_repeats_per_file': 2, 'num_repeats': 3}, 'num_repeats_per_file'),
        ({'tokenizer_model': 'gpt-4', 'tokenizer_path': 'tiktoken:o200k_base'}, 'tokenizer_model'),
    ],
)
def test_alias_and_canonical_with_different_values_name_the_alias(extra: dict, alias: str) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params(extra)
    assert info.value.param == alias
    assert 'another name for' in str(info.value)


@pytest.mark.parametrize(
    ('model', 'path'),
    [
        ('gpt-4', 'tiktoken:cl100k_base'),
        ('gpt-3.5-turbo', 'tiktoken:cl100k_base'),
        ('gpt-4o', 'tiktoken:o200k_base'),
        ('  gpt-4o  ', 'tiktoken:o200k_base'),
    ],
)
def test_tokenizer_model_maps_to_a_tiktoken_encoding(model: str, path: str) -> None:
    assert parse_params({'tokenizer_model': model}).tokenizer_path == path
    # Giving the same encoding as tokenizer_path too is accepted.
    assert parse_params({'tokenizer_model': model, 'tokenizer_path': path}).tokenizer_path == path


@pytest.mark.parametrize('model', ['not-an-openai-model', 'Qwen/Qwen3-0.6B', '', '   ', 7])
def test_unknown_tokenizer_model_is_rejected(model: Any) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params({'tokenizer_model': model})
    assert info.value.param == 'tokenizer_model'


# ---- needle bank switch -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    'extra',
    [{'n_needles': 2}, {'sample_method': 'sequential'}, {'sample_method': 'random'}, {'fixed_index': 3}, {'n_runs': 2}],
)
def test_changing_a_bank_option_switches_to_the_builtin_bank(extra: dict) -> None:
    assert parameter_value(parse_params(extra), 'needle_bank') == 'builtin'
    # An explicit bank is kept.
    assert parameter_value(parse_params({**extra, 'needle_bank': 'my_bank.jsonl'}), 'needle_bank') == 'my_bank.jsonl'


def test_bank_options_at_their_defaults_keep_the_subset_needles() -> None:
    defaults = {'n_needles': 1, 'sample_method': 'fixed', 'fixed_index': 0, 'n_runs': 1}
    params = parse_params(defaults)
    assert parameter_value(params, 'needle_bank') is None
    assert params.needles_per_cell() == 1
    # As EvalScope passes them: every spec value, defaults included.
    everything = {name: entry['value'] for name, entry in extra_params_spec().items()}
    assert parameter_value(parse_params(everything), 'needle_bank') is None


@pytest.mark.parametrize(
    ('extra', 'picks'),
    [
        ({}, 1),
        # inspect_evals spreads n_needles over the cells: one sample per cell and run.
        ({'n_needles': 3}, 1),
        ({'n_runs': 2}, 2),
        ({'n_needles': 2, 'n_runs': 3}, 3),
        ({'needle_bank': 'builtin'}, 1),
        # Without a bank the bank options are meaningless: one pick.
        ({'num_repeats': 4}, 1),
    ],
)
def test_needles_per_cell(extra: dict, picks: int) -> None:
    assert parse_params(extra).needles_per_cell() == picks


@pytest.mark.parametrize(
    'extra',
    [
        {'needle_bank': 'builtin', 'task': 'reasoning'},
        {'needle_bank': 'builtin', 'task': 'multi_retrieval'},
        {'n_needles': 2, 'task': 'reasoning'},  # the bank is switched on implicitly
        {'sample_method': 'random', 'task': 'multi_retrieval'},
    ],
)
def test_needle_bank_with_a_task_that_brings_its_own_needles_is_rejected(extra: dict) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params(extra)
    assert info.value.param == 'needle_bank'


def test_needle_bank_with_a_per_subset_task_is_rejected() -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params({'needle_bank': 'builtin', 'subsets': {'chinese': {'task': 'reasoning'}}})
    assert info.value.param == 'subsets.chinese.task'


# ---- validation of the new parameters -----------------------------------------------------------------------------

# How an error lists the registered tasks: 'a', 'b' or 'c', in registration order.
TASK_CHOICES = ', '.join(repr(name) for name in task_names()[:-1]) + f' or {task_names()[-1]!r}'

NEW_BAD_INPUTS = [
    ({'num_repeats': 0}, 'num_repeats', 'at least 1'),
    ({'n_needles': 0}, 'n_needles', 'at least 1'),
    ({'n_runs': 0}, 'n_runs', 'at least 1'),
    ({'num_needles': 0}, 'num_needles', 'between 1 and 20'),
    ({'num_needles': 21}, 'num_needles', 'between 1 and 20'),
    ({'start_buffer': -1}, 'start_buffer', '0 or more'),
    ({'end_buffer': -1}, 'end_buffer', '0 or more'),
    ({'length_buffer': -1}, 'length_buffer', '0 or more'),
    ({'fixed_index': -1}, 'fixed_index', '0 or more'),
    ({'diff': 101}, 'diff', 'between 0 and 100'),
    ({'diff': -1}, 'diff', 'between 0 and 100'),
    ({'effective_length_threshold': 0}, 'effective_length_threshold', '(0, 1]'),
    ({'effective_length_threshold': 1.5}, 'effective_length_threshold', '(0, 1]'),
    ({'sample_method': 'foo'}, 'sample_method', "'fixed', 'sequential' or 'random'"),
    ({'task': 'foo'}, 'task', TASK_CHOICES),
    ({'effective_length_mode': 'foo'}, 'effective_length_mode', "'absolute' or 'relative'"),
    ({'request_order': 'depth'}, 'request_order', "'prefix', 'grid' or 'replicas'"),
    ({'needle_bank': '  '}, 'needle_bank', "'builtin' or a path"),
    ({'subsets': {'english': {'task': 'foo'}}}, 'subsets.english.task', TASK_CHOICES),
    ({'subsets': {'english': {'answer': ' '}}}, 'subsets.english.answer', 'must not be empty'),
]


@pytest.mark.parametrize(
    ('extra', 'param', 'fragment'), NEW_BAD_INPUTS, ids=[f'{case[1]}-{case[0]}' for case in NEW_BAD_INPUTS]
)
def test_new_parameters_are_validated_naming_the_parameter(extra: dict, param: str, fragment: str) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params(extra)
    assert info.value.param == param
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    'extra',
    [
        {'task': 'multi_retrieval', 'num_needles': 1},
        {'task': 'multi_retrieval', 'num_needles': 20},
        {'task': 'reasoning', 'diff': 0},
        {'task': 'reasoning', 'diff': 100},
        {'effective_length_threshold': 1},
        {'effective_length_threshold': 0.01},
        {'start_buffer': 0, 'end_buffer': 0, 'length_buffer': 0},
    ],
)
def test_boundary_values_of_the_new_parameters_are_accepted(extra: dict) -> None:
    params = parse_params(extra)
    for name, value in extra.items():
        assert parameter_value(params, name) == value


# ---- answers and tasks per subset ---------------------------------------------------------------------------------


def test_default_answer_is_kept_for_the_default_needles() -> None:
    params = parse_params({'retrieval_question': TOP_QUESTION})  # a new question alone keeps the needle's answer
    assert params.resolve_subset('english').answer == 'eat a sandwich and sit in Dolores Park on a sunny day'
    assert params.resolve_subset('chinese').answer == '上海人工智能实验室'
    for name in ('english', 'chinese'):
        resolved = params.resolve_subset(name)
        assert resolved.answer in resolved.needles[0]


@pytest.mark.parametrize(
    ('extra', 'subset'),
    [
        ({'needles': [TOP_NEEDLE]}, 'english'),
        ({'needles': [TOP_NEEDLE]}, 'chinese'),
        ({'subsets': {'english': {'needles': [SUB_NEEDLE]}}}, 'english'),
        ({'subsets': {'chinese': {'needles': ['某人最爱的颜色是绿色。']}}}, 'chinese'),
    ],
)
def test_default_answer_is_dropped_when_the_needles_are_replaced(extra: dict, subset: str) -> None:
    assert parse_params(extra).resolve_subset(subset).answer is None


def test_replacing_one_subsets_needles_keeps_the_other_subsets_answer() -> None:
    params = parse_params({'subsets': {'english': {'needles': [SUB_NEEDLE]}}})
    assert params.resolve_subset('english').answer is None
    assert params.resolve_subset('chinese').answer == '上海人工智能实验室'


def test_per_subset_answer_with_own_needles() -> None:
    params = parse_params({'subsets': {'english': {'needles': [SUB_NEEDLE], 'answer': '  Per-subset  '}}})
    assert params.resolve_subset('english').answer == 'Per-subset'


def test_per_subset_task_overrides_the_top_level_task() -> None:
    params = parse_params({'task': 'multi_retrieval', 'subsets': {'chinese': {'task': 'reasoning'}}})
    assert params.resolve_subset('english').task == 'multi_retrieval'
    assert params.resolve_subset('chinese').task == 'reasoning'
    assert parse_params({}).resolve_subset('english').task == 'single'
    single = parse_params({'task': 'reasoning', 'subsets': {'english': {'task': 'single'}}})
    assert (single.resolve_subset('english').task, single.resolve_subset('chinese').task) == ('single', 'reasoning')


NEW_SUBSET = {'corpus_file': 'notes.txt', 'language': 'en', 'needles': [SUB_NEEDLE], 'retrieval_question': 'Q?'}


# ---- hardening: subset names -----------------------------------------------------------------------------------


@pytest.mark.parametrize('name', ['english', 'a', 'legal-2024.v1_x', 'x' * 64, '_private', '-dash', 'A.B'])
def test_safe_subset_names_are_accepted(name: str) -> None:
    assert is_safe_subset_name(name)
    params = parse_params({'subsets': {name: NEW_SUBSET}})
    assert params.resolve_subsets([name])[0].name == name


@pytest.mark.parametrize(
    'name', ['', '.hidden', '..', 'a/b', '../x', 'x' * 65, 'a b', 'tab\t', 'new\nline', 'café', '中文', 'a:b', 'a\\b']
)
def test_unsafe_subset_names_are_refused_as_keys_and_as_selections(name: str) -> None:
    assert not is_safe_subset_name(name)
    with pytest.raises(NiahConfigError) as info:
        parse_params({'subsets': {name: {'corpus_file': 'notes.txt', 'language': 'en'}}})
    assert info.value.param == 'subsets' and 'not a valid subset name' in info.value.detail
    for select in (lambda: parse_params({}).resolve_subsets([name]), lambda: parse_params({}).resolve_subset(name)):
        with pytest.raises(NiahConfigError) as info:
            select()
        assert info.value.param == 'subset_list' and 'not a valid subset name' in info.value.detail


@pytest.mark.parametrize(
    ('value', 'fragment'),
    [
        ('english', "must be a list of subset names such as ['english', 'chinese'] (got str 'english')"),
        ({'english': 1}, 'got dict'),
        (7, 'got int 7'),
        ([], 'must name at least one subset'),
        (['english', 3], '3 is not a valid subset name'),
        (['chinese', 'english', 'chinese'], "subset 'chinese' is listed twice"),
    ],
)
def test_subset_list_shape_is_checked(value: Any, fragment: str) -> None:
    with pytest.raises(NiahConfigError) as info:
        check_subset_list(value)
    assert info.value.param == 'subset_list' and fragment in info.value.detail


def test_subset_list_keeps_order_and_accepts_tuples() -> None:
    assert check_subset_list(('chinese', 'english')) == ['chinese', 'english']
    assert [s.name for s in parse_params({}).resolve_subsets(['chinese', 'english'])] == ['chinese', 'english']


def test_error_quotes_only_the_start_of_a_huge_value() -> None:
    with pytest.raises(NiahConfigError) as info:
        check_subset_list('x' * 100_000)
    assert len(str(info.value)) < 300


# ---- hardening: caps ----------------------------------------------------------------------------------------------


def test_largest_context_length_is_accepted_one_more_is_not() -> None:
    assert parse_params({'context_lengths': [MAX_CONTEXT_LENGTH]}).context_length_grid() == [10_000_000]
    assert parse_params({'context_lengths_max': MAX_CONTEXT_LENGTH}).context_lengths_max == MAX_CONTEXT_LENGTH
    for extra, param in (
        ({'context_lengths': [1000, MAX_CONTEXT_LENGTH + 1]}, 'context_lengths'),
        ({'context_lengths_max': MAX_CONTEXT_LENGTH + 1}, 'context_lengths_max'),
        ({'context_lengths_min': MAX_CONTEXT_LENGTH + 1, 'context_lengths': [1000]}, 'context_lengths_min'),
        ({'max_context': MAX_CONTEXT_LENGTH + 1}, 'max_context'),
    ):
        with pytest.raises(NiahConfigError) as info:
            parse_params(extra)
        assert info.value.param == param and 'at most 10,000,000' in info.value.detail


@pytest.mark.parametrize(
    'extra',
    [
        {'context_lengths_num_intervals': 10_001},
        {'document_depth_percent_intervals': 10_001},
        {'num_repeats': 10_001},
        {'n_runs': 10_001},
        {'n_needles': 10_001},
        {'context_lengths': list(range(1, 10_002))},
        {'document_depth_percents': [50.0] * 10_001},
    ],
)
def test_each_grid_axis_is_bounded_before_it_is_built(extra: dict) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params({**extra, 'allow_large_grid': True})
    assert info.value.param == next(iter(extra)) and '10,000' in info.value.detail


@pytest.mark.parametrize(
    'extra',
    [
        {},
        {'absent_control': True, 'num_repeats': 3},
        {'n_needles': 2, 'n_runs': 3, 'document_depth_percent_interval_type': 'sigmoid'},
        {'context_lengths': [1000, 1000, 2000], 'document_depth_percents': [0, 0.0, 50]},
    ],
)
def test_samples_per_subset_is_the_size_of_the_grid(extra: dict) -> None:
    params = parse_params(extra)
    assert params.samples_per_subset() == len(params.cells(['english']))
    assert params.check_run_size(subset_count=2) == len(params.cells(['english', 'chinese']))


def test_run_size_cap_counts_subsets_and_prints_the_count() -> None:
    # 100 lengths x 50 depths = 5,000 per subset: one or two subsets pass, three do not.
    extra = {'context_lengths': list(range(1000, 1100)), 'document_depth_percents': list(range(50))}
    params = parse_params(extra)
    assert params.check_run_size(subset_count=2) == MAX_SAMPLES_PER_RUN
    with pytest.raises(NiahConfigError) as info:
        params.check_run_size(subset_count=3)
    assert info.value.param == 'allow_large_grid'
    assert info.value.detail.startswith('the run has 15,000 samples (3 subset(s) x 100 lengths x 50 depths')
    assert 'more than 10,000' in info.value.detail
    allowed = parse_params({**extra, 'allow_large_grid': True})
    assert allowed.check_run_size(subset_count=3) == 15_000
    subsets = {f's{i}': NEW_SUBSET for i in range(3)}
    with pytest.raises(NiahConfigError, match='15,000 samples'):
        parse_params({**extra, 'subsets': subsets}).resolve_subsets(list(subsets))


def test_run_size_has_a_hard_limit_even_when_allowed() -> None:
    extra = {'context_lengths_num_intervals': 1000, 'document_depth_percents': list(range(101)), 'num_repeats': 5}
    params = parse_params({**extra, 'allow_large_grid': True})
    assert params.samples_per_subset() == 1000 * 101 * 5 <= MAX_SAMPLES_HARD_LIMIT
    assert params.check_run_size(subset_count=1) == 505_000
    with pytest.raises(NiahConfigError) as info:
        params.check_run_size(subset_count=2)
    assert info.value.param == 'allow_large_grid' and 'the run has 1,010,000 samples' in info.value.detail


# ---- hardening: nothing silently ignored ------------------------------------------------------------------------

IGNORED = [
    ({'needles': [TOP_NEEDLE], 'needle_bank': 'builtin'}, 'needles', "needle_bank 'builtin', so needles would be"),
    ({'retrieval_question': TOP_QUESTION, 'needle_bank': 'bank.jsonl'}, 'retrieval_question', "'bank.jsonl'"),
    ({'needles': [TOP_NEEDLE], 'sample_method': 'random'}, 'needles', '(sample_method given)'),
    ({'needles': [TOP_NEEDLE], 'task': 'multi_retrieval'}, 'needles', "task 'multi_retrieval' brings its own"),
    ({'retrieval_question': TOP_QUESTION, 'task': 'reasoning'}, 'retrieval_question', "task 'reasoning'"),
    (
        {
            'task': 'reasoning',
            'needles': [TOP_NEEDLE],
            'subsets': {'english': {'task': 'single', 'needles': [SUB_NEEDLE]}},
        },
        'needles',
        "task 'reasoning' brings its own",
    ),
    ({'subsets': {'english': {'needles': [SUB_NEEDLE]}}, 'n_runs': 2}, 'subsets.english.needles', 'n_runs given'),
    ({'subsets': {'chinese': {'answer': 'x', 'task': 'reasoning'}}}, 'subsets.chinese.answer', "task 'reasoning'"),
    (
        {'task': 'multi_retrieval', 'subsets': {'english': {'retrieval_question': 'Q?'}}},
        'subsets.english.retrieval_question',
        'multi',
    ),
    ({'num_needles': 4}, 'num_needles', "only applies to task 'multi_retrieval' (tasks here: ['single'])"),
    ({'diff': 10, 'task': 'multi_retrieval'}, 'diff', "only applies to task 'reasoning'"),
    ({'shuffle_links': True}, 'shuffle_links', "only applies to task 'reasoning'"),
]


@pytest.mark.parametrize(('extra', 'param', 'fragment'), IGNORED, ids=[case[1] for case in IGNORED])
def test_values_that_would_be_ignored_are_refused(extra: dict, param: str, fragment: str) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params(extra)
    assert info.value.param == param
    assert fragment in info.value.detail


@pytest.mark.parametrize(
    'extra',
    [
        # One subset of task 'single' still takes the top-level needles.
        {'task': 'reasoning', 'needles': [TOP_NEEDLE], 'subsets': {'english': {'task': 'single'}}},
        {'needles': [TOP_NEEDLE], 'subsets': {'chinese': {'task': 'multi_retrieval'}}},
        {'num_needles': 4, 'subsets': {'chinese': {'task': 'multi_retrieval'}}},
        {'diff': 10, 'shuffle_links': True, 'task': 'reasoning'},
        {'num_needles': 3, 'diff': 25, 'shuffle_links': False},  # the defaults, as EvalScope passes them along
    ],
)
def test_values_that_are_used_are_accepted(extra: dict) -> None:
    parse_params(extra)


# ---- hardening: what EvalScope merges, and dataset_args ------------------------------------------------------------


def _merged(user: dict) -> dict:
    """What EvalScope's adapter sees as extra_params: every spec default, the user's values written over them."""
    return {**{name: entry['value'] for name, entry in extra_params_spec().items()}, **user}


def test_merged_view_validates_only_what_the_user_gave() -> None:
    user = {'min_context': 2000, 'n_contexts': 3}
    params = parse_params(_merged(user), user_given=user)
    # inspect_evals' meaning: its default max_context (120000) completes the range.
    assert params.context_length_grid() == [2000, 61000, 120000]
    # Without user_given the defaults in the merged view are EvalScope's grid names beside inspect's.
    with pytest.raises(NiahConfigError, match="mixes inspect_evals' niah names"):
        parse_params(_merged(user))


@pytest.mark.parametrize(
    ('user', 'param', 'fragment'),
    [
        ({'n_contexts': 3, 'context_lengths_num_intervals': 10}, 'n_contexts', "with EvalScope's"),
        ({'min_context': 500, 'context_lengths_min': 1000}, 'min_context', "with EvalScope's"),
        ({'tokenizer_model': 'gpt-4', 'tokenizer_path': 'Qwen/Qwen3-0.6B'}, 'tokenizer_model', 'cl100k_base'),
    ],
)
def test_alias_conflict_with_a_default_valued_canonical_is_refused(user: dict, param: str, fragment: str) -> None:
    for call in (lambda: parse_params(user), lambda: parse_params(_merged(user), user_given=user)):
        with pytest.raises(NiahConfigError) as info:
            call()
        assert info.value.param == param and fragment in info.value.detail


@pytest.mark.parametrize('value', [['context_lengths', 600], 'context_lengths=600', 3, ('a', 1)])
def test_extra_params_must_be_a_mapping(value: Any) -> None:
    for call in (lambda: parse_params(value), lambda: parse_params({}, user_given=value)):
        with pytest.raises(NiahConfigError) as info:
            call()
        assert info.value.param == 'extra_params'
        assert f'(got {type(value).__name__} ' in info.value.detail


@pytest.mark.parametrize('key', ['context_lengths', 'needles', 'task', 'subsets', *ALIASES])
def test_parameters_beside_extra_params_are_refused(key: str) -> None:
    with pytest.raises(NiahConfigError) as info:
        check_dataset_args({'local_path': '/data', key: 1})
    assert info.value.param == key and 'put it under extra_params' in info.value.detail


def test_dataset_args_shape() -> None:
    check_dataset_args({'local_path': '/data', 'subset_list': ['english'], 'extra_params': {'task': 'single'}})
    check_dataset_args({'few_shot_num': 0}, allowed_keys={'few_shot_num'})
    for args, param, fragment in (
        ('english', 'dataset_args', 'must be a mapping'),
        ({'extra_params': ['x']}, 'extra_params', 'must be a mapping'),
        ({'subset_list': 'english'}, 'subset_list', 'must be a list'),
        ({'subset_list': ['ok', '../no']}, 'subset_list', 'not a valid subset name'),
        (
            {'subsetlist': ['english']},
            'dataset_args',
            "unknown key 'subsetlist'; allowed: extra_params, local_path, subset_list",
        ),
    ):
        with pytest.raises(NiahConfigError) as info:
            check_dataset_args(args, allowed_keys={'local_path', 'subset_list', 'extra_params'})
        assert info.value.param == param and fragment in info.value.detail


# ---- OpenCompass CDME's dict names ------------------------------------------------------------------------------

CDME_CHAIN = {
    'needles': ['\nLa Giostra is the best restaurant.\n', 'Its dish is truffle pasta.', 'The pasta is made by Jack.'],
    'keyword': 'Jack',
    'answer': 'Jack makes it.',
    'retrieval_question': 'Who makes the dish of the best restaurant?',
}


@pytest.mark.parametrize('word', ['Chinese', 'chinese', 'CHINESE', 'zh', 'ZH'])
def test_cdme_language_words_any_case(word: str) -> None:
    new = {'corpus_file': 'c.txt', 'language': word, 'needle': '甲。', 'retrieval_question': '问？'}
    params = parse_params({'language': word, 'subsets': {'c': new}})
    assert params.resolve_subset('english').language == 'zh'
    assert params.resolve_subset('c').language == 'zh'


@pytest.mark.parametrize('extra', [{'language': 'French'}, {'subsets': {'english': {'language': 'fr'}}}])
def test_unknown_language_names_what_is_allowed(extra: dict) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params(extra)
    assert info.value.param.endswith('language') and "'English' / 'Chinese'" in info.value.detail


def test_cdme_single_dict_names() -> None:
    params = parse_params(
        {'needle': '\nA needle.\n', 'length': 8000, 'depth': 50, 'file_list': ['zh_finance.jsonl'], 'answer': 'A'}
    )
    assert params.context_length_grid() == [8000] and params.depth_percent_grid() == [50]
    subset = params.resolve_subset('chinese')
    assert subset.needles == ('A needle.',) and subset.own_line_needles == {'A needle.'}
    assert subset.file_list == ('zh_finance.jsonl',) and subset.answer == 'A' and subset.task == 'single'
    # A subset's own corpus wins over the top-level file_list.
    own = parse_params({'file_list': ['a.jsonl'], 'subsets': {'english': {'corpus_file': 'b.txt'}}})
    assert own.resolve_subset('english').corpus_files == ('b.txt',)
    assert own.resolve_subset('chinese').corpus_files == ('a.jsonl',)


def test_needle_and_needles_conflict() -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params({'needle': 'One.', 'needles': ['Two.']})
    assert info.value.param == 'needle'


def test_keyword_makes_the_needles_a_user_chain() -> None:
    params = parse_params({**CDME_CHAIN, 'diff': 25})
    assert params.task == 'reasoning'
    subset = params.resolve_subset('english')
    assert subset.task == 'reasoning' and subset.keyword == 'Jack' and subset.answer == 'Jack makes it.'
    assert subset.needles[0] == 'La Giostra is the best restaurant.'
    # Per subset too: the subset's keyword makes its task the chain, the others keep theirs.
    per_subset = parse_params({'subsets': {'english': CDME_CHAIN}})
    assert per_subset.resolve_subset('english').task == 'reasoning'
    assert per_subset.resolve_subset('chinese').task == 'single'


@pytest.mark.parametrize(
    ('extra', 'param', 'fragment'),
    [
        ({**CDME_CHAIN, 'task': 'single'}, 'keyword', 'leave task out'),
        ({'needles': ['A b.'], 'task': 'reasoning'}, 'needles', 'give keyword'),
        ({'subsets': {'english': {'needles': ['A b.'], 'task': 'reasoning'}}}, 'subsets.english.needles', 'keyword'),
    ],
)
def test_chain_values_that_would_be_ignored(extra: dict, param: str, fragment: str) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params(extra)
    assert info.value.param == param and fragment in info.value.detail


@pytest.mark.parametrize(
    ('extra', 'param'),
    [
        ({**CDME_CHAIN, 'keyword': 'Bob'}, 'subsets.english.keyword'),
        ({'keyword': 'Jack', 'retrieval_question': 'Who?'}, 'subsets.english.needles'),
        ({'keyword': 'Jack', 'needles': CDME_CHAIN['needles']}, 'subsets.english.retrieval_question'),
    ],
)
def test_unanswerable_chains_are_refused_when_resolved(extra: dict, param: str) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params(extra).resolve_subsets(['english'])
    assert info.value.param == param


@pytest.mark.parametrize(
    ('extra', 'param', 'fragment'),
    [
        ({'abbr': 'CDME_Length1000Depth0'}, 'abbr', 'leave it out'),
        ({'path': './data/CDME'}, 'path', 'local_path'),
        ({'infer_cfg': {}}, 'infer_cfg', 'max_tokens'),
        ({'subsets': {'english': {'type': 'CDMEDataset'}}}, 'subsets.english.type', 'leave it out'),
        ({'subsets': {'english': {'length_buffer': 200}}}, 'subsets.english.length_buffer', 'top level'),
    ],
)
def test_opencompass_keys_say_what_to_write(extra: dict, param: str, fragment: str) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params(extra)
    assert info.value.param == param and fragment in info.value.detail
    if param in ('abbr', 'path'):  # refused before EvalScope's own KeyError, which would not say what to write
        with pytest.raises(NiahConfigError):
            check_dataset_args({'extra_params': extra})
