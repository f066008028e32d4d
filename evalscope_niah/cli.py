"""``evalscope-niah``: preview samples without a model, run EvalScope with our adapter, redraw heatmaps.

Heavy imports (evalscope, modelscope, matplotlib) happen inside the commands that need them, so ``preview``
starts in well under a second.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .atomic import atomic_write_text, atomic_writer
from .cli_args import build_parser
from .errors import NiahConfigError
from .escaping import inert_console, json_text, terminal_text
from .params.run_params import NiahParams

if TYPE_CHECKING:  # the real import is deferred: it pulls in numpy, and `preview` must start fast
    from .reporting.length_status import EffectiveBound
    from .reporting.outputs import OutputFiles
    from .reporting.sample_record import SampleResult
    from .reporting.stats import CellSummary

DATASET_ARGS_KEYS = ('local_path', 'subset_list', 'extra_params', 'system_prompt', 'prompt_template')
# Model names from CSV headers go into file names: same rule as subset names in plotting.
_UNSAFE_NAME_CHARS = re.compile(r'[^A-Za-z0-9._-]+')


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (['eval'], ['demo']):
        # EvalScope's run draws progress bars and colours on purpose: its server text is made inert by the log
        # filter (inert_logger), the demo's summary by its printer.
        return _command(argv)
    with inert_console():  # names, answers and errors from results files and servers: shown, never obeyed
        return _command(argv)


def _command(argv: list[str]) -> int:
    try:
        if argv[:1] == ['eval']:
            return _eval(argv)
        args = _parser().parse_args(argv)
        return int(args.handler(args) or 0)
    except NiahConfigError as exc:  # shown inert under `eval` and `demo` too: it may quote a needle bank or corpus
        print(terminal_text(f'evalscope-niah: error: {exc}'), file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    return build_parser(
        {
            'preview': _preview,
            'plot': _plot,
            'compare': _compare,
            'demo': _demo,
            'doctor': _doctor,
        },
        # The docstring's first line, without its reStructuredText quotes (--help shows text as it is).
        description=__doc__.splitlines()[0].replace('``', ''),
    )


def _demo(args: argparse.Namespace) -> int:
    from .demo import DEMO_DEPTHS, DEMO_LENGTHS, DemoOptions, run_demo

    options = DemoOptions(
        api_url=args.api_url,
        model=args.model,
        api_key=args.api_key,
        judge=args.judge,
        context_lengths=args.lengths or DEMO_LENGTHS,
        depth_percents=args.depths or DEMO_DEPTHS,
        subsets=args.subset or ['english', 'chinese'],
        work_dir=args.work_dir,
        limit=args.limit,
        use_cache=args.use_cache,
    )
    run_demo(options)
    return 0


def _eval(argv: list[str]) -> int:
    from .integration.run import run_evalscope_cli

    return run_evalscope_cli(argv)


def _doctor(args: argparse.Namespace) -> int:
    from .integration.doctor import run_checks

    server = {'api_url': args.api_url, 'model': args.model, 'api_key': args.api_key} if args.api_url else None
    checks = run_checks(
        dataset_args=args.dataset_args,
        judge=args.judge,
        server=server,
        max_tokens=args.max_tokens,
        model_length=args.model_length,
    )
    for check in checks:
        print(check.line())
    states = [check.state for check in checks]
    print(', '.join(f'{states.count(state)} {state}' for state in ('ok', 'problem', 'skipped')))
    return 1 if 'problem' in states else 0


def _plot(args: argparse.Namespace) -> int:
    if bool(args.work_dirs) == bool(args.csv):
        print('evalscope-niah plot: error: give either WORK_DIR... or --csv FILE..., not both', file=sys.stderr)
        return 2
    if args.csv:
        return _plot_csv(args)
    for option, value in (('--dataset-length', args.dataset_length), ('--output-dir', args.output_dir)):
        if value is not None:
            print(f'evalscope-niah plot: error: {option} only applies with --csv', file=sys.stderr)
            return 2
    from .reporting.live import find_unfinished_runs
    from .reporting.outputs import OutputFiles, draw_heatmaps, find_results_files, in_served_tokens, results_file_names
    from .reporting.result_files import read_results_to_draw
    from .reporting.sweep_plan import untested_lengths

    found = [path for work_dir in args.work_dirs for path in find_results_files(work_dir)]
    unfinished = [path for work_dir in args.work_dirs for path in find_unfinished_runs(work_dir)]
    # A run still going (or stopped) draws from its progress file: a results file beside it is an older run's.
    found = [path for path in found if not any(_same_run(path, progress) for progress in unfinished)]
    missing = [str(work_dir) for work_dir in args.work_dirs if not Path(work_dir).is_dir()]
    if unfinished and not missing and _plot_unfinished(unfinished, args) != 0:
        return 1
    if missing or not (found or unfinished):
        where = ', '.join(missing) if missing else ', '.join(str(work_dir) for work_dir in args.work_dirs)
        print(
            f'evalscope-niah plot: no {" or ".join(results_file_names())} under {where}; pass the output directory '
            'of a finished '
            'needle_haystack run (the folder holding reports/)',
            file=sys.stderr,
        )
        return 1
    for results_file in found:
        try:
            results = read_results_to_draw(results_file)
        except (ValueError, OSError) as exc:  # a malformed row names its file and line; nothing is drawn for it
            print(f'evalscope-niah plot: error: {exc}', file=sys.stderr)
            return 1
        files = OutputFiles.of_results_file(results_file)  # a run of both names keeps both sets of heatmaps
        sweep = _sweep_plan(results_file.parent / files.sweep_plan)
        effective = _effective_lengths(results_file.parent, results, files, sweep)
        options: dict[str, Any] = {'prefix': files.heatmap_prefix, 'sweep_plan': sweep}
        if args.served_tokens:
            if sweep and any(untested_lengths(entry) for entry in sweep.values()):
                print(
                    f'evalscope-niah plot: {results_file.parent} is an adaptive sweep that left lengths untested, '
                    'which have no served counts: plot it without --served-tokens',
                    file=sys.stderr,
                )
                return 1
            results, effective = in_served_tokens(results, effective)
            options = {'prefix': f'{files.heatmap_prefix}_served', 'served_tokens': True}
        for path in draw_heatmaps(
            results_file.parent, results, effective_lengths=effective, show_score=args.show_score, **options
        ):
            print(path)
    return 0


def _same_run(results_file: Path, progress_file: Path) -> bool:
    from .reporting.outputs import OutputFiles

    return results_file.parent == progress_file.parent and OutputFiles.of_results_file(results_file).progress == (
        progress_file.name
    )


def _plot_unfinished(progress_files: Sequence[Path], args: argparse.Namespace) -> int:
    """What a running (or stopped) run has finished so far, pending cells shown as pending."""
    from .reporting.live import draw_unfinished

    for progress_file in progress_files:
        if args.served_tokens:
            print(
                f'evalscope-niah plot: {progress_file.parent} is still running: drawn in its own tokens',
                file=sys.stderr,
            )
        try:
            root = next(Path(work_dir) for work_dir in args.work_dirs if progress_file.is_relative_to(work_dir))
            for path in draw_unfinished(progress_file, show_score=args.show_score, root=root):
                print(path)
        except (ValueError, OSError) as exc:
            print(f'evalscope-niah plot: error: {exc}', file=sys.stderr)
            return 1
    return 0


def _sweep_plan(path: Path) -> dict[str, dict[str, Any]] | None:
    """An adaptive run's plan beside its results (its untested cells are drawn grey); None without one, or when the
    file is not one (said on stderr: the heatmaps are drawn from the results alone)."""
    from .reporting.sweep_plan import read_sweep_plan

    if not path.is_file():
        return None
    try:
        return read_sweep_plan(path)
    except ValueError as exc:
        print(f'evalscope-niah plot: ignoring {exc}', file=sys.stderr)
        return None


def _effective_lengths(
    report_dir: Path, results: Sequence[SampleResult], files: OutputFiles, sweep: Mapping[str, Any] | None = None
) -> dict[str, EffectiveBound]:
    """Effective lengths (a bound names its unknown length) as the run stored them (its threshold and mode), else
    computed with the defaults (and the lengths an adaptive ``sweep`` did not send)."""
    from .reporting.result_files import effective_lengths, read_summary_json
    from .reporting.sweep_plan import untested_lengths

    grid: dict[str, set[int]] = {subset: set(entry['context_lengths']) for subset, entry in (sweep or {}).items()}
    for result in results:
        if not result.control:
            grid.setdefault(result.subset, set()).add(result.context_length)
    stored = report_dir / files.summary
    if stored.is_file():
        try:
            bounds = {s: e.bound for s, e in read_summary_json(stored).effective_context_length.items()}
            # A summary from another grid (a rerun that left it behind) would mark a column that is not there.
            if all(
                length is None or length in grid.get(subset, ())
                for subset, bound in bounds.items()
                for length in (bound.at_least, bound.unknown_length)
            ):
                return bounds
            print(f'evalscope-niah plot: ignoring {stored}: it does not match {files.results}', file=sys.stderr)
        except ValueError as exc:
            print(f'evalscope-niah plot: ignoring {stored}: {exc}', file=sys.stderr)
    fields = NiahParams.model_fields  # the parameter model owns the defaults
    threshold, mode = fields['effective_length_threshold'].default, fields['effective_length_mode'].default
    untested = {subset: untested_lengths(entry) for subset, entry in (sweep or {}).items()}
    found = effective_lengths(results, threshold=threshold, mode=mode, untested=untested)
    return {subset: length.bound for subset, length in found.items()}


def _plot_csv(args: argparse.Namespace) -> int:
    from .reporting.opencompass import read_summary_csv
    from .reporting.outputs import HEATMAP_PREFIX
    from .reporting.plotting import plot_all

    missing = [str(path) for path in args.csv if not path.is_file()]
    if missing:
        print(f'evalscope-niah plot: error: no such CSV file: {", ".join(missing)}', file=sys.stderr)
        return 1
    # Read every CSV before writing anything: a bad second file must not leave half the plots behind.
    plans: list[tuple[Path, str, str, list[CellSummary]]] = []  # (output dir, prefix, model, cells)
    # output dir / prefix, casefolded: two models must never overwrite each other's files (on a case-blind disk too)
    taken: set[str] = set()
    for csv_path in args.csv:
        try:
            models = read_summary_csv(csv_path, dataset_length=args.dataset_length)
        except ValueError as exc:
            print(f'evalscope-niah plot: error: {exc}', file=sys.stderr)
            return 1
        output_dir = args.output_dir if args.output_dir is not None else csv_path.parent
        for model, cells in models.items():
            prefix = f'{HEATMAP_PREFIX}_{_UNSAFE_NAME_CHARS.sub("_", model) or "_"}'
            key = str((output_dir / prefix).resolve()).casefold()
            if key in taken:
                print(
                    f'evalscope-niah plot: error: two models named like {model!r} would share the file names '
                    f'{output_dir / prefix}_*; draw them into different --output-dir',
                    file=sys.stderr,
                )
                return 1
            taken.add(key)
            plans.append((output_dir, prefix, model, cells))
    for output_dir, prefix, model, cells in plans:
        for path in plot_all(cells, output_dir=output_dir, show_score=args.show_score, prefix=prefix, title=model):
            print(path)
    return 0


def _compare(args: argparse.Namespace) -> int:
    from .reporting.compare import NoResultsError, run_compare
    from .reporting.outputs import results_file_names

    if not 0.0 < args.threshold <= 1.0:
        raise NiahConfigError('--threshold', f'must be in (0, 1], got {args.threshold}')
    try:
        output = run_compare(
            args.work_dirs, output=args.output, threshold=args.threshold, mode=args.mode, show_score=args.show_score
        )
    except NoResultsError as exc:
        print(
            f'evalscope-niah compare: no {" or ".join(results_file_names())} under {", ".join(exc.dirs)}; pass the '
            'output directory of a finished needle_haystack run (the folder holding reports/)',
            file=sys.stderr,
        )
        return 1
    except (ValueError, OSError) as exc:  # a bad results file, or an output path that cannot be written
        print(f'evalscope-niah compare: error: {exc}', file=sys.stderr)
        return 1
    print(output.table)
    print(output.png)
    print(output.csv)
    return 0


def _preview(args: argparse.Namespace) -> int:
    from .making.corpus import resolve_corpus_dir
    from .making.prompts import PromptSpec
    from .making.record_lines import iter_record_lines
    from .making.samples import iter_samples
    from .tasks.compose import check_dataset_args, dataset_entry, parse_params

    dataset_args = dataset_entry(args.dataset_args)
    check_dataset_args(dataset_args)
    unknown = sorted(set(dataset_args) - set(DATASET_ARGS_KEYS))
    if unknown:
        raise NiahConfigError(
            '--dataset-args',
            f'unknown key {unknown[0]!r}; allowed: {", ".join(DATASET_ARGS_KEYS)}, or all of them under '
            '"needle_haystack" as for evalscope eval',
        )
    if args.limit is not None and args.limit < 1:
        raise NiahConfigError('--limit', f'must be a positive number of samples (got {args.limit})')
    params = parse_params(dataset_args.get('extra_params'))
    subsets = args.subset or dataset_args.get('subset_list') or params.subset_names()
    resolved = params.resolve_subsets(subsets)
    prompt = PromptSpec(
        **{
            field: dataset_args[key]
            for key, field in (('system_prompt', 'system_prompt'), ('prompt_template', 'user_template'))
            if dataset_args.get(key) is not None
        }
    )
    corpus_dir = resolve_corpus_dir(
        local_path=dataset_args.get('local_path'), files=[name for subset in resolved for name in subset.corpus_files]
    )
    endpoint = {'api_url': args.api_url, 'model': args.model, 'api_key': args.api_key} if args.api_url else None
    if args.estimate or args.prices:
        return _estimate(args, params, corpus_dir=corpus_dir, subsets=subsets, prompt=prompt, endpoint=endpoint)
    options = {'corpus_dir': corpus_dir, 'subsets': subsets, 'prompt': prompt, 'limit': args.limit}
    if args.output is None:
        for sample in iter_samples(params, endpoint=endpoint, **options):
            sys.stdout.write(json_text(sample.to_record(), allow_nan=True) + '\n')
        return 0
    # Streamed: a preview of long prompts can be far bigger than memory should hold at once. The lines come
    # serialized (iter_record_lines: the corpus escaped once, not every prompt whole), the same bytes as json_text.
    with atomic_writer(args.output, binary=True) as handle:
        for line in iter_record_lines(params, endpoint=endpoint, **options):
            handle.write(line + b'\n')
    return 0


def _estimate(args: argparse.Namespace, params: Any, **options: Any) -> int:
    from .making.samples import iter_plans
    from .making.tokenization import load_tokenizer
    from .reporting.estimate import PlannedRequest, estimate_tokens, format_estimate, parse_prices
    from .tasks import get_task

    for flag, value in (('--max-tokens', args.max_tokens), ('--judge-max-tokens', args.judge_max_tokens)):
        if value < 1:
            raise NiahConfigError(flag, f'must be a positive number of tokens (got {value})')
    prices = parse_prices(args.prices) if args.prices else None
    # Judged exactly when the adapter would judge: single-needle tasks, not controls (rules score the others).
    requests = [
        PlannedRequest(
            subset=plan.cell.subset,
            prompt_tokens=plan.cell.context_length - params.length_buffer,
            question=plan.question,
            reference=plan.reference_answer,
            judged=not args.no_judge and get_task(plan.task).is_judged(plan.meta),
        )
        for plan in iter_plans(params, limit=args.limit, **options)
    ]
    rows = estimate_tokens(
        requests,
        count_tokens=load_tokenizer(params.tokenizer_path, **(options.get('endpoint') or {})).count,
        max_output_tokens=args.max_tokens,
        judge_max_output_tokens=args.judge_max_tokens,
        prices=prices,
    )
    text = format_estimate(rows, prices=prices)
    if args.output is not None:
        atomic_write_text(args.output, text + '\n')
    else:
        print(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
