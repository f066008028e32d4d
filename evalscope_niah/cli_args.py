"""The ``evalscope-niah`` command line's flags, one builder per subcommand (the handlers live in ``cli.py``)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .params.run_params import NiahParams
from .vocabulary import EFFECTIVE_LENGTH_MODES

__all__ = ['build_parser']

Handler = Callable[[argparse.Namespace], int]


def build_parser(handlers: Mapping[str, Handler], *, description: str) -> argparse.ArgumentParser:
    """Every subcommand with its flags; ``handlers``: subcommand -> the function that runs it (``eval`` has none:
    its arguments are EvalScope's)."""
    parser = argparse.ArgumentParser(prog='evalscope-niah', description=description)
    commands = parser.add_subparsers(dest='command', required=True)
    # One builder per subcommand, in the order `--help` lists them: the CLI's whole surface reads top to bottom.
    _add_preview(commands, handlers['preview'])
    _add_eval(commands)
    _add_plot(commands, handlers['plot'])
    _add_compare(commands, handlers['compare'])
    _add_demo(commands, handlers['demo'])
    _add_doctor(commands, handlers['doctor'])
    return parser


def _add_command(
    commands: Any, name: str, *, help: str, description: str = '', **kwargs: Any
) -> argparse.ArgumentParser:
    """A subcommand whose own ``--help`` opens with what it does: argparse shows ``help`` only in the parent's list."""
    opening = help[0].upper() + help[1:] + '.'
    return commands.add_parser(
        name, help=help, description=f'{opening} {description}' if description else opening, **kwargs
    )


def _add_dataset_args(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        '--dataset-args',
        type=_json_object,
        default={},
        help='JSON as for `evalscope eval` ({"needle_haystack": {...}}) or its entry alone: local_path, '
        'subset_list, extra_params, system_prompt, prompt_template',
    )


def _add_server(command: argparse.ArgumentParser, purpose: str) -> None:
    command.add_argument('--api-url', help=f"the model's server, {purpose}")
    command.add_argument('--model', help='model name at --api-url')
    command.add_argument('--api-key', help='API key for --api-url')


def _add_preview(commands: Any, handler: Handler) -> None:
    preview = _add_command(commands, 'preview', help='expand the parameters into samples (JSONL) without any model')
    _add_dataset_args(preview)
    preview.add_argument('--limit', type=int, help='only the first N samples of each subset')
    preview.add_argument('--subset', action='append', help='only this subset (repeatable); overrides subset_list')
    preview.add_argument('--output', type=Path, help='JSONL file to write (default: stdout)')
    preview.add_argument(
        '--estimate',
        action='store_true',
        help='print input and output tokens for the model and the judge (and a cost with --prices) instead of samples',
    )
    preview.add_argument(
        '--prices',
        help='prices per million tokens, e.g. model_input=0.5,model_output=1.5,judge_input=0.1,judge_output=0.2',
    )
    preview.add_argument('--max-tokens', type=int, default=1024, help='model reply limit for --estimate (default 1024)')
    preview.add_argument(
        '--judge-max-tokens', type=int, default=512, help='judge reply limit for --estimate (default 512)'
    )
    preview.add_argument('--no-judge', action='store_true', help='for --estimate: the run scores by rule only')
    _add_server(preview, "for tokenizer_path 'server' (counts in its tokens)")
    preview.set_defaults(handler=handler)


def _add_eval(commands: Any) -> None:
    _add_command(
        commands,
        'eval',
        help="`evalscope eval` with this package's needle_haystack loaded (same arguments)",
        add_help=False,
    )


def _add_plot(commands: Any, handler: Handler) -> None:
    plot = _add_command(
        commands,
        'plot',
        help='redraw the heatmaps of finished runs, or draw them from summary CSVs, without calling a model',
        description='Give either WORK_DIR... (EvalScope output directories) or --csv FILE... (our cells CSV or an '
        'OpenCompass NeedleBench/CDME summary CSV), not both.',
    )
    plot.add_argument('work_dirs', nargs='*', type=Path, metavar='WORK_DIR', help='EvalScope output directory')
    plot.add_argument(
        '--csv',
        nargs='+',
        type=Path,
        metavar='FILE',
        help="draw from these CSVs instead: a run's cells CSV or an OpenCompass summary (one heatmap per model x "
        'subset)',
    )
    plot.add_argument(
        '--dataset-length',
        metavar='SIZE',
        help='with --csv: only OpenCompass datasets of this size suffix, e.g. 4k, 128K, 200k, 1M',
    )
    plot.add_argument(
        '--output-dir', type=Path, metavar='DIR', help='with --csv: where to write (default: next to each CSV)'
    )
    plot.add_argument('--show-score', action='store_true', help='write each cell score on the PNG heatmaps')
    plot.add_argument(
        '--served-tokens',
        action='store_true',
        help="label the length axis with the tokens the model's server said it read (median per length), not the "
        "grid's; written as *_served.png/html",
    )
    plot.set_defaults(handler=handler)


def _add_compare(commands: Any, handler: Handler) -> None:
    compare = _add_command(
        commands, 'compare', help='one figure of heatmaps (subsets x models) and a table of effective context lengths'
    )
    compare.add_argument(
        'work_dirs', nargs='+', type=Path, metavar='WORK_DIR', help='EvalScope output directory (any number of models)'
    )
    compare.add_argument(
        '--output', type=Path, default=Path('compare.png'), help='PNG to write (default compare.png); CSV beside it'
    )
    fields = NiahParams.model_fields  # one owner per default: the parameter model
    threshold, mode = fields['effective_length_threshold'].default, fields['effective_length_mode'].default
    compare.add_argument(
        '--threshold', type=float, default=threshold, help=f'pass mark for the effective context length ({threshold})'
    )
    compare.add_argument(
        '--mode',
        choices=EFFECTIVE_LENGTH_MODES,
        default=mode,
        help='absolute: mean accuracy >= threshold (RULER); relative: >= threshold x the shortest length (NoLiMa)',
    )
    compare.add_argument('--show-score', action='store_true', help='write each cell score on the heatmaps')
    compare.set_defaults(handler=handler)


def _add_demo(commands: Any, handler: Handler) -> None:
    demo = _add_command(
        commands,
        'demo',
        help='run needle_haystack end to end offline on a real local model (SmolLM2-135M via llama.cpp)',
    )
    demo.add_argument('--api-url', help='use this OpenAI-compatible endpoint instead of the local model')
    demo.add_argument('--model', help='model name at --api-url')
    demo.add_argument('--api-key', default='EMPTY', help='API key for --api-url')
    demo.add_argument(
        '--judge', choices=('model', 'rule'), default='model', help='judge with the same model (default) or rule score'
    )
    demo.add_argument('--lengths', type=_int_list, help='context lengths in tokens (default 500,1000,2000)')
    demo.add_argument('--depths', type=_float_list, help='needle depths in percent (default 0,50,100)')
    demo.add_argument('--subset', action='append', help='only this subset (repeatable): english, chinese')
    demo.add_argument('--limit', type=int, help='only the first N samples of each subset')
    demo.add_argument('--work-dir', type=Path, default=Path('outputs') / 'niah-demo', help='output directory')
    demo.add_argument(
        '--use-cache',
        type=Path,
        metavar='DIR',
        help='resume a stopped demo: the output folder its Ctrl-C line names (the same other flags)',
    )
    demo.set_defaults(handler=handler)


def _add_doctor(commands: Any, handler: Handler) -> None:
    doctor = _add_command(
        commands,
        'doctor',
        help='check what a run would use: EvalScope, names, parameters, tokenizer, corpus, samples, judge; with '
        "--api-url also the model's window (asks that server only, never the model or the judge)",
    )
    _add_dataset_args(doctor)
    doctor.add_argument('--judge', type=_json_object, help="EvalScope's --judge JSON, as the run would get it")
    _add_server(doctor, "to check the lengths against its window (and for tokenizer_path 'server')")
    doctor.add_argument(
        '--max-tokens', type=int, help="the run's answer budget (generation_config max_tokens), added to each length"
    )
    doctor.add_argument('--model-length', type=int, help="the model's window, when the server does not report it")
    doctor.set_defaults(handler=handler)


def _int_list(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(',') if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected comma-separated whole numbers, got {text!r}') from None


def _float_list(text: str) -> list[float]:
    try:
        return [float(part) for part in text.split(',') if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected comma-separated numbers, got {text!r}') from None


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f'not valid JSON ({exc})') from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError('must be a JSON object')
    return value
