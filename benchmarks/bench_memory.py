"""Memory: peak RSS of building one prompt from a large corpus, by corpus size and prompt length.

    python benchmarks/bench_memory.py [--corpus ../shared/corpus] [--sizes-mb 10 50] [--lengths 2000 32000 128000]
                                      [--lines one|many] [--json FILE] [--quick]

Writes each corpus into a temporary directory: the English corpus (``PaulGraham_Essays.txt`` from --corpus, or
synthetic sentences when it is absent) repeated to the size, on one line by default (the hard case for chunked
tokenization: no line break to cut at). Then, per (size, length), a fresh child process with an empty token cache
builds the first sample of a one-cell grid through ``evalscope_niah.making.samples.iter_samples`` (Qwen3 tokenizer), and
its peak RSS is read from ``/usr/bin/time -f %M``.

Targets (issue "Hardening", item 3): a 2,000-token prompt from a 10 MB one-line corpus, and prompts up to 128k tokens
from a 50 MB corpus, each under 600 MB peak RSS.

``--quick``: one 2,000-token prompt from a 1 MB corpus made of the shipped demo corpus (seconds): it checks that the
script still runs, its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    DEFAULT_CORPUS,
    DEMO_CORPUS,
    QUICK_HELP,
    REPO_ROOT,
    child_env,
    format_table,
    write_json_report,
    write_record,
)

TARGET_MB = 600
CORPUS_FILE = 'PaulGraham_Essays.txt'
_SYNTHETIC = (
    'The committee met on a grey morning to discuss the harbour accounts. Nobody expected the ledger to balance, '
    'yet it did, to the penny! Was the clerk careful, or merely lucky? The minutes do not say. '
)


def write_corpus(directory: Path, *, source: Path, megabytes: int, one_line: bool) -> Path:
    """``directory/PaulGraham_Essays.txt`` of ``megabytes`` MB: the source text (or synthetic prose) repeated."""
    text = source.read_text(encoding='utf-8') if source.is_file() else _SYNTHETIC * 2000
    if one_line:
        text = ' '.join(text.split())
    target = megabytes * 1024 * 1024
    path = directory / CORPUS_FILE
    written = 0
    with path.open('w', encoding='utf-8') as output:
        while written < target:
            piece = text[: target - written]
            output.write(piece + (' ' if one_line else '\n\n'))
            written += len(piece.encode('utf-8')) + (1 if one_line else 2)
    return path


def child(corpus_dir: Path, length: int) -> None:
    """The measured process: build the one sample of a one-cell grid and report its size."""
    from evalscope_niah.making.samples import iter_samples
    from evalscope_niah.tasks.compose import parse_params

    params = parse_params({'context_lengths': [length], 'document_depth_percents': [50]})
    started = time.perf_counter()
    sample = next(iter(iter_samples(params, corpus_dir=corpus_dir, subsets=['english'])))
    print(json.dumps({'prompt_tokens': sample.prompt_tokens, 'seconds': round(time.perf_counter() - started, 2)}))


def measure(corpus_dir: Path, length: int, cache: Path) -> dict:
    command = ['/usr/bin/time', '-f', '%M', sys.executable, __file__, '--child', str(corpus_dir), str(length)]
    done = subprocess.run(command, env=child_env(ours=True, cache=cache), cwd=REPO_ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f'child failed ({done.returncode}):\n{done.stderr[-3000:]}')
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result['peak_mb'] = round(int(done.stderr.strip().splitlines()[-1]) / 1024, 1)  # %M is KiB
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--corpus', type=Path, default=DEFAULT_CORPUS, help='folder with PaulGraham_Essays.txt')
    parser.add_argument('--sizes-mb', type=int, nargs='+', default=[10, 50])
    parser.add_argument('--lengths', type=int, nargs='+', default=[2000, 32000, 128000])
    parser.add_argument('--lines', choices=['one', 'many'], default='one', help='corpus on one line, or paragraphs')
    parser.add_argument('--json', type=Path, help='also write the results here')
    parser.add_argument('--child', nargs=2, metavar=('CORPUS_DIR', 'LENGTH'), help=argparse.SUPPRESS)
    parser.add_argument('--quick', action='store_true', help=QUICK_HELP + ' (--sizes-mb 1 --lengths 2000)')
    args = parser.parse_args(argv)
    if args.child:
        child(Path(args.child[0]), int(args.child[1]))
        return 0
    source = args.corpus / CORPUS_FILE
    if args.quick:
        args.sizes_mb, args.lengths, source = [1], [2000], DEMO_CORPUS / 'english.txt'
    if not Path('/usr/bin/time').is_file():
        raise SystemExit('/usr/bin/time is needed (apt-get install time)')
    rows, results = [], []
    with tempfile.TemporaryDirectory(prefix='niah-bench-memory-') as temporary:
        root = Path(temporary)
        for megabytes in args.sizes_mb:
            corpus_dir = root / f'{megabytes}mb'
            corpus_dir.mkdir()
            one_line = args.lines == 'one'
            write_corpus(corpus_dir, source=source, megabytes=megabytes, one_line=one_line)
            for length in args.lengths:
                cache = root / f'cache-{megabytes}-{length}'  # cold: the corpus is tokenized in the measured run
                result = {'corpus_mb': megabytes, 'length': length, **measure(corpus_dir, length, cache)}
                results.append(result)
                ok = result['peak_mb'] < TARGET_MB
                rows.append(
                    [
                        f'{megabytes} MB',
                        f'{length:,}',
                        f'{result["prompt_tokens"]:,}',
                        f'{result["seconds"]:.1f}',
                        f'{result["peak_mb"]:.0f}',
                        'ok' if ok else f'OVER {TARGET_MB}',
                    ]
                )
                print(format_table(['corpus', 'length', 'prompt tokens', 'build s', 'peak MB', 'target'], rows[-1:]))
    print()
    print(f'{args.lines}-line corpus, Qwen3 tokenizer, cold token cache, peak RSS from /usr/bin/time -f %M:')
    print(format_table(['corpus', 'length', 'prompt tokens', 'build s', 'peak MB', 'target'], rows))
    report = {'lines': args.lines, 'target_mb': TARGET_MB, 'results': results}
    if args.json:
        write_json_report(args.json, report)
    if not args.quick:
        write_record('memory', report, report=report)
    return 0 if all(result['peak_mb'] < TARGET_MB for result in results) else 1


if __name__ == '__main__':
    os.environ.setdefault('TOKENIZERS_PARALLELISM', 'true')
    sys.exit(main())
