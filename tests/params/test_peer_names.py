"""Other tools' names expand into the grid, needles and tokenizer each tool's own code would use. The references
follow inspect_evals' niah (utils/dataset_generation.py, utils/needle_utils.py) and Kamradt's
LLMNeedleHaystackTester, written out here."""

from __future__ import annotations

import math

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.tasks import get_task
from evalscope_niah.tasks.compose import parse_params
from evalscope_niah.tasks.single.bank import BankNeedle, pick_needles, spread_over_grid

np = pytest.importorskip('numpy')


# ---- inspect_evals -------------------------------------------------------------------------------------------------


def inspect_context_lengths(min_context: int, max_context: int, n_contexts: int) -> list[int]:
    # generate_context_lengths with needle and prompt tokens 0 (here the whole prompt is the length).
    if n_contexts == 1:
        return [max_context]
    step_size = (max_context - min_context) / (n_contexts - 1)
    return sorted({round(min_context + i * step_size) for i in range(n_contexts)})


def inspect_positions(n_positions: int, context_length: int, start_buffer: int, end_buffer: int) -> list[int]:
    # generate_needle_positions: token indices of the haystack.
    start_token, end_token = start_buffer, context_length - end_buffer
    if n_positions == 1:
        return [round((start_token + end_token) / 2)]
    step_size = (end_token - start_token) / (n_positions - 1)
    return sorted({round(start_token + i * step_size) for i in range(n_positions)})


@pytest.mark.parametrize(
    ('low', 'high', 'count'),
    [(1000, 2000, 1), (1000, 2000, 2), (10000, 120000, 15), (1000, 1003, 7), (1001, 2000, 4), (500, 500, 3)],
)
def test_inspect_lengths_follow_its_code(low: int, high: int, count: int) -> None:
    params = parse_params({'min_context': low, 'max_context': high, 'n_contexts': count})
    assert params.context_length_grid() == inspect_context_lengths(low, high, count)
    assert params.tokenizer_path == 'tiktoken:cl100k_base'


def test_inspect_defaults_fill_what_is_not_given() -> None:
    params = parse_params({'n_positions': 2})
    assert params.context_length_grid() == inspect_context_lengths(10000, 120000, 15)
    assert parse_params({'max_context': 3000, 'n_contexts': 1}).context_length_grid() == [3000]


@pytest.mark.parametrize('n_positions', [1, 2, 3, 7, 15])
@pytest.mark.parametrize(('haystack', 'start', 'end'), [(1873, 0, 0), (1000, 100, 50), (30011, 2000, 999)])
def test_inspect_positions_land_on_its_token_indices(n_positions: int, haystack: int, start: int, end: int) -> None:
    depths = parse_params({'n_positions': n_positions, 'start_buffer': start, 'end_buffer': end}).depth_percent_grid()
    # The haystack places a depth at start_buffer + round(usable * depth / 100) tokens.
    usable = haystack - start - end
    ours = [start + round(usable * depth / 100) for depth in depths]
    assert ours == inspect_positions(n_positions, haystack, start, end)


def inspect_needles(n_needles: int, method: str, fixed_index: int, rows: int, cells: int, runs: int) -> list[int]:
    # sample_needles (fixed / sequential) -> stretch_or_squash_needles -> repeat_with_shift.
    sampled = [fixed_index] * n_needles if method == 'fixed' else [(fixed_index + i) % rows for i in range(n_needles)]
    stretched = (sampled * (cells // len(sampled) + 1))[:cells]
    per_cell = sampled[:cells] if len(sampled) >= cells else stretched
    return [per_cell[(row + run) % cells] for run in range(runs) for row in range(cells)]


def _bank(rows: int) -> tuple[BankNeedle, ...]:
    return tuple(BankNeedle(f'en-{i}', 'en', f'Fact {i}.', f'Question {i}?', f'{i}') for i in range(rows))


@pytest.mark.parametrize('method', ['fixed', 'sequential'])
@pytest.mark.parametrize(('n_needles', 'cells', 'runs', 'rows'), [(3, 4, 2, 10), (1, 6, 3, 5), (7, 4, 2, 5)])
def test_inspect_needles_spread_over_cells_and_runs(method, n_needles, cells, runs, rows) -> None:
    bank = _bank(rows)
    picked = pick_needles(bank, language='en', count=n_needles, sample_method=method, fixed_index=2)
    spread = spread_over_grid(picked, cells=cells, runs=runs)
    assert [int(entry.answer) for entry in spread] == inspect_needles(n_needles, method, 2, rows, cells, runs)


def test_inspect_issue_example_gives_eight_samples_of_three_needles() -> None:
    params = parse_params(
        {'min_context': 1000, 'max_context': 2000, 'n_contexts': 2, 'n_positions': 2}
        | {'n_needles': 3, 'sample_method': 'sequential', 'fixed_index': 2, 'n_runs': 2}
    )
    assert params.samples_per_subset() == 8
    picks = get_task('single').picks(params.resolve_subset('english'), params)
    assert [entry.id for entry in picks] == ['en-03', 'en-04', 'en-05', 'en-03', 'en-04', 'en-05', 'en-03', 'en-03']


@pytest.mark.parametrize(
    ('extra', 'tools'),
    [
        ({'n_contexts': 2, 'context_lengths': [1000]}, ("inspect_evals' niah", "EvalScope's")),
        ({'min_context': 900, 'document_depth_percent_intervals': 3}, ("inspect_evals' niah", "EvalScope's")),
        ({'n_positions': 2, 'save_results': True}, ("inspect_evals' niah", "Kamradt's")),
        ({'n_runs': 2, 'multi_needle': True}, ("inspect_evals' niah", "Kamradt's")),
        ({'n_needles': 2, 'num_repeats_per_file': 2}, ("inspect_evals' niah", "OpenCompass' CDME")),
        ({'final_context_length_buffer': 10, 'tokenizer_model': 'gpt-4'}, ("Kamradt's", "OpenCompass' CDME")),
        ({'type_haystack': 'noise', 'multi_needle': True}, ("Kamradt's", "RULER's niah")),
        ({'n_contexts': 2, 'num_needle_q': 4}, ("inspect_evals' niah", "RULER's niah")),
        ({'num_needle_v': 4, 'length': 1000}, ("RULER's niah", "OpenCompass' CDME")),
    ],
)
def test_two_tools_in_one_config_are_refused_naming_both(extra: dict, tools: tuple[str, str]) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params(extra)
    assert info.value.param in extra
    assert all(tool in info.value.detail for tool in tools) and 'mixes' in info.value.detail


def test_inspect_needle_options_go_with_our_grid() -> None:
    # n_needles and the rest have no other meaning anywhere: beside our grid names they keep inspect's.
    params = parse_params({'context_lengths': [1000, 2000], 'document_depth_percents': [50], 'n_needles': 2})
    assert params.samples_per_subset() == 2 and params.tokenizer_path == 'Qwen/Qwen3-0.6B'


def test_bad_inspect_values_name_the_key_and_the_tool() -> None:
    for extra, key in (({'n_contexts': 0}, 'n_contexts'), ({'min_context': 3000, 'max_context': 2000}, 'min_context')):
        with pytest.raises(NiahConfigError) as info:
            parse_params(extra)
        assert info.value.param == key and "inspect_evals' niah" in info.value.detail


# ---- Kamradt's LLMNeedleHaystackTester ---------------------------------------------------------------------------


def kamradt_lengths(low: int, high: int, count: int) -> list[int]:
    return sorted({int(value) for value in np.round(np.linspace(low, high, num=count, endpoint=True)).astype(int)})


def kamradt_depths(low: float, high: float, count: int, kind: str) -> list[float]:
    if kind == 'linear':
        return sorted({float(value) for value in np.round(np.linspace(low, high, num=count, endpoint=True))})

    def logistic(x: float, L: float = 100, x0: float = 50, k: float = 0.1) -> float:
        if x in (0, 100):
            return x
        return float(np.round(L * (1 / (1 + math.exp(k * (x - x0)))), 3))

    return sorted({logistic(x) for x in np.linspace(low, high, count)})


def test_kamradt_config_takes_his_defaults_buffer_and_tokenizer() -> None:
    params = parse_params({'print_ongoing_status': True})
    assert params.context_length_grid() == kamradt_lengths(1000, 16000, 35)
    assert params.depth_percent_grid() == kamradt_depths(0, 100, 35, 'linear')
    assert (params.length_buffer, params.tokenizer_path) == (200, 'tiktoken:cl100k_base')
    # Without a name only he uses, the shared names are EvalScope's.
    plain = parse_params({'context_lengths_num_intervals': 35})
    assert plain.context_length_grid() == kamradt_lengths(1000, 32000, 35)
    assert (plain.length_buffer, plain.tokenizer_path) == (0, 'Qwen/Qwen3-0.6B')


@pytest.mark.parametrize(('low', 'high', 'count'), [(0, 100, 35), (10, 90, 7), (0, 100, 4), (5, 60, 11)])
@pytest.mark.parametrize('kind', ['linear', 'sigmoid'])
def test_kamradt_spacing_follows_his_code(low: float, high: float, count: int, kind: str) -> None:
    extra = {
        'final_context_length_buffer': 0,
        'context_lengths_min': 1000,
        'context_lengths_max': 9000,
        'context_lengths_num_intervals': count,
        'document_depth_percent_min': low,
        'document_depth_percent_max': high,
        'document_depth_percent_intervals': count,
        'document_depth_percent_interval_type': kind,
    }
    params = parse_params(extra)
    assert params.context_length_grid() == kamradt_lengths(1000, 9000, count)
    assert params.depth_percent_grid() == pytest.approx(kamradt_depths(low, high, count, kind))
    assert params.length_buffer == 0


def test_kamradt_multi_needle_reads_needles_only() -> None:
    params = parse_params({'multi_needle': True})
    assert [needle.split(' is ')[0].split(' are ')[0].strip() for needle in params.needles] == [
        'Figs',
        'Prosciutto',
        'Goat cheese',
    ]
    assert params.retrieval_question == 'What are the secret ingredients needed to build the perfect pizza?'
    for extra, key in (
        ({'multi_needle': True, 'needle': 'x.'}, 'needle'),
        ({'save_results': False, 'needles': ['x.']}, 'needles'),
        ({'multi_needle': 'yes'}, 'multi_needle'),
    ):
        with pytest.raises(NiahConfigError) as info:
            parse_params(extra)
        assert info.value.param == key and "Kamradt's" in info.value.detail


@pytest.mark.parametrize(
    'key', ['model_to_test', 'provider', 'model_name', 'evaluator', 'evaluator_model_name', 'eval_set', 'haystack_dir']
)
def test_kamradt_arguments_we_cannot_honour_name_him_and_what_to_write(key: str) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_params({key: 'openai'})
    assert info.value.param == key and "Kamradt's" in info.value.detail and 'here' in info.value.detail


def test_kamradt_harmless_arguments_are_ignored() -> None:
    harmless = {'save_results': True, 'save_contexts': False, 'results_version': 2}
    harmless |= {'seconds_to_sleep_between_completions': 1.5, 'print_ongoing_status': False}
    assert parse_params(harmless) == parse_params({'final_context_length_buffer': 200})
