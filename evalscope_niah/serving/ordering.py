"""Request order for servers with automatic prefix caching (vLLM, SGLang), and the share of tokens it reuses.

Every haystack of a subset that starts at the same corpus point is the same text up to its first needle (or, for
a needle-absent control, up to its end). So two prompts share their first ``min(d_a, d_b)`` tokens, where ``d`` is
the prompt token at which a prompt stops following the corpus (its *divergence token*).

With one request at a time any order reuses the same tokens. With several in flight, a prompt can only reuse what
finished before it started. Lengths ascending, and inside each length the deepest prompt first, works best: each
length is seeded by one prompt that covers the rest of that length, and the short lengths, cheap to compute
without any reuse, fill the first concurrent slots. (Simulated on the default grid with 8 in flight: 47.7% reused,
against 46.6% in grid order and 37% when sending the deepest prompts of the whole grid first.)
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any, TypeVar

from .prefix_gate import waiting_pays

T = TypeVar('T')

# Simulated cost of generating the reply, in prompt-token equivalents: keeps short prompts from finishing in no time.
_REPLY_COST_TOKENS = 200


@dataclass(frozen=True)
class PrefixInfo:
    group: Hashable  # prompts of one group follow the same text until they diverge (subset, haystack start)
    context_length: int
    divergence_token: int
    prompt_tokens: int


def sample_prefix_info(sample: Any) -> PrefixInfo:
    """PrefixInfo of a NeedleSample (or anything with the same fields)."""
    return PrefixInfo(
        group=(sample.subset, sample.start_token),
        context_length=sample.context_length,
        divergence_token=sample.divergence_token,
        prompt_tokens=sample.prompt_tokens,
    )


def prefix_friendly_order(
    items: Sequence[T], *, info: Callable[[T], PrefixInfo] = sample_prefix_info, interleave: bool = False
) -> list[T]:
    """Groups in first-seen order; inside a group lengths ascending, each length's deepest prompt first, then the
    others by rising divergence. Stable for equal keys.

    ``interleave``: the groups take turns (the k-th prompt of every group, then the (k+1)-th), each in its own order.
    Behind a router that keeps each group on one replica, the requests in flight then spread over the replicas
    instead of queueing on one (simulated on 8 replicas: benchmarks/bench_replicas.py). Not the default: a server
    whose cache holds only the prompt just before (llama.cpp with one slot) loses its reuse when groups alternate
    (measured with benchmarks/bench_router.py: one llama.cpp server computed 6,191 prompt tokens of a grid sent this
    way, 5,977 group after group, and round robin over two only 1.03x the first).
    """
    infos = [info(item) for item in items]
    group_rank: dict[Hashable, int] = {}
    deepest: dict[tuple[Hashable, int], int] = {}
    for position, entry in enumerate(infos):
        group_rank.setdefault(entry.group, len(group_rank))
        key = (entry.group, entry.context_length)
        if key not in deepest or entry.divergence_token > infos[deepest[key]].divergence_token:
            deepest[key] = position
    seeds = set(deepest.values())

    def order(position: int) -> tuple:
        entry = infos[position]
        return (group_rank[entry.group], entry.context_length, position not in seeds, entry.divergence_token)

    ordered = sorted(range(len(items)), key=order)
    if interleave:
        queues: dict[Hashable, list[int]] = defaultdict(list)  # per group, in group order (first seen first)
        for position in ordered:
            queues[infos[position].group].append(position)
        ordered = [position for round_ in zip_longest(*queues.values()) for position in round_ if position is not None]
    return [items[position] for position in ordered]


def prefix_reuse_share(infos: Sequence[PrefixInfo], *, concurrency: int = 1, gate: bool = False) -> float:
    """Share of all prompt tokens, sent in this order, that are a prefix of a prompt already processed.

    Simulates ``concurrency`` workers taking requests in order. A request takes time proportional to the prompt
    tokens it must compute (plus a fixed reply cost), and reuses ``min(d, deepest d of its group that finished
    before it started)`` tokens. The cache is assumed to evict nothing; block granularity (16 tokens in vLLM) is
    ignored. ``gate``: as prefix_gate.PrefixGate, a request for which waiting on its group's requests in flight
    pays (prefix_gate.waiting_pays) starts when one of them ends (its worker idles meanwhile).
    """
    if concurrency < 1:
        raise ValueError(f'concurrency must be at least 1, got {concurrency}')
    total = sum(entry.prompt_tokens for entry in infos)
    if not total:
        return 0.0
    free_at = [0.0] * concurrency
    finished: list[tuple[float, Hashable, int]] = []  # heap of (finish time, group, divergence), in flight included
    deepest: dict[Hashable, int] = defaultdict(int)

    def cached(at: float) -> None:
        while finished and finished[0][0] <= at:
            _, group, divergence = heapq.heappop(finished)
            deepest[group] = max(deepest[group], divergence)

    reused = 0
    for entry in infos:
        start = heapq.heappop(free_at)
        cached(start)
        while gate:
            computing = [(end, d) for end, group, d in finished if group == entry.group]  # in flight: a few
            coming = max((d for _, d in computing), default=0)
            cache = deepest[entry.group]
            if not waiting_pays(entry.divergence_token, entry.prompt_tokens, cached=cache, computing=coming):
                break
            start = min(end for end, _ in computing)
            cached(start)
        share = min(entry.divergence_token, deepest[entry.group])
        reused += share
        end = start + entry.prompt_tokens - share + _REPLY_COST_TOKENS
        heapq.heappush(free_at, end)
        heapq.heappush(finished, (end, entry.group, entry.divergence_token))
    return reused / total
