"""End-to-end time of a real server with prefix caching, grid order vs our prefix-friendly request order.

    # here (needs evalscope_niah and the corpus): build every request once, with both orders
    python benchmarks/bench_server_order.py --export FILE [--corpus DIR] [--grid default|128k] [--max-length N]
                                            [--lengths K] [--depths K] [--subsets english,chinese]
    # anywhere (standard library only): replay FILE against a server, cold cache per run
    python benchmarks/bench_server_order.py --replay FILE --api-url URL --model NAME [--in-flight 8]
                                            [--max-tokens 16] [--rounds N] [--server-cmd CMD] [--json FILE]
    # seconds: export a tiny grid of the shipped demo corpus, replay it against the test server in this process
    python benchmarks/bench_server_order.py --quick

The export holds every request's messages and grid position, the two orders as lists of request ids (``grid``:
lengths outer, depths inner, how EvalScope's built-in sends them and our ``request_order: grid``; ``prefix``:
``evalscope_niah.serving.ordering.prefix_friendly_order``, the adapter's default) and the ``prefix_reuse_share`` that
``evalscope_niah.serving.ordering`` predicts for each order and several in-flight counts. A name ending in ``.gz`` is
gzip-compressed, ``.xz`` lzma-compressed (its large window also dedupes the shared haystack text).

The replay sends every request of one order through W workers that take requests in list order (as EvalScope's
``eval_batch_size``), and measures the wall time from the first request sent to the last reply received. The
server must start each run with an empty cache: with ``--server-cmd`` the script starts the server before each
run, waits for ``/health`` and stops it afterwards. Runs alternate (grid, prefix, prefix, grid, ...) to cancel
drift. The share of prompt tokens served from cache is read from each reply: llama-server's ``timings``
(``cache_n`` tokens reused, ``prompt_n`` computed) or vLLM's ``usage.prompt_tokens_details.cached_tokens`` (vLLM
fills it with ``--enable-prompt-tokens-details``).

``--quick`` checks that both halves still run (the test server has no prefix cache: its figures mean nothing).
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, GRIDS, format_table, machine  # stdlib only: the replay runs where evalscope is not

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evalscope_niah.serving.prometheus import computed_tokens, read_counters  # stdlib only, like _common

FORMAT = 'evalscope-niah-server-order/1'
ORDERS = ('grid', 'prefix')
ORDER_LABELS = {'grid': 'grid order (built-in)', 'prefix': 'ours: prefix_friendly_order'}
PREDICTED_IN_FLIGHT = (1, 2, 4, 8, 16)


# ---- files ---------------------------------------------------------------------------------------------------------


def _open(path: Path, mode: str):
    if path.name.endswith('.gz'):
        return gzip.open(path, mode + 't', encoding='utf-8')
    if path.name.endswith('.xz'):
        return lzma.open(path, mode + 't', encoding='utf-8')
    return path.open(mode, encoding='utf-8')


def read_export(path: Path) -> dict[str, Any]:
    with _open(path, 'r') as handle:
        data = json.load(handle)
    if data.get('format') != FORMAT:
        raise SystemExit(f'{path} is not a {FORMAT} export')
    return data


# ---- export (needs evalscope_niah) ---------------------------------------------------------------------------------


def export(
    path: Path,
    *,
    corpus: Path,
    grid: str,
    max_length: int | None,
    lengths: int | None,
    depths: int | None,
    subsets: Sequence[str],
) -> dict[str, Any]:
    from evalscope_niah.making.samples import iter_samples
    from evalscope_niah.serving.ordering import prefix_friendly_order, prefix_reuse_share, sample_prefix_info
    from evalscope_niah.serving.routing import ROUTER_KEY_HEADERS, routing_key
    from evalscope_niah.tasks.compose import parse_params

    extra = dict(GRIDS[grid])
    if max_length is not None:
        extra['context_lengths_max'] = max_length
        extra['context_lengths_min'] = min(extra.get('context_lengths_min', 1000), max_length)
    if lengths is not None:
        extra['context_lengths_num_intervals'] = lengths
    if depths is not None:
        extra['document_depth_percent_intervals'] = depths
    params = parse_params(extra)
    start = time.perf_counter()
    samples = list(iter_samples(params, corpus_dir=corpus, subsets=list(subsets)))
    seconds = time.perf_counter() - start
    ids = {id(sample): number for number, sample in enumerate(samples)}
    orders = {'grid': list(range(len(samples))), 'prefix': [ids[id(s)] for s in prefix_friendly_order(samples)]}
    predicted = {
        name: {
            str(w): prefix_reuse_share([sample_prefix_info(samples[i]) for i in order], concurrency=w)
            for w in PREDICTED_IN_FLIGHT
        }
        for name, order in orders.items()
    }
    requests = [
        {
            'id': number,
            'subset': s.subset,
            'context_length': s.context_length,
            'depth_percent': s.depth_percent,
            'control': s.control,
            'repeat': s.repeat,
            'start_token': s.start_token,
            'divergence_token': s.divergence_token,
            'prompt_tokens': s.prompt_tokens,
            'routing_key': routing_key(s.subset, s.start_token),
            'messages': s.messages(),
        }
        for number, s in enumerate(samples)
    ]
    data = {
        'format': FORMAT,
        'grid': grid,
        'extra_params': extra,
        'subsets': list(subsets),
        'tokenizer': samples[0].tokenizer if samples else None,
        'generation_seconds': seconds,
        'prompt_tokens': sum(s.prompt_tokens for s in samples),
        'orders': orders,
        'predicted_share': predicted,
        'routing_key_headers': list(ROUTER_KEY_HEADERS),  # what routing_key_header 'on' sends
        'requests': requests,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with _open(path, 'w') as handle:
        json.dump(data, handle, ensure_ascii=False, separators=(',', ':'))
    return data


# ---- replay (standard library only) --------------------------------------------------------------------------------


def _base_url(api_url: str) -> str:
    url = api_url.rstrip('/')
    return url[: -len('/v1')] if url.endswith('/v1') else url


def _post(url: str, body: dict[str, Any], timeout: float, headers: dict[str, str] | None = None) -> dict[str, Any]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode('utf-8'),
        headers={'Content-Type': 'application/json', **(headers or {})},
        method='POST',
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read().decode('utf-8'))


def wait_healthy(base_url: str, timeout: float, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise SystemExit(f'the server exited with code {process.returncode} before it was healthy')
        try:
            with urllib.request.urlopen(base_url + '/health', timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    raise SystemExit(f'{base_url}/health did not answer 200 within {timeout:.0f} s')


class Server:
    """The server command, started in its own process group so the whole group can be stopped."""

    def __init__(self, command: str, log: Path | None, base_url: str, timeout: float) -> None:
        self.command, self.log, self.base_url, self.timeout = command, log, base_url, timeout
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Server:
        output = self.log.open('a') if self.log else subprocess.DEVNULL
        self.process = subprocess.Popen(
            self.command, shell=True, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
        wait_healthy(self.base_url, self.timeout, self.process)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.process is not None
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def _cached_tokens(reply: dict[str, Any]) -> tuple[int | None, int | None]:
    """(prompt tokens served from cache, prompt tokens computed), None where the server does not say."""
    timings = reply.get('timings')
    if isinstance(timings, dict) and 'cache_n' in timings and 'prompt_n' in timings:
        return int(timings['cache_n']), int(timings['prompt_n'])
    usage = reply.get('usage') or {}
    details = usage.get('prompt_tokens_details') or {}
    if details.get('cached_tokens') is not None and usage.get('prompt_tokens') is not None:
        cached = int(details['cached_tokens'])
        return cached, int(usage['prompt_tokens']) - cached
    return None, None


def replay_once(
    requests: Sequence[dict[str, Any]],
    *,
    api_url: str,
    model: str,
    in_flight: int,
    max_tokens: int,
    timeout: float,
    key_headers: Sequence[str] = (),
) -> dict[str, Any]:
    """Send every request, W workers taking them in list order; per-request figures and the wall time. Each
    request carries its routing key in ``key_headers`` (none: no key)."""
    url = api_url.rstrip('/') + '/chat/completions'
    results: list[dict[str, Any] | None] = [None] * len(requests)
    sent: list[int] = []  # request ids in the order they were taken
    lock = threading.Lock()
    position = 0
    start = time.perf_counter()

    def worker() -> None:
        nonlocal position
        while True:
            with lock:
                if position >= len(requests):
                    return
                index = position
                position += 1
                sent.append(requests[index]['id'])
            item = requests[index]
            body = {
                'model': model,
                'messages': item['messages'],
                'max_tokens': max_tokens,
                'temperature': 0.0,
                'stream': False,
            }
            began = time.perf_counter()
            record: dict[str, Any] = {'id': item['id'], 'start': began - start}
            try:
                key = item.get('routing_key')
                reply = _post(url, body, timeout, dict.fromkeys(key_headers, key) if key else None)
                cached, computed = _cached_tokens(reply)
                usage = reply.get('usage') or {}
                timings = reply.get('timings') or {}
                record.update(
                    ok=True,
                    cached=cached,
                    computed=computed,
                    prompt_tokens=usage.get('prompt_tokens'),
                    completion_tokens=usage.get('completion_tokens'),
                    prompt_ms=timings.get('prompt_ms'),
                )
            except Exception as exc:  # one failed request must not hide the others' figures
                record.update(ok=False, error=f'{type(exc).__name__}: {exc}')
            record['end'] = time.perf_counter() - start
            results[index] = record

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(in_flight)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    done = [r for r in results if r is not None]
    ok = [r for r in done if r['ok']]
    measured = [r for r in ok if r['cached'] is not None]
    cached = sum(r['cached'] for r in measured)
    computed = sum(r['computed'] for r in measured)
    return {
        'wall_seconds': wall,
        'requests': len(requests),
        'ok': len(ok),
        'errors': [r['error'] for r in done if not r['ok']][:5],
        'sent_ids': sent,
        'cached_tokens': cached if measured else None,
        'computed_tokens': computed if measured else None,
        'cache_share': cached / (cached + computed) if measured and cached + computed else None,
        'prompt_tokens_server': sum(r['prompt_tokens'] or 0 for r in ok) or None,
        'prompt_ms_sum': sum(r['prompt_ms'] or 0 for r in ok) or None,
        'per_request': done,
    }


def run_schedule(rounds: int, first: str = 'grid') -> list[list[str]]:
    """Rounds of one run per order, alternating which goes first (grid, prefix | prefix, grid | ...)."""
    pair = list(ORDERS) if first == ORDERS[0] else list(ORDERS[::-1])
    return [pair if r % 2 == 0 else pair[::-1] for r in range(rounds)]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def key_headers(setting: str, exported: Sequence[str]) -> list[str]:
    """Header names for --routing-key-header: 'off' none, 'on' the export's (routing_key_header 'on'), else one."""
    if setting == 'off':
        return []
    return list(exported) if setting == 'on' else [setting]


def _send_all(args: argparse.Namespace, requests: Sequence[dict[str, Any]], exported: Sequence[str]) -> dict[str, Any]:
    replicas = [url for url in (args.replica_metrics or '').split(',') if url]
    before = [computed_tokens(read_counters(url)) for url in replicas]
    result = replay_once(
        requests,
        api_url=args.api_url,
        model=args.model,
        in_flight=args.in_flight,
        max_tokens=args.max_tokens,
        timeout=args.request_timeout,
        key_headers=key_headers(args.routing_key_header, exported),
    )
    if replicas:  # what each replica behind the router computed during this run, read from the replica itself
        after = [computed_tokens(read_counters(url)) for url in replicas]
        result['replica_computed'] = [
            None if start is None or end is None else end - start for start, end in zip(before, after, strict=True)
        ]
    return result


def summarize(args: argparse.Namespace, data: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    predicted = data.get('predicted_share', {})
    summary: dict[str, dict[str, Any]] = {}
    for name in ORDERS:
        mine = [run for run in runs if run['order'] == name]
        walls = [run['wall_seconds'] for run in mine]
        shares = [run['cache_share'] for run in mine if run['cache_share'] is not None]
        computed = [run['computed_tokens'] for run in mine if run['computed_tokens'] is not None]
        summary[name] = {
            'runs': len(mine),
            'wall_seconds': walls,
            'wall_mean': _mean(walls) if walls else None,
            'failed_requests': sum(run['requests'] - run['ok'] for run in mine),
            'computed_tokens_mean': _mean(computed) if computed else None,
            'prompt_tokens_server': mine[0]['prompt_tokens_server'] if mine else None,
            'cache_share_mean': _mean(shares) if shares else None,
            'predicted_share': predicted.get(name, {}).get(str(args.in_flight)),
            'replica_computed': [run['replica_computed'] for run in mine if 'replica_computed' in run],
        }
    grid_wall, prefix_wall = summary['grid']['wall_mean'], summary['prefix']['wall_mean']
    return {
        'machine': machine(),
        'export': str(args.replay),
        'grid': data.get('grid'),
        'extra_params': data.get('extra_params'),
        'subsets': data.get('subsets'),
        'requests': len(data['requests']),
        'prompt_tokens_export': data.get('prompt_tokens'),
        'tokenizer_export': data.get('tokenizer'),
        'api_url': args.api_url,
        'model': args.model,
        'server_cmd': args.server_cmd,
        'in_flight': args.in_flight,
        'max_tokens': args.max_tokens,
        'routing_key_header': args.routing_key_header,
        'rounds': len({run['round'] for run in runs}),
        'summary': summary,
        'wall_ratio_grid_over_prefix': grid_wall / prefix_wall if grid_wall and prefix_wall else None,
        'runs': runs,
    }


def replay(args: argparse.Namespace) -> dict[str, Any]:
    data = read_export(args.replay)
    exported = data.get('routing_key_headers', [])
    if args.routing_key_header == 'on' and not exported:
        raise SystemExit(f'{args.replay} was exported without routing keys: export it again')
    by_id = {item['id']: item for item in data['requests']}
    base = _base_url(args.api_url)
    log = args.server_log
    runs: list[dict[str, Any]] = []
    began = time.monotonic()
    longest_round = 0.0
    for round_number, pair in enumerate(run_schedule(args.rounds, args.start_with)):
        elapsed = time.monotonic() - began
        if runs and args.time_budget and elapsed + 1.1 * longest_round > args.time_budget:
            print(f'stopping after {round_number} round(s): the next would pass --time-budget', file=sys.stderr)
            break
        round_start = time.monotonic()
        for name in pair:
            requests = [by_id[i] for i in data['orders'][name]]
            label = f'run {len(runs) + 1}: {name} order, {len(requests)} requests, {args.in_flight} in flight'
            print(label, file=sys.stderr, flush=True)
            if args.server_cmd:
                if log:
                    with log.open('a') as handle:
                        handle.write(f'\n===== {label} =====\n')
                with Server(args.server_cmd, log, base, args.server_timeout):
                    if args.warmup:  # kernels warmed by a prompt that shares no haystack text
                        body = {'model': args.model, 'messages': [{'role': 'user', 'content': 'Hi'}], 'max_tokens': 4}
                        _post(args.api_url.rstrip('/') + '/chat/completions', body, args.request_timeout)
                    result = _send_all(args, requests, exported)
            else:
                result = _send_all(args, requests, exported)
            result.update(run=len(runs) + 1, round=round_number + 1, order=name)
            share = '-' if result['cache_share'] is None else f'{result["cache_share"]:.1%}'
            print(
                f'  {result["wall_seconds"]:.2f} s, {result["ok"]}/{result["requests"]} ok, cache share {share}',
                file=sys.stderr,
                flush=True,
            )
            runs.append(result)
            if args.json:  # after every run, so a run killed later still leaves these figures
                args.json.parent.mkdir(parents=True, exist_ok=True)
                args.json.write_text(json.dumps(summarize(args, data, runs), indent=1) + '\n')
        longest_round = max(longest_round, time.monotonic() - round_start)
    return summarize(args, data, runs)


def _pct(value: float | None) -> str:
    return '-' if value is None else f'{value:.1%}'


def report_table(report: dict[str, Any]) -> str:
    w = report['in_flight']
    header = ('order', 'runs', 'wall s (mean)', 'wall s (each run)', 'prompt tokens (server)', 'computed (mean)')
    header += ('cache share, measured', f'predicted, {w} in flight', 'failed')
    rows = []
    for name in ORDERS:
        s = report['summary'][name]
        rows.append(
            (
                ORDER_LABELS[name],
                str(s['runs']),
                '-' if s['wall_mean'] is None else f'{s["wall_mean"]:.2f}',
                ' '.join(f'{x:.2f}' for x in s['wall_seconds']),
                '-' if s['prompt_tokens_server'] is None else f'{s["prompt_tokens_server"]:,}',
                '-' if s['computed_tokens_mean'] is None else f'{s["computed_tokens_mean"]:,.0f}',
                _pct(s['cache_share_mean']),
                _pct(s['predicted_share']),
                str(s['failed_requests']),
            )
        )
    ratio = report['wall_ratio_grid_over_prefix']
    lines = [
        f'{report["requests"]} requests ({report["grid"]} grid, {" + ".join(report["subsets"] or [])}), model '
        f'{report["model"]} at {report["api_url"]}, {w} in flight, max_tokens {report["max_tokens"]}, '
        f'{report["rounds"]} round(s); {report["machine"]}',
        format_table(header, rows),
        f'grid order / our order, wall time: {"-" if ratio is None else f"{ratio:.3f}x"}',
    ]
    for name in ORDERS:
        for run, per_replica in enumerate(report['summary'][name].get('replica_computed', []), 1):
            shown = ' + '.join('-' if tokens is None else f'{tokens:,.0f}' for tokens in per_replica)
            lines.append(f'{ORDER_LABELS[name]}, run {run}: prompt tokens computed per replica {shown}')
    return '\n'.join(lines)


def quick(args: argparse.Namespace) -> int:
    """--quick: export 2 lengths x 3 depths per subset of the demo corpus, replay them against the test server."""
    import tempfile

    from _common import quick_corpus

    from evalscope_niah.testing.openai_server import OpenAICompatServer, needle_finder

    with tempfile.TemporaryDirectory(prefix='bench-server-order-') as temporary:
        args.replay = Path(temporary) / 'requests.json.gz'
        corpus = quick_corpus(Path(temporary))
        data = export(
            args.replay,
            corpus=corpus,
            grid='default',
            max_length=2000,
            lengths=2,
            depths=3,
            subsets=('english', 'chinese'),
        )
        print(f'--quick: {len(data["requests"])} requests of the demo corpus, replayed against the test server')
        with OpenAICompatServer({args.model: needle_finder}) as server:
            args.api_url, args.warmup = server.base_url, False
            report = replay(args)
    print(report_table(report))
    return 1 if sum(s['failed_requests'] for s in report['summary'].values()) else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument('--export', type=Path, metavar='FILE', help='build the requests here and write them to FILE')
    mode.add_argument('--replay', type=Path, metavar='FILE', help='send the requests of FILE to a server')
    mode.add_argument('--quick', action='store_true', help='export a tiny demo-corpus grid and replay it here')
    parser.add_argument('--corpus', type=Path, default=DEFAULT_CORPUS, help=f'export: default {DEFAULT_CORPUS}')
    parser.add_argument('--grid', choices=sorted(GRIDS), default='default', help='export: the base grid')
    parser.add_argument('--max-length', type=int, help='export: largest context length (context_lengths_max)')
    parser.add_argument('--lengths', type=int, help='export: number of context lengths')
    parser.add_argument('--depths', type=int, help='export: number of needle depths')
    parser.add_argument('--subsets', default='english,chinese', help='export: comma-separated subsets')
    parser.add_argument('--api-url', help='replay: OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1')
    parser.add_argument('--model', default='model', help='replay: model name sent with each request')
    parser.add_argument('--in-flight', type=int, default=8, help='replay: requests in flight (eval_batch_size)')
    parser.add_argument('--max-tokens', type=int, default=16, help='replay: max_tokens of each request')
    parser.add_argument('--rounds', type=int, default=1, help='replay: rounds, each one run of each order')
    parser.add_argument('--start-with', choices=ORDERS, default='grid', help='replay: order of the first run')
    parser.add_argument('--time-budget', type=float, help='replay: start no round that would end past SECONDS')
    parser.add_argument('--server-cmd', help='replay: shell command starting a fresh server before each run')
    parser.add_argument('--server-log', type=Path, help='replay: append the server output to this file')
    parser.add_argument('--server-timeout', type=float, default=300, help='replay: seconds to wait for /health')
    parser.add_argument('--request-timeout', type=float, default=600, help='replay: seconds per request')
    parser.add_argument('--no-warmup', dest='warmup', action='store_false', help='replay: skip the warm-up request')
    parser.add_argument(
        '--routing-key-header',
        default='off',
        help="replay: send each request's prefix-group key: 'on' (the headers routing_key_header 'on' sends), "
        "'off', or a header name",
    )
    parser.add_argument(
        '--replica-metrics', help='replay: comma-separated /metrics URLs of the replicas behind a router'
    )
    parser.add_argument('--json', type=Path, help='replay: write every figure as JSON to FILE')
    args = parser.parse_args(argv)
    if args.quick:
        return quick(args)
    if args.export:
        from _common import check_corpus

        data = export(
            args.export,
            corpus=check_corpus(args.corpus),
            grid=args.grid,
            max_length=args.max_length,
            lengths=args.lengths,
            depths=args.depths,
            subsets=[name for name in args.subsets.split(',') if name],
        )
        size = args.export.stat().st_size
        print(
            f'{len(data["requests"])} requests, {data["prompt_tokens"]:,} prompt tokens ({data["tokenizer"]}), '
            f'{size / 1e6:.1f} MB -> {args.export}'
        )
        for name in ORDERS:
            shares = ', '.join(f'{w} in flight {share:.1%}' for w, share in data['predicted_share'][name].items())
            print(f'predicted prefix_reuse_share, {ORDER_LABELS[name]}: {shares}')
        return 0
    if not args.api_url:
        parser.error('--replay needs --api-url')
    if args.in_flight < 1 or args.rounds < 1:
        parser.error('--in-flight and --rounds must be at least 1')
    report = replay(args)
    print(report_table(report))
    failed = sum(s['failed_requests'] for s in report['summary'].values())
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
