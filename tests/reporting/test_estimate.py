"""Tests for the pre-run token and cost estimate."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.judging.judge import JUDGE_SYSTEM_PROMPT, JUDGE_USER_TEMPLATE
from evalscope_niah.making.tokenization import Tokenizer, load_tokenizer
from evalscope_niah.reporting.estimate import (
    PRICE_KEYS,
    TOTAL,
    PlannedRequest,
    Prices,
    TokenEstimate,
    estimate_tokens,
    format_estimate,
    parse_prices,
)
from tests.support.preview import run_preview

SF_QUESTION = 'What is the best thing to do in San Francisco?'
SF_REFERENCE = 'The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.'
ZH_QUESTION = '小明最喜欢的实习地点是哪里？'
ZH_REFERENCE = '小明最喜欢的实习的地点就是上海人工智能实验室。'
MAX_OUT = 512
JUDGE_MAX_OUT = 256
ALL_PRICES = Prices(model_input=0.5, model_output=1.5, judge_input=0.1, judge_output=0.2)


@pytest.fixture(scope='module')
def tokenizer() -> Tokenizer:
    return load_tokenizer('Qwen/Qwen3-0.6B')


def en(prompt_tokens: int, *, judged: bool = True) -> PlannedRequest:
    return PlannedRequest('niah_en', prompt_tokens, SF_QUESTION, SF_REFERENCE, judged)


def zh(prompt_tokens: int, *, judged: bool = True) -> PlannedRequest:
    return PlannedRequest('niah_zh', prompt_tokens, ZH_QUESTION, ZH_REFERENCE, judged)


def judge_input_tokens(tokenizer: Tokenizer, question: str, reference: str) -> int:
    user = JUDGE_USER_TEMPLATE.format(question=question, reference=reference, answer='')
    return tokenizer.count(JUDGE_SYSTEM_PROMPT) + tokenizer.count(user) + MAX_OUT


def estimate(tokenizer: Tokenizer, requests: list[PlannedRequest], prices: Prices | None = None) -> list[TokenEstimate]:
    return estimate_tokens(
        requests,
        count_tokens=tokenizer.count,
        max_output_tokens=MAX_OUT,
        judge_max_output_tokens=JUDGE_MAX_OUT,
        prices=prices,
    )


REQUESTS = [en(1000), zh(2000), en(4000), zh(8000, judged=False), en(16000, judged=False), zh(32000)]


# --- estimate_tokens ---------------------------------------------------------------------------------------------


def test_one_row_per_subset_in_first_seen_order_then_total(tokenizer: Tokenizer) -> None:
    rows = estimate(tokenizer, REQUESTS)
    assert [r.subset for r in rows] == ['niah_en', 'niah_zh', TOTAL]


def test_subset_rows_exact(tokenizer: Tokenizer) -> None:
    en_row, zh_row, _ = estimate(tokenizer, REQUESTS)
    en_judge = judge_input_tokens(tokenizer, SF_QUESTION, SF_REFERENCE)
    zh_judge = judge_input_tokens(tokenizer, ZH_QUESTION, ZH_REFERENCE)
    assert en_row == TokenEstimate(
        subset='niah_en',
        requests=3,
        model_input_tokens=21000,
        model_output_tokens=3 * MAX_OUT,
        judge_calls=2,
        judge_input_tokens=2 * en_judge,
        judge_output_tokens=2 * JUDGE_MAX_OUT,
        cost=None,
    )
    assert zh_row == TokenEstimate(
        subset='niah_zh',
        requests=3,
        model_input_tokens=42000,
        model_output_tokens=3 * MAX_OUT,
        judge_calls=2,
        judge_input_tokens=2 * zh_judge,
        judge_output_tokens=2 * JUDGE_MAX_OUT,
        cost=None,
    )


def test_judge_input_is_plausible_for_the_real_prompt(tokenizer: Tokenizer) -> None:
    # A one-line rubric plus question and reference: about a hundred tokens, never the haystack; the answer counts
    # at its full max_tokens.
    per_call = judge_input_tokens(tokenizer, SF_QUESTION, SF_REFERENCE)
    assert MAX_OUT + 60 < per_call < MAX_OUT + 300


def test_total_is_sum_of_subsets(tokenizer: Tokenizer) -> None:
    *subsets, total = estimate(tokenizer, REQUESTS, ALL_PRICES)
    for field in ('requests', 'model_input_tokens', 'model_output_tokens', 'judge_calls', 'judge_input_tokens'):
        assert getattr(total, field) == sum(getattr(r, field) for r in subsets), field
    assert total.judge_output_tokens == sum(r.judge_output_tokens for r in subsets)
    assert total.cost == pytest.approx(sum(r.cost for r in subsets if r.cost is not None))
    assert total.requests == len(REQUESTS)
    assert total.model_input_tokens == sum(r.prompt_tokens for r in REQUESTS)


def test_unjudged_requests_add_no_judge_tokens(tokenizer: Tokenizer) -> None:
    judged = estimate(tokenizer, [en(1000)])[-1]
    with_unjudged = estimate(tokenizer, [en(1000), en(5000, judged=False), en(7000, judged=False)])[-1]
    assert with_unjudged.judge_calls == judged.judge_calls == 1
    assert with_unjudged.judge_input_tokens == judged.judge_input_tokens
    assert with_unjudged.judge_output_tokens == judged.judge_output_tokens
    assert with_unjudged.model_output_tokens == 3 * MAX_OUT


def test_all_unjudged_subset_has_zero_judge_tokens(tokenizer: Tokenizer) -> None:
    row = estimate(tokenizer, [zh(100, judged=False), zh(200, judged=False)])[0]
    assert (row.judge_calls, row.judge_input_tokens, row.judge_output_tokens) == (0, 0, 0)


def test_count_tokens_cached_per_question_reference(tokenizer: Tokenizer) -> None:
    calls: Counter[str] = Counter()

    def counting(text: str) -> int:
        calls[text] += 1
        return tokenizer.count(text)

    requests = [en(n) for n in range(100, 2000, 100)] + [zh(n) for n in range(100, 2000, 100)]
    estimate_tokens(requests, count_tokens=counting, max_output_tokens=MAX_OUT, judge_max_output_tokens=JUDGE_MAX_OUT)
    # The system prompt once, then one user message per distinct (question, reference).
    assert sum(calls.values()) == 3
    assert all(count == 1 for count in calls.values())


def test_no_judge_counting_when_nothing_is_judged() -> None:
    def fail(text: str) -> int:
        raise AssertionError('count_tokens must not be called')

    rows = estimate_tokens(
        [en(10, judged=False)], count_tokens=fail, max_output_tokens=MAX_OUT, judge_max_output_tokens=JUDGE_MAX_OUT
    )
    assert rows[-1].judge_input_tokens == 0


def test_empty_plan_gives_a_zero_total(tokenizer: Tokenizer) -> None:
    assert estimate(tokenizer, [], ALL_PRICES) == [TokenEstimate(TOTAL, 0, 0, 0, 0, 0, 0, 0.0)]


def test_negative_limits_or_prompt_tokens_raise(tokenizer: Tokenizer) -> None:
    with pytest.raises(ValueError, match='max_output_tokens'):
        estimate_tokens([], count_tokens=tokenizer.count, max_output_tokens=-1, judge_max_output_tokens=1)
    with pytest.raises(ValueError, match='prompt_tokens'):
        estimate(tokenizer, [en(-5)])


# --- cost --------------------------------------------------------------------------------------------------------


def test_cost_arithmetic(tokenizer: Tokenizer) -> None:
    for row in estimate(tokenizer, REQUESTS, ALL_PRICES):
        expected = (
            row.model_input_tokens * 0.5
            + row.model_output_tokens * 1.5
            + row.judge_input_tokens * 0.1
            + row.judge_output_tokens * 0.2
        ) / 1_000_000
        assert row.cost == pytest.approx(expected)


def test_cost_round_numbers() -> None:
    # One million prompt tokens at 2.0 per million plus 1000 × 1000 output tokens at 10.0 per million.
    requests = [PlannedRequest('s', 1000, 'q', 'r', False) for _ in range(1000)]
    rows = estimate_tokens(
        requests,
        count_tokens=len,
        max_output_tokens=1000,
        judge_max_output_tokens=50,
        prices=Prices(model_input=2.0, model_output=10.0),
    )
    assert rows[-1].cost == pytest.approx(2.0 + 10.0)


def test_cost_none_without_prices(tokenizer: Tokenizer) -> None:
    assert all(r.cost is None for r in estimate(tokenizer, REQUESTS))


@pytest.mark.parametrize('missing', PRICE_KEYS)
def test_cost_none_when_a_needed_price_is_missing(tokenizer: Tokenizer, missing: str) -> None:
    prices = dataclasses.replace(ALL_PRICES, **{missing: None})
    assert all(r.cost is None for r in estimate(tokenizer, REQUESTS, prices))


def test_judge_prices_not_needed_for_unjudged_subset(tokenizer: Tokenizer) -> None:
    prices = Prices(model_input=1.0, model_output=2.0)
    requests = [en(1000), zh(1000, judged=False)]
    en_row, zh_row, total = estimate(tokenizer, requests, prices)
    assert en_row.cost is None  # judged: needs judge prices
    assert zh_row.cost == pytest.approx((1000 * 1.0 + MAX_OUT * 2.0) / 1_000_000)
    assert total.cost is None


def test_zero_max_output_tokens_needs_no_output_price(tokenizer: Tokenizer) -> None:
    rows = estimate_tokens(
        [en(1000, judged=False)],
        count_tokens=tokenizer.count,
        max_output_tokens=0,
        judge_max_output_tokens=0,
        prices=Prices(model_input=3.0),
    )
    assert rows[-1].cost == pytest.approx(0.003)


# --- format_estimate ---------------------------------------------------------------------------------------------


def test_format_contains_numbers_with_separators(tokenizer: Tokenizer) -> None:
    rows = estimate(tokenizer, REQUESTS, ALL_PRICES)
    text = format_estimate(rows, prices=ALL_PRICES)
    total = rows[-1]
    for value in (
        total.model_input_tokens,
        total.model_output_tokens,
        total.judge_input_tokens,
        total.judge_output_tokens,
        rows[0].model_input_tokens,
        rows[1].judge_input_tokens,
    ):
        assert f'{value:,}' in text
    assert '63,000' in text  # 21,000 + 42,000 prompt tokens
    assert f'{total.cost:,.4f}' in text
    assert 'cost' in text.splitlines()[0]
    assert 'upper bound' in text


def test_format_rows_are_aligned(tokenizer: Tokenizer) -> None:
    text = format_estimate(estimate(tokenizer, REQUESTS, ALL_PRICES), prices=ALL_PRICES)
    table = [line for line in text.splitlines() if not line.startswith(('Output', 'cost'))]
    assert len({len(line) for line in table}) == 1
    assert [line.split()[0] for line in table if line[0].isalpha()] == ['subset', 'niah_en', 'niah_zh', TOTAL]


def test_format_without_prices_has_no_cost_column(tokenizer: Tokenizer) -> None:
    text = format_estimate(estimate(tokenizer, REQUESTS), prices=None)
    assert 'cost' not in text
    assert 'upper bound' in text


def test_format_marks_unknown_cost(tokenizer: Tokenizer) -> None:
    prices = Prices(model_input=1.0, model_output=2.0)
    text = format_estimate(estimate(tokenizer, [en(1000), zh(1000, judged=False)], prices), prices=prices)
    total_line = next(line for line in text.splitlines() if line.startswith(TOTAL))
    assert total_line.rstrip().endswith('-')
    assert 'price' in text.splitlines()[-1]


def test_format_empty_plan() -> None:
    rows = estimate_tokens([], count_tokens=len, max_output_tokens=1, judge_max_output_tokens=1)
    text = format_estimate(rows, prices=None)
    assert text.splitlines()[2].startswith(TOTAL)


# --- parse_prices ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('text', 'expected'),
    [
        ('model_input=0.5,model_output=1.5,judge_input=0.1,judge_output=0.2', ALL_PRICES),
        ('model_input=0.5', Prices(model_input=0.5)),
        (' judge_output = 2 , model_input=1e-1 ', Prices(model_input=0.1, judge_output=2.0)),
        ('model_output=0', Prices(model_output=0.0)),
    ],
)
def test_parse_prices(text: str, expected: Prices) -> None:
    assert parse_prices(text) == expected


@pytest.mark.parametrize(
    'text',
    [
        '',
        '  ',
        '0.5',  # a bare number is ambiguous: keys are required
        'model_input',
        'model_input=',
        'model_input=abc',
        'model_input=-0.5',
        'model_input=nan',
        'model_input=inf',
        'input=0.5',
        'Model_Input=0.5',
        'model_input=1,model_input=2',
        'model_input=1,,model_output=2',
        'model_input=1,',
    ],
)
def test_parse_prices_errors(text: str) -> None:
    with pytest.raises(NiahConfigError) as info:
        parse_prices(text)
    assert info.value.param == '--prices'
    for key in PRICE_KEYS:
        assert key in info.value.detail


# ---- preview --estimate applies the same limits as preview and run_task -----------------------------------------

# 101 lengths x 50 depths x 2 subsets = 10,100 samples: just over MAX_SAMPLES_PER_RUN.
LARGE_GRID = {'context_lengths': list(range(600, 1105, 5)), 'document_depth_percents': list(range(0, 100, 2))}


def test_estimate_refuses_a_large_grid_exactly_as_preview_does(fixture_corpus_dir: Path, capsys) -> None:
    dataset_args = {'local_path': str(fixture_corpus_dir), 'extra_params': LARGE_GRID}
    estimated = run_preview(capsys, dataset_args, '--estimate')
    previewed = run_preview(capsys, dataset_args)
    assert estimated[0] == previewed[0] == 2
    assert estimated[1] == previewed[1] == ''
    assert estimated[2] == previewed[2]
    assert estimated[2].startswith('evalscope-niah: error: allow_large_grid: the run has 10,100 samples')


def test_estimate_of_an_allowed_large_grid_counts_every_request(fixture_corpus_dir: Path, capsys) -> None:
    extra = {**LARGE_GRID, 'allow_large_grid': True}
    code, out, err = run_preview(capsys, {'local_path': str(fixture_corpus_dir), 'extra_params': extra}, '--estimate')
    assert code == 0, err
    total = next(line for line in out.splitlines() if line.startswith(TOTAL))
    assert total.split()[1] == '10,100'


def test_estimate_refuses_a_corpus_repeated_too_often_until_allowed(fixture_corpus_dir: Path, capsys) -> None:
    # The fixture corpus has about 3,000 tokens: 100,000 tokens repeat it about 34 times.
    extra = {'context_lengths': [100_000], 'document_depth_percents': [50]}
    dataset_args = {'local_path': str(fixture_corpus_dir), 'subset_list': ['english'], 'extra_params': extra}
    code, out, err = run_preview(capsys, dataset_args, '--estimate')
    assert (code, out) == (2, '')
    assert err.startswith('evalscope-niah: error: max_corpus_repeats: context length 100,000 would repeat')
    assert 'max_corpus_repeats=20' in err
    dataset_args['extra_params'] = {**extra, 'max_corpus_repeats': 40}
    code, out, err = run_preview(capsys, dataset_args, '--estimate')
    assert code == 0, err
    assert next(line for line in out.splitlines() if line.startswith('english')).split()[1:3] == ['1', '100,000']
