"""Prefix-cache reuse: the share of prompt tokens that a server with prefix caching could reuse, by request order.

    python benchmarks/bench_prefix.py [--corpus ../shared/corpus] [--grid default|128k|both|router] [--in-flight W]
                                      [--json FILE] [--quick]

Builds every sample of the grid in full (``making.samples.iter_samples``, real corpus, real Qwen3 tokenizer)
and prints ``serving.ordering.prefix_reuse_share`` for the samples in grid order (how EvalScope's built-in
sends them: lengths outer, depths inner) and in our request order (``prefix_friendly_order``): one request at a time,
and with W requests in flight (its ``concurrency``, when it has that parameter).

Beside it, an independent check from the prompt texts alone: for each prompt in send order, the longest common
prefix (in characters) with any prompt sent before it, as a share of all prompt characters; and the same when a
prompt may only reuse prompts sent at least W places before it (the W - 1 just before it are still in flight).

With one request at a time the share does not depend on the order: prompts of one subset follow the same corpus
text up to their divergence token d, so the k-th prompt reuses min(d_k, max d before it), and summed over any
order that is sum(d) - max(d) (every rise of the running maximum is paid once). Order matters when requests
overlap: EvalScope sends ``eval_batch_size`` requests at once (8 for an API).

``--grid router`` is the grid of docs/en/many-gpus.md (English, 1k/2k tokens, depths 10/50/90 %, 4 haystack
starts), where the prefix gate matters most; the docs quote it with ``--in-flight 4``.

``--quick`` builds a 3 x 3 grid of 1-2k tokens per subset from the shipped demo corpus (seconds): it checks that the
script still runs, its figures mean nothing.
"""

from __future__ import annotations

import argparse
import bisect
import inspect
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
    GRIDS,
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

SUBSETS = ['english', 'chinese']


@dataclass
class Row:
    grid: str
    order: str
    samples: int
    prompt_tokens: int
    share: float | None  # prefix_reuse_share, one request at a time; None when the function is missing
    share_in_flight: float | None  # prefix_reuse_share(concurrency=W); None when it has no such parameter
    text_share: float  # independent: reused prefix characters / all prompt characters
    text_share_in_flight: float  # the same, reusing only prompts sent >= W places before
    gain: float | None = None  # share_in_flight / the grid order's (text_share_in_flight's if that is missing)
    share_gated: float | None = None  # prefix_reuse_share(concurrency=W, gate=True): our order with the prefix gate


def _common_prefix(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:  # binary search on prefix equality: C-speed comparisons, O(log n) of them
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def text_reuse_share(texts: Sequence[str], window: int = 1) -> float:
    """Share of characters, sent in this order, that are a prefix of a text sent at least ``window`` places before
    (longest such prefix); ``window`` 1 is any earlier text.

    The longest common prefix with any earlier text is reached at a lexicographic neighbour in the sorted set of
    earlier texts, so two comparisons per text suffice.
    """
    sent: list[str] = []
    reused = 0
    for k, text in enumerate(texts):
        if k >= window:
            bisect.insort(sent, texts[k - window])
        at = bisect.bisect_left(sent, text)
        neighbours = sent[max(0, at - 1) : at + 1]
        reused += max((_common_prefix(text, other) for other in neighbours), default=0)
    total = sum(len(text) for text in texts)
    return reused / total if total else 0.0


def _text(sample: Any) -> str:
    return sample.system_prompt + '\n' + sample.user_prompt


class Ordering:
    """evalscope_niah.serving.ordering as it stands: tolerant of the module, or a name, still being written."""

    def __init__(self) -> None:
        self.missing: str | None = None
        try:
            from evalscope_niah.serving import ordering
        except ImportError as exc:
            self.missing = f'{type(exc).__name__}: {exc}'
            return
        names = ('prefix_friendly_order', 'prefix_reuse_share')
        absent = [name for name in names if not hasattr(ordering, name)]
        if absent:
            self.missing = f'evalscope_niah.serving.ordering has no {", ".join(absent)}'
            return
        self.order = ordering.prefix_friendly_order
        self._share = ordering.prefix_reuse_share
        # Takes NeedleSamples, or (since the module grew a PrefixInfo) what sample_prefix_info makes of them.
        self._info = getattr(ordering, 'sample_prefix_info', None)
        self.has_concurrency = 'concurrency' in inspect.signature(self._share).parameters
        self.has_gate = 'gate' in inspect.signature(self._share).parameters

    def share(self, samples: Sequence[Any], concurrency: int | None = None, *, gate: bool = False) -> float | None:
        if (concurrency is not None and not self.has_concurrency) or (gate and not self.has_gate):
            return None
        items = [self._info(sample) for sample in samples] if self._info is not None else list(samples)
        # Only the parameters given: an older prefix_reuse_share may lack them.
        options = {'concurrency': concurrency} if concurrency is not None else {}
        return self._share(items, **options, **({'gate': True} if gate else {}))


# --quick: 9 prompts per subset, enough for 8 in flight to overlap.
QUICK_GRID = {
    'context_lengths_min': 1000,
    'context_lengths_max': 2000,
    'context_lengths_num_intervals': 3,
    'document_depth_percent_intervals': 3,
}
# The grid the router measurement of docs/en/many-gpus.md runs: English only, four prefix groups.
ROUTER_GRID = {'context_lengths': [1000, 2000], 'document_depth_percents': [10, 50, 90], 'num_repeats': 4}
ALL_GRIDS = {**GRIDS, 'quick': QUICK_GRID, 'router': ROUTER_GRID}
GRID_SUBSETS = {'router': ['english']}


def measure_grid(name: str, corpus: Path, window: int) -> tuple[list[Row], dict[str, Any]]:
    from evalscope_niah.making.samples import iter_samples
    from evalscope_niah.tasks.compose import parse_params

    start = time.perf_counter()
    samples = list(
        iter_samples(parse_params(ALL_GRIDS[name]), corpus_dir=corpus, subsets=GRID_SUBSETS.get(name, SUBSETS))
    )
    seconds = time.perf_counter() - start
    ordering = Ordering()
    orders = {'grid order (built-in)': samples}
    if ordering.missing is None:
        ordered = ordering.order(samples)
        if sorted(map(id, ordered)) != sorted(map(id, samples)):
            raise SystemExit('prefix_friendly_order did not return a reordering of the samples')
        orders['ours: prefix_friendly_order'] = ordered
    tokens = sum(sample.prompt_tokens for sample in samples)
    rows = []
    for order, sent in orders.items():
        texts = [_text(sample) for sample in sent]
        rows.append(
            Row(
                grid=name,
                order=order,
                samples=len(sent),
                prompt_tokens=tokens,
                share=ordering.share(sent) if ordering.missing is None else None,
                share_in_flight=ordering.share(sent, window) if ordering.missing is None else None,
                text_share=text_reuse_share(texts),
                text_share_in_flight=text_reuse_share(texts, window),
            )
        )
    base = rows[0]
    for row in rows[1:]:
        if row.share_in_flight is not None and base.share_in_flight:
            row.gain = row.share_in_flight / base.share_in_flight
            row.share_gated = ordering.share(orders[row.order], window, gate=True)
        elif base.text_share_in_flight:
            row.gain = row.text_share_in_flight / base.text_share_in_flight
    details = {'generation_seconds': seconds, 'missing': ordering.missing}
    if ordering.missing is None and not ordering.has_concurrency:
        details['missing_concurrency'] = 'prefix_reuse_share has no concurrency parameter'
    return rows, details


def _pct(value: float | None) -> str:
    return '-' if value is None else f'{value:.1%}'


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--corpus', type=Path, default=DEFAULT_CORPUS, help=f'default: {DEFAULT_CORPUS}')
    parser.add_argument('--grid', choices=['default', '128k', 'both', 'router'], default='default')
    parser.add_argument('--in-flight', type=int, default=8, help='requests sent at once (eval_batch_size)')
    parser.add_argument('--json', type=Path, help='also write the figures as JSON to this file')
    parser.add_argument('--quick', action='store_true', help=QUICK_HELP + ' (--grid is ignored)')
    args = parser.parse_args(argv)
    if args.in_flight < 1:
        parser.error('--in-flight must be at least 1')
    grids = ['quick'] if args.quick else ['default', '128k'] if args.grid == 'both' else [args.grid]
    rows: list[Row] = []
    details: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix='bench-prefix-') as workdir:
        corpus = quick_corpus(Path(workdir)) if args.quick else check_corpus(args.corpus)
        for name in grids:
            print(f'building grid {name} ...', file=sys.stderr, flush=True)
            grid_rows, details[name] = measure_grid(name, corpus, args.in_flight)
            rows += grid_rows
    w = args.in_flight
    header = ('grid', 'order', 'samples', 'prompt tokens', 'prefix_reuse_share', f'... {w} in flight')
    header += ('text check', f'text check, {w} in flight', f'ours / grid order, {w} in flight', '... with the gate')
    body = [
        (
            row.grid,
            row.order,
            str(row.samples),
            f'{row.prompt_tokens:,}',
            _pct(row.share),
            _pct(row.share_in_flight),
            _pct(row.text_share),
            _pct(row.text_share_in_flight),
            '-' if row.gain is None else f'{row.gain:.3f}x',
            _pct(row.share_gated),
        )
        for row in rows
    ]
    subsets = sorted({subset for name in grids for subset in GRID_SUBSETS.get(name, SUBSETS)})
    print(f'Prefix-cache reuse share by request order, subsets {" + ".join(subsets)}, {machine()}')
    print(format_table(header, body, left=2))
    print(
        'prefix_reuse_share: serving.ordering (tokens, cache evicting nothing), one request at a time and '
        f'with concurrency={w}; text check: longest common prefix with any earlier prompt, in characters, from the '
        f'prompt texts alone; "{w} in flight" there: reusing only prompts sent >= {w} places before; with the gate: '
        'a deep prompt waits for the one in flight computing its prefix (evalscope_niah.serving.prefix_gate)'
    )
    lines = []
    for name in grids:
        if details[name]['missing']:
            lines.append(f'{name}: evalscope_niah.serving.ordering unavailable ({details[name]["missing"]}): MISS')
            continue
        base, ours = (row for row in rows if row.grid == name)
        if abs(ours.share - base.share) < 1e-9:
            lines.append(
                f'{name}: one request at a time, both orders reuse {ours.share:.1%} (as they must: with nothing in '
                'flight the share is sum(d) - max(d) in any order)'
            )
        theirs = ours.share_in_flight is not None
        ours_in, base_in = (
            (ours.share_in_flight, base.share_in_flight)
            if theirs
            else (ours.text_share_in_flight, base.text_share_in_flight)
        )
        text_agrees = (ours.text_share_in_flight > base.text_share_in_flight) == (ours_in > base_in)
        ceiling = ours.share  # what one request at a time reuses: no order can reuse more
        closed = (ours_in - base_in) / (ceiling - base_in) if theirs and ceiling > base_in else None
        lines.append(
            f'{name}: with {w} in flight our order reuses {ours_in:.1%} vs {base_in:.1%} in grid order '
            + (f'(no order can exceed {ceiling:.1%}: {closed:.0%} of the gap closed) ' if closed is not None else '')
            + f'[{"prefix_reuse_share" if theirs else "text check"}]; goal: higher -> {verdict(ours_in > base_in)}'
            + (
                f'; the text check ({ours.text_share_in_flight:.1%} vs {base.text_share_in_flight:.1%}) '
                + ('agrees' if text_agrees else 'disagrees')
                if theirs
                else ' [prefix_reuse_share has no concurrency parameter]'
            )
        )
    print('\n'.join(lines))
    fields = {
        'corpus': str(corpus),
        'grids': {name: ALL_GRIDS[name] for name in grids},
        'in_flight': args.in_flight,
        'rows': [asdict(row) for row in rows],
        'details': details,
        'verdicts': lines,
    }
    if args.json:
        write_json_report(args.json, fields)
    if not args.quick:
        # One record per grid asked (the docs quote the default grid and the router grid, each with its own W).
        write_record(f'prefix_{args.grid}', by_name(fields['rows'], 'grid', 'order'), report=fields)
    return 0


if __name__ == '__main__':
    sys.exit(main())
