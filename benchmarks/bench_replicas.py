"""Prefill across N replicas behind a router, simulated: round robin, cache_aware, and consistent hashing on our key.

    python benchmarks/bench_replicas.py [--grid default|1m|both] [--replicas 8] [--in-flight 16]
                                        [--prefill-rate 5000] [--ring-seeds 20] [--json FILE] [--quick]

A grid's requests are described on paper, from the parameter model's own grid (``NiahParams.context_length_grid``,
``depth_percent_grid``; subsets x ``num_repeats`` prefix groups): a prompt of length L with its needle at depth p
follows its group's corpus text up to ``FRAME + p/100 x (L - FRAME - QUESTION)`` tokens (its divergence token). The
requests go out in our send order (``serving.ordering.prefix_friendly_order``), W at a time, as EvalScope's
worker pool sends them. Each is routed when sent:

- ``one replica``: everything on one server (the floor: what N replicas can at best match);
- ``random``: any replica (mean over ``--ring-seeds`` picks): no affinity at all;
- ``round_robin``: the k-th request to replica k mod N: a group's prompts, sent one after another, spread over
  every replica;
- ``cache_aware``: vllm-router's / sglang-router's rule: the replica whose prefix tree matches the most of the
  prompt if that is over ``cache_threshold`` (0.3) of it, else the replica with the smallest tree (the tree is
  updated when a request is routed, as the routers do);
- ``consistent_hash (our key)``: a ring of 160 virtual nodes per replica (as vllm-router), hashed on the routing
  key ``serving.routing.routing_key``; placement depends on the replicas' addresses, so the balance figures
  are the mean (and worst) over ``--ring-seeds`` sets of addresses. ``(key+length)``: the same ring on the key and
  the context length, a finer key that spreads better and shares less;
- ``sglang manual, min_group (our key)``: sglang-router's ``--policy manual --assignment-mode min_group``: a new
  key goes to the replica holding the fewest keys, and stays there.

A replica computes one request at a time in arrival order, and a request reuses ``min(d, deepest d of its group
that replica finished before it started)`` tokens (cache never evicts; block granularity ignored; reply cost 200
prompt-token equivalents, as ``ordering.prefix_reuse_share``). Prefill-bound: wall time is the last reply, in
token-times, turned into hours at ``--prefill-rate`` tokens/s per replica (an assumption, stated in the output).
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import heapq
import random
import statistics
import sys
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import by_name, format_table, machine, verdict, write_json_report, write_record

from evalscope_niah.serving.ordering import PrefixInfo, prefix_friendly_order
from evalscope_niah.serving.routing import routing_key
from evalscope_niah.tasks.compose import parse_params

# Prompt tokens before the haystack (system prompt and instruction) and after it (question and answer cue), as our
# default English prompt has them in Qwen3 tokens (measured on the default frame: 62 before, 30 after).
FRAME_TOKENS = 62
QUESTION_TOKENS = 30
REPLY_COST_TOKENS = 200  # as evalscope_niah.serving.ordering: generating the short answer, in prompt-token equivalents
VIRTUAL_NODES = 160  # vllm-router's consistent_hash ring
CACHE_THRESHOLD = 0.3  # the --cache-threshold default of vllm-router 0.1.17 and sglang-router 0.3.2
SUBSETS = ('english', 'chinese')
GRIDS: dict[str, dict[str, Any]] = {
    'default': {},  # EvalScope's defaults: 1k-32k, 10 lengths x 10 depths, both subsets
    '1m': {'context_lengths_min': 100_000, 'context_lengths_max': 1_000_000, 'allow_large_grid': True},
}
GRID_SUBSETS = {'default': SUBSETS, '1m': ('english',)}
BALANCE_GROUPS = (8, 16, 32, 64, 128, 256)
KEY_POLICY = 'consistent_hash (our key)'
POLICIES = (
    'one replica',
    'random',
    'round_robin',
    'cache_aware',
    'consistent_hash (our key)',
    'consistent_hash (key+length)',
    'sglang manual, min_group (our key)',
    # The same two with request_order 'replicas' (the groups take turns), so the requests in flight spread.
    'consistent_hash (our key), replicas order',
    'sglang manual, min_group (our key), replicas order',
)


@dataclass(frozen=True)
class Request:
    info: PrefixInfo
    key: str  # the routing key of its group


def grid_requests(grid: str, *, num_repeats: int, interleave: bool = False) -> list[Request]:
    """Every request of ``grid`` with ``num_repeats`` haystack starts per subset, in our send order
    (``interleave``: request_order 'replicas')."""
    params = parse_params({**GRIDS[grid], 'num_repeats': num_repeats})
    requests = []
    for subset in GRID_SUBSETS[grid]:
        for repeat in range(num_repeats):
            start = repeat  # any distinct start per repeat: only the grouping matters here
            for length in params.context_length_grid():
                haystack = max(0, length - FRAME_TOKENS - QUESTION_TOKENS)
                for depth in params.depth_percent_grid():
                    divergence = FRAME_TOKENS + round(depth / 100 * haystack)
                    info = PrefixInfo((subset, start), length, divergence, length)
                    requests.append(Request(info, routing_key(subset, start)))
    return prefix_friendly_order(requests, info=lambda request: request.info, interleave=interleave)


class HashRing:
    """Consistent hashing with virtual nodes: a key goes to the first node clockwise of its hash."""

    def __init__(self, replicas: int, *, seed: int) -> None:
        points = [
            (_hash(f'http://10.0.{seed}.{replica}:8000#{node}'), replica)
            for replica in range(replicas)
            for node in range(VIRTUAL_NODES)
        ]
        points.sort()
        self._hashes = [point for point, _ in points]
        self._replicas = [replica for _, replica in points]

    def replica(self, key: str) -> int:
        at = bisect.bisect(self._hashes, _hash(key)) % len(self._hashes)
        return self._replicas[at]


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), 'big')


@dataclass
class Outcome:
    policy: str
    computed: list[int]  # prompt tokens computed per replica
    wall: float  # last reply, in token-times
    groups_split: int  # prefix groups whose prompts went to more than one replica

    @property
    def total(self) -> int:
        return sum(self.computed)

    @property
    def imbalance(self) -> float:
        """Busiest replica's computed tokens over the mean (1.0: perfectly even)."""
        mean = self.total / len(self.computed)
        return max(self.computed) / mean if mean else 1.0


@dataclass
class _CacheAwareRouter:
    """The cache_aware rule on an ideal prefix tree: per replica, the deepest divergence seen per group."""

    replicas: int
    deepest: list[dict[Hashable, int]] = field(default_factory=list)
    tree_size: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.deepest = [defaultdict(int) for _ in range(self.replicas)]
        self.tree_size = [0] * self.replicas

    def route(self, info: PrefixInfo) -> int:
        matches = [min(info.divergence_token, seen[info.group]) for seen in self.deepest]
        best = max(range(self.replicas), key=lambda replica: matches[replica])
        if matches[best] / info.prompt_tokens <= CACHE_THRESHOLD:
            best = min(range(self.replicas), key=lambda replica: self.tree_size[replica])
        self.tree_size[best] += info.prompt_tokens - matches[best]
        seen = self.deepest[best]
        seen[info.group] = max(seen[info.group], info.divergence_token)
        return best


def simulate(requests: Sequence[Request], *, policy: str, replicas: int, in_flight: int, seed: int = 0) -> Outcome:
    count = 1 if policy == 'one replica' else replicas
    ring = HashRing(count, seed=seed)
    cache_aware = _CacheAwareRouter(count)
    chooser = random.Random(seed)
    client = [0.0] * in_flight  # when each of the client's slots is free
    replica_free = [0.0] * count
    finished: list[list[tuple[float, Hashable, int]]] = [[] for _ in range(count)]  # heap per replica
    deepest: list[dict[Hashable, int]] = [defaultdict(int) for _ in range(count)]
    computed = [0] * count
    placed: dict[Hashable, set[int]] = defaultdict(set)
    sticky: dict[str, int] = {}  # sglang manual: key -> replica, a new key to the replica holding the fewest keys
    wall = 0.0
    for index, request in enumerate(requests):
        info = request.info
        sent = heapq.heappop(client)
        if policy == 'random':
            replica = chooser.randrange(count)
        elif policy == 'round_robin':
            replica = index % count
        elif policy == 'cache_aware':
            replica = cache_aware.route(info)
        elif policy.startswith('sglang manual'):
            if request.key not in sticky:
                held = [list(sticky.values()).count(replica) for replica in range(count)]
                sticky[request.key] = held.index(min(held))
            replica = sticky[request.key]
        elif policy == 'consistent_hash (key+length)':
            replica = ring.replica(f'{request.key}-{info.context_length}')
        elif policy.startswith('consistent_hash'):
            replica = ring.replica(request.key)
        else:
            replica = 0
        placed[info.group].add(replica)
        start = max(sent, replica_free[replica])
        done = finished[replica]
        while done and done[0][0] <= start:
            _, group, divergence = heapq.heappop(done)
            deepest[replica][group] = max(deepest[replica][group], divergence)
        reused = min(info.divergence_token, deepest[replica][info.group])
        computed[replica] += info.prompt_tokens - reused
        end = start + info.prompt_tokens - reused + REPLY_COST_TOKENS
        replica_free[replica] = end
        heapq.heappush(done, (end, info.group, info.divergence_token))
        heapq.heappush(client, end)
        wall = max(wall, end)
    split = sum(1 for replicas_used in placed.values() if len(replicas_used) > 1)
    return Outcome(policy, computed, wall, split)


def hash_balance(groups: int, *, replicas: int, seeds: int) -> tuple[float, float]:
    """Busiest replica's share of ``groups`` equal groups over the mean, when the ring places them by our key: the
    mean and the worst over ``seeds`` sets of replica addresses."""
    ratios = []
    for seed in range(seeds):
        ring = HashRing(replicas, seed=seed)
        load = [0] * replicas
        for group in range(groups):
            load[ring.replica(routing_key(SUBSETS[group % 2], group // 2))] += 1
        ratios.append(max(load) / (groups / replicas))
    return statistics.mean(ratios), max(ratios)


@dataclass
class Row:
    grid: str
    groups: int
    policy: str
    computed: int  # prompt tokens computed, all replicas (consistent hash: the same for every ring)
    vs_one: float
    vs_round_robin: float
    replicas_used: float  # mean over rings
    imbalance: float  # busiest / mean, mean over rings
    worst_imbalance: float
    wall_hours: float  # mean over rings, at the stated prefill rate
    gpu_hours: float  # computed tokens at the stated prefill rate


def measure(
    grid: str, *, num_repeats: int, replicas: int, in_flight: int, rate: float, seeds: int
) -> tuple[list[Row], int]:
    requests = grid_requests(grid, num_repeats=num_repeats)
    turns = grid_requests(grid, num_repeats=num_repeats, interleave=True)
    outcomes = {
        policy: [
            simulate(
                turns if policy.endswith('replicas order') else requests,
                policy=policy.removesuffix(', replicas order'),
                replicas=replicas,
                in_flight=in_flight,
                seed=seed,
            )
            for seed in (range(seeds) if policy.startswith(('consistent_hash', 'random')) else [0])
        ]
        for policy in POLICIES
    }
    one = outcomes['one replica'][0].total
    round_robin = outcomes['round_robin'][0].total
    groups = len({request.info.group for request in requests})
    rows = []
    for policy, runs in outcomes.items():
        total = statistics.mean(run.total for run in runs)
        rows.append(
            Row(
                grid=grid,
                groups=groups,
                policy=policy,
                computed=round(total),
                vs_one=total / one,
                vs_round_robin=total / round_robin,
                replicas_used=statistics.mean(sum(1 for tokens in run.computed if tokens) for run in runs),
                imbalance=statistics.mean(run.imbalance for run in runs),
                worst_imbalance=max(run.imbalance for run in runs),
                wall_hours=statistics.mean(run.wall for run in runs) / rate / 3600,
                gpu_hours=total / rate / 3600,
            )
        )
    return rows, sum(request.info.prompt_tokens for request in requests)


QUICK_ONLY = 'the default grid, num_repeats 1 and 2, 2 ring seeds (seconds): checks the script runs'


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--grid', choices=['default', '1m', 'both'], default='both')
    parser.add_argument('--replicas', type=int, default=8)
    parser.add_argument('--in-flight', type=int, default=16, help="requests sent at once (EvalScope's eval_batch_size)")
    parser.add_argument('--repeats', default='1,2,4,8,16', help='num_repeats values (haystack starts per subset)')
    parser.add_argument('--prefill-rate', type=float, default=5000.0, help='prompt tokens/s of one replica (assumed)')
    parser.add_argument('--ring-seeds', type=int, default=20, help='replica address sets for consistent hashing')
    parser.add_argument('--json', type=Path, help='also write the figures as JSON to this file')
    parser.add_argument('--quick', action='store_true', help=QUICK_ONLY)
    args = parser.parse_args(argv)
    if args.quick:
        args.grid, args.repeats, args.ring_seeds = 'default', '1,2', 2
    if args.replicas < 1 or args.in_flight < 1 or args.ring_seeds < 1 or args.prefill_rate <= 0:
        parser.error('--replicas, --in-flight, --ring-seeds and --prefill-rate must be positive')
    repeats = [int(value) for value in args.repeats.split(',')]
    grids = ['default', '1m'] if args.grid == 'both' else [args.grid]
    rows: list[Row] = []
    lines = []
    for grid in grids:
        for num_repeats in repeats:
            grid_rows, prompt_tokens = measure(
                grid,
                num_repeats=num_repeats,
                replicas=args.replicas,
                in_flight=args.in_flight,
                rate=args.prefill_rate,
                seeds=args.ring_seeds,
            )
            rows += grid_rows
            by = {row.policy: row for row in grid_rows}
            ours, rr, anywhere = by[KEY_POLICY], by['round_robin'], by['random']
            sticky = by['sglang manual, min_group (our key), replicas order']
            ok = ours.vs_one <= 1.05 and ours.vs_round_robin <= 0.85
            lines.append(
                f'{grid}, num_repeats {num_repeats} ({ours.groups} groups, {prompt_tokens / 1e6:,.1f}M prompt tokens): '
                f'our key computes {ours.vs_one:.3f}x one replica and {1 - ours.vs_round_robin:.0%} less than round '
                f'robin ({(rr.computed - ours.computed) / 1e6:,.1f}M prefill tokens, '
                f'{rr.gpu_hours - ours.gpu_hours:,.1f} GPU-hours saved); busiest replica {ours.imbalance:.2f}x the '
                f'mean (worst ring {ours.worst_imbalance:.2f}x), {ours.replicas_used:.1f} of {args.replicas} replicas '
                f'used; goal <= 1.05x one replica and >= 15% below round robin -> {verdict(ok)}; against random '
                f'routing {1 - ours.computed / anywhere.computed:.0%} less; sglang manual/min_group with request_order '
                f"'replicas': busiest "
                f'{sticky.imbalance:.2f}x the mean, wall {sticky.wall_hours:,.2f} h '
                f'(round robin {rr.wall_hours:,.2f} h)'
            )
    header = (
        'grid',
        'groups',
        'policy',
        'prefill tokens',
        'vs one replica',
        'vs round robin',
        'replicas used',
        'busiest / mean',
        'worst ring',
        'wall h',
        'GPU-h',
    )
    body = [
        (
            row.grid,
            str(row.groups),
            row.policy,
            f'{row.computed:,}',
            f'{row.vs_one:.3f}x',
            f'{row.vs_round_robin:.3f}x',
            f'{row.replicas_used:.1f}',
            f'{row.imbalance:.2f}',
            f'{row.worst_imbalance:.2f}',
            f'{row.wall_hours:,.2f}',
            f'{row.gpu_hours:,.2f}',
        )
        for row in rows
    ]
    print(
        f'Simulated prefill over {args.replicas} replicas, {args.in_flight} requests in flight, '
        f'{args.prefill_rate:,.0f} prompt tokens/s per replica (assumed); simulated on {machine()}'
    )
    print(format_table(header, body, left=3))
    print('\n'.join(lines))
    balance = {groups: hash_balance(groups, replicas=args.replicas, seeds=100) for groups in BALANCE_GROUPS}
    print(
        f'Load balance of consistent hashing on our key, {args.replicas} replicas, equal groups (100 address sets): '
        + '; '.join(
            f'{groups} groups: busiest {mean:.2f}x the mean (worst {worst:.2f}x)'
            for groups, (mean, worst) in balance.items()
        )
    )
    report = {
        'replicas': args.replicas,
        'in_flight': args.in_flight,
        'prefill_rate': args.prefill_rate,
        'ring_seeds': args.ring_seeds,
        'rows': [asdict(row) for row in rows],
        'verdicts': lines,
        'hash_balance': {str(groups): list(pair) for groups, pair in balance.items()},
    }
    if args.json:
        write_json_report(args.json, report)
    if not args.quick:
        write_record('replicas', figures(report), report=report)
    return 0


def figures(report: dict) -> dict:
    """The record's figures: each row by grid, groups and policy; our key's saving against round robin per grid and
    group count (tokens, share, GPU-hours) and its range; the hash balance by group count."""
    rows = by_name(report['rows'], 'grid', 'groups', 'policy')
    savings = {}
    for row in report['rows']:
        if row['policy'] != KEY_POLICY:
            continue
        rr = rows[f'{row["grid"]} {row["groups"]} round_robin']
        savings[f'{row["grid"]} {row["groups"]}'] = {
            'tokens': rr['computed'] - row['computed'],
            'share': 1 - row['computed'] / rr['computed'],
            'gpu_hours': rr['gpu_hours'] - row['gpu_hours'],
        }
    shares = [saving['share'] for saving in savings.values()]
    return {
        'rows': rows,
        'key_saving': savings,
        'key_saving_share_min': min(shares),
        'key_saving_share_max': max(shares),
        'hash_balance': {
            groups: {'mean': mean, 'worst': worst} for groups, (mean, worst) in report['hash_balance'].items()
        },
    }


if __name__ == '__main__':
    sys.exit(main())
