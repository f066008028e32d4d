"""Token and cost estimate of a run before anything is sent (the pure part of ``preview --estimate``).

Model input is exact (a sample's ``context_length`` is its prompt's token count); model and judge output are upper
bounds (every reply counted at its ``max_tokens`` limit), and so is judge input, which holds the model's answer.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.judging.judge import JUDGE_SYSTEM_PROMPT, JUDGE_USER_TEMPLATE

__all__ = [
    'PRICE_KEYS',
    'TOTAL',
    'PlannedRequest',
    'Prices',
    'TokenEstimate',
    'estimate_tokens',
    'format_estimate',
    'parse_prices',
]

TOTAL = 'TOTAL'
_PER = 1_000_000  # prices are per million tokens


@dataclass(frozen=True)
class PlannedRequest:
    """One model call the run will make."""

    subset: str
    prompt_tokens: int  # exact: our samples' context_length is the exact prompt token count
    question: str
    reference: str  # the reference answer the judge compares with
    judged: bool  # False when the sample is scored by rule only (judge skipped)


@dataclass(frozen=True)
class Prices:
    """Price per million tokens (USD or any currency); None = unknown."""

    model_input: float | None = None
    model_output: float | None = None
    judge_input: float | None = None
    judge_output: float | None = None


PRICE_KEYS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Prices))


@dataclass(frozen=True)
class TokenEstimate:
    subset: str  # or 'TOTAL'
    requests: int
    model_input_tokens: int
    model_output_tokens: int  # upper bound: requests × max_output_tokens
    judge_calls: int
    judge_input_tokens: int  # upper bound: each judged answer counted at max_output_tokens
    judge_output_tokens: int  # upper bound: judge_calls × judge_max_output_tokens
    cost: float | None  # None unless every price needed for the non-zero token counts is given


def _cost(
    prices: Prices | None, *, model_input: int, model_output: int, judge_input: int, judge_output: int
) -> float | None:
    """Cost of the token counts, or None when a count is non-zero and its price unknown (a zero needs no price)."""
    if prices is None:
        return None
    pairs = (
        (model_input, prices.model_input),
        (model_output, prices.model_output),
        (judge_input, prices.judge_input),
        (judge_output, prices.judge_output),
    )
    if any(tokens and price is None for tokens, price in pairs):
        return None
    return sum((tokens * price / _PER for tokens, price in pairs if tokens), 0.0)


def _row(
    subset: str,
    *,
    requests: int,
    model_input: int,
    judge_calls: int,
    judge_input: int,
    max_output_tokens: int,
    judge_max_output_tokens: int,
    prices: Prices | None,
) -> TokenEstimate:
    model_output = requests * max_output_tokens
    judge_output = judge_calls * judge_max_output_tokens
    return TokenEstimate(
        subset=subset,
        requests=requests,
        model_input_tokens=model_input,
        model_output_tokens=model_output,
        judge_calls=judge_calls,
        judge_input_tokens=judge_input,
        judge_output_tokens=judge_output,
        cost=_cost(
            prices,
            model_input=model_input,
            model_output=model_output,
            judge_input=judge_input,
            judge_output=judge_output,
        ),
    )


def estimate_tokens(
    requests: Sequence[PlannedRequest],
    *,
    count_tokens: Callable[[str], int],
    max_output_tokens: int,
    judge_max_output_tokens: int,
    prices: Prices | None = None,
) -> list[TokenEstimate]:
    """One row per subset (first-seen order) plus a final ``TOTAL`` row.

    A judged request's judge input is the system prompt plus the user message with an empty answer, plus
    ``max_output_tokens`` for the answer (the longest the model may reply). System and user are counted separately,
    as they are separate messages; chat-template framing (a few tokens per message) is not counted.
    """
    if max_output_tokens < 0 or judge_max_output_tokens < 0:
        raise ValueError('max_output_tokens and judge_max_output_tokens must be >= 0')
    system_tokens: int | None = None
    user_tokens: dict[tuple[str, str], int] = {}  # the same question/reference recurs across every cell

    def judge_input(request: PlannedRequest) -> int:
        nonlocal system_tokens
        if system_tokens is None:
            system_tokens = count_tokens(JUDGE_SYSTEM_PROMPT)
        key = (request.question, request.reference)
        if key not in user_tokens:
            user = JUDGE_USER_TEMPLATE.format(question=request.question, reference=request.reference, answer='')
            user_tokens[key] = count_tokens(user)
        return system_tokens + user_tokens[key] + max_output_tokens

    # subset -> [requests, model input, judge calls, judge input]; dicts keep first-seen order.
    sums: dict[str, list[int]] = {}
    for request in requests:
        if request.prompt_tokens < 0:
            raise ValueError(f'prompt_tokens must be >= 0, got {request.prompt_tokens} for {request.subset!r}')
        acc = sums.setdefault(request.subset, [0, 0, 0, 0])
        acc[0] += 1
        acc[1] += request.prompt_tokens
        if request.judged:
            acc[2] += 1
            acc[3] += judge_input(request)

    def row(subset: str, acc: Sequence[int]) -> TokenEstimate:
        return _row(
            subset,
            requests=acc[0],
            model_input=acc[1],
            judge_calls=acc[2],
            judge_input=acc[3],
            max_output_tokens=max_output_tokens,
            judge_max_output_tokens=judge_max_output_tokens,
            prices=prices,
        )

    rows = [row(subset, acc) for subset, acc in sums.items()]
    totals = [sum(acc[i] for acc in sums.values()) for i in range(4)]
    return [*rows, row(TOTAL, totals)]


# --- table -------------------------------------------------------------------------------------------------------

_HEADERS = ('subset', 'requests', 'model in', 'model out', 'judge calls', 'judge in', 'judge out')


def _format_cost(cost: float | None) -> str:
    return '-' if cost is None else f'{cost:,.4f}'


def format_estimate(rows: Sequence[TokenEstimate], *, prices: Prices | None) -> str:
    """Aligned plain-text table, thousands separators, a cost column only when prices are given, and notes."""
    headers = _HEADERS + (('cost',) if prices is not None else ())
    table = [
        [
            r.subset,
            f'{r.requests:,}',
            f'{r.model_input_tokens:,}',
            f'{r.model_output_tokens:,}',
            f'{r.judge_calls:,}',
            f'{r.judge_input_tokens:,}',
            f'{r.judge_output_tokens:,}',
            *((_format_cost(r.cost),) if prices is not None else ()),
        ]
        for r in rows
    ]
    widths = [max([len(h), *(len(cells[i]) for cells in table)]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        # Subset names left-aligned, numbers right-aligned.
        return '  '.join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    out = [line(headers), line(['-' * w for w in widths])]
    for cells, r in zip(table, rows, strict=True):
        if r.subset == TOTAL and len(rows) > 1:
            out.append(line(['-' * w for w in widths]))
        out.append(line(cells))
    out.append(
        'Output tokens are upper bounds (every reply counted at its max_tokens limit); judge input counts each answer '
        'at that limit too.'
    )
    if prices is not None and any(r.cost is None for r in rows):
        out.append('cost "-": a price needed for that row was not given.')
    return '\n'.join(out)


# --- --prices ----------------------------------------------------------------------------------------------------


def _prices_error(detail: str) -> NiahConfigError:
    return NiahConfigError(
        '--prices',
        f'{detail}; expected comma-separated key=price-per-million-tokens pairs with keys {", ".join(PRICE_KEYS)}, '
        'e.g. model_input=0.5,model_output=1.5',
    )


def parse_prices(text: str) -> Prices:
    """Parse ``model_input=0.5,model_output=1.5,judge_input=0.1,judge_output=0.2`` (any subset of the keys).

    Keys are required (a bare number would be ambiguous); prices must be finite and >= 0; a key may appear once.
    """
    items = [item.strip() for item in text.split(',')]
    if not any(items):
        raise _prices_error('no prices given')
    values: dict[str, float] = {}
    for item in items:
        if not item:
            raise _prices_error(f'empty entry in {text!r}')
        key, sep, raw = (part.strip() for part in item.partition('='))
        if not sep:
            raise _prices_error(f'{item!r} has no key')
        if key not in PRICE_KEYS:
            raise _prices_error(f'unknown key {key!r}')
        if key in values:
            raise _prices_error(f'{key!r} given twice')
        try:
            price = float(raw)
        except ValueError:
            raise _prices_error(f'{key}: {raw!r} is not a number') from None
        if not math.isfinite(price) or price < 0:
            raise _prices_error(f'{key}: price must be a finite number >= 0, got {raw!r}')
        values[key] = price
    return Prices(**values)
