"""The model's window, checked before any model request: a length fits when its prompt plus the answer budget does.

Our lengths are counted by our tokenizer (Qwen3 by default); the model counts with its own, which may give the same
prompt far more tokens (SmolLM2 reads a Qwen3 2000-token Chinese prompt as about 4,800). So where the server can
count a chat (its tokenize API: ``endpoint.count_chat_tokens``), the prompts are measured there: the longest length
of each subset first (one count when it fits), and when it does not, the longest length the ratio of the two counts
predicts to fit, counted too, until one fits (every shorter length then fits). Without such an API our own count
decides, as it did before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import NiahConfigError
from ..metadata import GridCell
from ..serving.endpoint import count_chat_tokens
from .samples import SubsetSampler

__all__ = ['ServedCount', 'check_window', 'served_counter', 'served_lengths_past']

# The subset and length of a prompt -> the server's count of it (None: the server cannot count).
CountServed = Callable[[str, int], 'int | None']


@dataclass(frozen=True)
class ServedCount:
    """One prompt measured by the server: its length in our tokens and in the model's."""

    subset: str
    length: int
    served: int


def served_lengths_past(
    subset: str, lengths: Sequence[int], *, limit: int, count: CountServed
) -> tuple[list[int], list[ServedCount]] | None:
    """The lengths of ``subset`` whose prompt the server counts past ``limit`` tokens, and the counts taken; None
    when the server cannot count.

    A longer prompt is never fewer tokens, so only the boundary is searched: the longest length first (one count
    when it fits), then the longest one the last count's ratio predicts to fit, then the one just past it, each
    count narrowing the lengths not yet known to fit or not (about three counts when the prediction is right)."""
    fit, past = 0, None  # the longest length known to fit (0: none yet), the shortest known past the limit
    counted: list[ServedCount] = []
    ratio = None
    while True:
        open_lengths = sorted(length for length in set(lengths) if length > fit and (past is None or length < past))
        if not open_lengths:
            break
        if ratio is None:
            length = open_lengths[-1]
        else:
            predicted = [other for other in open_lengths if other * ratio <= limit]
            length = predicted[-1] if predicted else open_lengths[0]
        served = count(subset, length)
        if served is None:
            return None
        counted.append(ServedCount(subset, length, served))
        ratio = served / length
        if served <= limit:
            fit = length
        else:
            past = length
    return sorted(length for length in set(lengths) if past is not None and length >= past), counted


def check_window(
    cells: Sequence[GridCell],
    *,
    window: int,
    budget: int,
    count: CountServed | None,
    tokenizer_name: str,
    source: str = 'its server says so',
) -> None:
    """Refuse (NiahConfigError on ``context_lengths``) the lengths whose prompt plus ``budget`` answer tokens do
    not fit ``window``; counted by the server where ``count`` can, else by our tokenizer."""
    limit = window - budget
    lengths: dict[str, list[int]] = {}
    for cell in cells:
        lengths.setdefault(cell.subset, []).append(cell.context_length)
    past: dict[str, list[int]] = {}
    counted: list[ServedCount] = []
    for subset, subset_lengths in lengths.items():
        served = served_lengths_past(subset, subset_lengths, limit=limit, count=count) if count else None
        if served is None:  # the server does not count: our own tokens decide
            past[subset] = sorted({length for length in subset_lengths if length > limit})
        else:
            past[subset], subset_counted = served
            counted += subset_counted
    past = {subset: subset_past for subset, subset_past in past.items() if subset_past}
    if past:
        raise NiahConfigError('context_lengths', _message(window, source, budget, past, counted, tokenizer_name))


def _message(
    window: int, source: str, budget: int, past: dict[str, list[int]], counted: list[ServedCount], tokenizer_name: str
) -> str:
    too_long = sorted({length for subset_past in past.values() for length in subset_past})
    where = '; '.join(f'{subset} {lengths}' for subset, lengths in past.items())
    counted_by = "its server's tokenizer" if counted else tokenizer_name
    message = (
        f'the model reads at most {window} tokens ({source}); counted by {counted_by}, lengths {too_long} plus the '
        f'answer budget of {budget} tokens do not fit ({where})'
    )
    lower = ', or lower max_tokens' if budget else ''
    longest = {c.subset: c for c in sorted(counted, key=lambda c: c.length) if c.subset in past}
    grown = [c for c in longest.values() if c.served > c.length]
    if grown:
        shown = '; '.join(
            f'a {c.subset} prompt of {c.length} tokens by {tokenizer_name} is {c.served} by the server' for c in grown
        )
        return (
            f"{message}: {shown}. Count lengths in the model's own tokens with tokenizer_path: 'server', or use "
            f'shorter lengths (context_lengths / context_lengths_max){lower}'
        )
    return f'{message}. Drop those lengths (context_lengths / context_lengths_max){lower}'


def served_counter(
    samplers: Sequence[tuple[SubsetSampler, Sequence[GridCell]]], *, api_url: str, model: str, api_key: str | None
) -> CountServed:
    """Counts the prompt of a subset's first cell of a length (a needle cell where there is one: the prompt the
    model reads, built as inference builds it) with the server's tokenizer."""
    by_subset = {sampler.subset.name: (sampler, cells) for sampler, cells in samplers}

    def count(subset: str, length: int) -> int | None:
        sampler, cells = by_subset[subset]
        of_length = [cell for cell in cells if cell.context_length == length]
        cell = next((cell for cell in of_length if not cell.control), of_length[0])
        messages = sampler.sample(cell).messages()
        return count_chat_tokens(api_url, model=model, messages=messages, api_key=api_key)

    return count
