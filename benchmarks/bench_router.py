"""Prefill through a real router: llama.cpp replicas of SmolLM2-135M behind vllm-router, policy by policy.

    python benchmarks/bench_router.py [--corpus ../shared/corpus] [--replicas 2] [--lengths 300,600]
                                      [--depths 10,50,90] [--repeats 3] [--in-flight 4] [--threads 2] [--slots 1]
                                      [--order prefix]
                                      [--policies round_robin,cache_aware,consistent_hash,sglang_manual]
                                      [--json FILE] [--quick]

Each row is one real ``run_task`` of the same English grid (``--repeats`` haystack starts: that many prefix groups)
on fresh replicas (cold caches), ``--in-flight`` requests at a time (EvalScope's ``eval_batch_size``), in our send
order. ``one replica`` is the grid sent straight to one server: the floor. The others go through ``vllm-router``
with that ``--policy``; ``consistent_hash`` hashes our routing key (``X-Session-ID``, ``routing_key_header: on``),
``consistent_hash:off`` the same policy with ``routing_key_header: off`` (the router then hashes what it finds).
``sglang_manual`` is sglang-router's ``--policy manual --assignment-mode min_group`` on ``X-SMG-Routing-Key``: each
new key to the replica holding the fewest keys, then sticky.

Prompt tokens computed and served from cache are read from each replica's Prometheus ``/metrics``
(``llamacpp:prompt_tokens_total``, ``llamacpp:prompt_tokens_cached_total``) after the run: measured by the servers,
not estimated. Wall time is the whole ``run_task``, on a machine whose cores the replicas share: compare it between
rows, not with a GPU.

``--quick``: one 300-token prompt per haystack start, 2 starts, ``one replica`` and ``consistent_hash`` only, on the
shipped demo corpus (real llama.cpp replicas and router, as the tests use them): it checks that the script still runs,
its figures mean nothing.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    DEFAULT_CORPUS,
    QUICK_HELP,
    by_name,
    check_corpus,
    format_table,
    machine,
    quick_corpus,
    verdict,
    write_json_report,
    write_record,
)

ONE_REPLICA = 'one replica'


@dataclass
class Row:
    policy: str
    computed: list[int]  # prompt tokens computed, per replica
    cached: list[int]  # prompt tokens served from a replica's cache, per replica
    wall_s: float
    errors: int  # samples that failed after every retry

    @property
    def total(self) -> int:
        return sum(self.computed)

    @property
    def used(self) -> int:
        return sum(1 for computed, cached in zip(self.computed, self.cached, strict=True) if computed + cached)

    @property
    def busiest(self) -> float:
        """Busiest replica's prompt tokens (computed + cached: what it was sent) over the mean."""
        served = [computed + cached for computed, cached in zip(self.computed, self.cached, strict=True)]
        mean = statistics.mean(served)
        return max(served) / mean if mean else 1.0


def _settings(api_url: str, corpus: Path, work_dir: Path, args: argparse.Namespace, *, key: str) -> dict[str, Any]:
    return {
        'model': 'smollm2',
        'api_url': api_url,
        'api_key': 'none',
        'eval_type': 'openai_api',
        'datasets': ['needle_haystack'],
        'dataset_args': {
            'needle_haystack': {
                'local_path': str(corpus),
                'subset_list': ['english'],
                'extra_params': {
                    'context_lengths': args.lengths,
                    'document_depth_percents': args.depths,
                    'num_repeats': args.repeats,
                    'routing_key_header': key,
                    'request_order': args.order,
                },
            }
        },
        'judge': {'strategy': 'rule'},
        # No client timeout: a request queued behind others on a busy replica would be sent again, and its prompt
        # computed twice, which is not what the policy did.
        'generation_config': {'temperature': 0.0, 'max_tokens': 16, 'timeout': 3600, 'retries': 5, 'retry_interval': 1},
        'eval_batch_size': args.in_flight,
        'work_dir': str(work_dir),
        'no_timestamp': True,
    }


def measure(policy: str, corpus: Path, args: argparse.Namespace) -> Row:
    from evalscope_niah.integration.run import run_task_settings
    from evalscope_niah.reporting.outputs import RESULTS_FILE
    from evalscope_niah.reporting.result_files import read_results
    from evalscope_niah.serving.local_model import LocalModelServer
    from evalscope_niah.serving.local_router import LocalRouter, prometheus_counters
    from evalscope_niah.serving.prometheus import LLAMA_CACHED, LLAMA_COMPUTED

    count = 1 if policy == ONE_REPLICA else args.replicas
    threads = max(1, args.threads // count)
    replicas = [
        LocalModelServer(n_ctx=4096, n_parallel=args.slots, n_threads=threads, metrics=True) for _ in range(count)
    ]
    name, _, key = policy.partition(':')
    try:
        for replica in replicas:
            replica.start()
        with tempfile.TemporaryDirectory(prefix='niah-router-') as work_dir:
            if policy == ONE_REPLICA:
                router = None
                url = replicas[0].base_url
            else:
                router = LocalRouter([replica.root_url for replica in replicas], policy=name).start()
                url = router.base_url
            try:
                started = time.perf_counter()
                run_task_settings(_settings(url, corpus, Path(work_dir), args, key=key or 'on'))
                wall = time.perf_counter() - started
            finally:
                if router is not None:
                    router.stop()
            results = read_results(next(Path(work_dir).rglob(RESULTS_FILE)))
        counters = [prometheus_counters(replica.root_url) for replica in replicas]
    finally:
        for replica in replicas:
            replica.stop()
    return Row(
        policy=policy,
        computed=[int(counter[LLAMA_COMPUTED]) for counter in counters],
        cached=[int(counter[LLAMA_CACHED]) for counter in counters],
        wall_s=wall,
        errors=sum(1 for result in results if result.error),
    )


def _index_corpus(corpus: Path, args: argparse.Namespace) -> None:
    # The first run would pay for tokenizing the corpus (cached on disk after that): paid here, untimed.
    from evalscope_niah.making.samples import iter_plans
    from evalscope_niah.tasks.compose import parse_params

    params = parse_params({'context_lengths': args.lengths, 'document_depth_percents': args.depths})
    for _ in iter_plans(params, corpus_dir=corpus, subsets=['english']):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--corpus', type=Path, default=DEFAULT_CORPUS, help=f'default: {DEFAULT_CORPUS}')
    parser.add_argument('--replicas', type=int, default=2)
    parser.add_argument('--lengths', default='300,600', help='context lengths, Qwen3 tokens')
    parser.add_argument('--depths', default='10,50,90', help='needle depths, percent')
    parser.add_argument('--repeats', type=int, default=3, help='haystack starts (prefix groups)')
    parser.add_argument('--in-flight', type=int, default=4, help="requests at once (EvalScope's eval_batch_size)")
    parser.add_argument('--threads', type=int, default=2, help='CPU threads, shared by the replicas')
    # llama.cpp keeps each slot's last prompt: with one slot a replica holds one prefix, with several it holds as
    # many, as a server with a prefix cache holds many groups.
    parser.add_argument('--slots', type=int, default=1, help='llama.cpp slots per replica (each keeps its prompt)')
    parser.add_argument('--order', default='prefix', help='request_order: prefix, replicas or grid')
    parser.add_argument('--policies', default='round_robin,cache_aware,consistent_hash,sglang_manual')
    parser.add_argument('--json', type=Path, help='also write the figures as JSON to this file')
    parser.add_argument('--quick', action='store_true', help=QUICK_HELP)
    args = parser.parse_args(argv)
    if args.quick:
        args.lengths, args.depths, args.repeats, args.policies = '300', '50', 2, 'consistent_hash'
    args.lengths = [int(value) for value in args.lengths.split(',')]
    args.depths = [float(value) for value in args.depths.split(',')]
    policies = [ONE_REPLICA, *args.policies.split(',')]
    if args.replicas < 2 or args.repeats < 1 or args.in_flight < 1:
        parser.error('--replicas must be at least 2, --repeats and --in-flight at least 1')
    quick_dir = tempfile.TemporaryDirectory(prefix='bench-router-') if args.quick else None
    corpus = quick_corpus(Path(quick_dir.name)) if quick_dir else check_corpus(args.corpus)
    logging.getLogger('evalscope').setLevel(logging.WARNING)
    _index_corpus(corpus, args)
    measured = {}
    # The floor last: the first run_task of a process also pays for imports and tokenizer loading.
    for policy in [*policies[1:], policies[0]]:
        print(f'running {policy} ...', file=sys.stderr, flush=True)
        measured[policy] = measure(policy, corpus, args)
        print(f'  {measured[policy]}', file=sys.stderr, flush=True)
    if quick_dir:
        quick_dir.cleanup()
    rows = [measured[policy] for policy in policies]
    one = rows[0].total
    by = {row.policy: row for row in rows}
    round_robin = by.get('round_robin')
    header = ('policy', 'replicas used', 'computed per replica', 'computed', 'vs one replica', 'vs round robin')
    header += ('cached', 'busiest / mean', 'wall s', 'errors')
    body = [
        (
            row.policy,
            f'{row.used}/{len(row.computed)}',
            ' + '.join(f'{tokens:,}' for tokens in row.computed),
            f'{row.total:,}',
            f'{row.total / one:.3f}x',
            f'{row.total / round_robin.total:.3f}x' if round_robin else '-',
            f'{sum(row.cached):,}',
            f'{row.busiest:.2f}',
            f'{row.wall_s:.0f}',
            str(row.errors),
        )
        for row in rows
    ]
    prompts = len(args.lengths) * len(args.depths) * args.repeats
    print(
        f'Prompt tokens computed by llama.cpp replicas (SmolLM2-135M, /metrics) behind vllm-router: {prompts} prompts '
        f'(English, lengths {args.lengths}, depths {args.depths}, {args.repeats} haystack starts), '
        f'{args.in_flight} in flight, request_order {args.order}, {args.slots} llama.cpp slot(s) per replica; '
        f'{machine()}'
    )
    print(format_table(header, body, left=3))
    lines = []
    ours = by.get('consistent_hash')
    if ours is not None and round_robin is not None:
        ok = ours.total <= 1.05 * one and ours.total <= 0.85 * round_robin.total and ours.used == len(ours.computed)
        lines.append(
            f'consistent_hash on our key: {ours.total / one:.3f}x one replica, '
            f'{1 - ours.total / round_robin.total:.1%} below round robin '
            f'({round_robin.total - ours.total:,} prompt tokens not recomputed), '
            f'{ours.used} of {len(ours.computed)} replicas used; goal <= 1.05x one replica, >= 15% below round robin, '
            f'every replica used -> {verdict(ok)}'
        )
    aware = by.get('cache_aware')
    if aware is not None and round_robin is not None:
        lines.append(
            f'cache_aware: {aware.total / one:.3f}x one replica, {aware.total / round_robin.total:.3f}x round robin'
        )
    print('\n'.join(lines))
    report = {
        'corpus': str(corpus),
        'settings': {key: value for key, value in vars(args).items() if key not in ('corpus', 'json')},
        'rows': [{**asdict(row), 'total': row.total, 'used': row.used} for row in rows],
        'verdicts': lines,
    }
    if args.json:
        write_json_report(args.json, report)
    if not args.quick:
        write_record('router', by_name(report['rows'], 'policy'), report=report)
    return 0


if __name__ == '__main__':
    sys.exit(main())
