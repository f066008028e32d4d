"""`evalscope-niah doctor`: what a run would use, checked as the run checks it, without any model or judge call.

Each check is a line in one of three states: ok, problem (with its fix), or skipped (with why: what it would need).
Nothing skipped is ever reported ok. ``--dataset-args`` is read as ``eval`` reads it (keyed or plain,
``tasks.compose.dataset_entry``); the entry's keys, every parameter, the tokenizer, the corpus and the samples the
run would build (corpus repeats, lengths that hold the prompt) are checked by the code ``eval`` runs. Nothing is
downloaded; the one network call is to the user's own model server when ``--api-url`` is given: its window (and its
tokenizer's count of the longest prompts), as the run checks it before the first request.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from packaging.specifiers import SpecifierSet

from ..corpus_format import DATASET_ID
from ..errors import NiahConfigError
from ..tasks import plugin_report
from ..tasks.compose import check_dataset_args, dataset_entry, parse_params
from ..tasks.plugins import LOAD_SWITCH
from .evalscope_surface import missing_hooks, tested_evalscope_range
from .registration import OVERRIDDEN_NAME, PUBLIC_NAME, dataset_args_keys, register, resolves_to_ours
from .window_check import check_window_of

__all__ = ['Check', 'run_checks', 'skipped']


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ''
    skipped: bool = False  # not checked (``detail`` says why); never ok

    @property
    def state(self) -> str:
        return 'skipped' if self.skipped else 'ok' if self.ok else 'problem'

    def line(self) -> str:
        text = f'{self.state:<8} {self.name}: {self.detail}'
        return text if self.ok or not self.fix else f'{text}\n         fix: {self.fix}'


def skipped(name: str, why: str) -> Check:
    return Check(name, False, f'not checked: {why}', skipped=True)


def run_checks(
    *,
    dataset_args: Mapping[str, Any],
    judge: Mapping[str, Any] | None,
    server: Mapping[str, str | None] | None = None,
    max_tokens: int | None = None,
    model_length: int | None = None,
) -> list[Check]:
    """Every check, in the order a run meets them; ``server``: api_url, model, api_key of the model under test."""
    checks = [_evalscope_version()]
    register()
    checks += [_name(PUBLIC_NAME), _name(OVERRIDDEN_NAME), *_plugins()]
    entry_check, entry = _guarded('dataset_args', lambda: _dataset_entry(dataset_args))
    checks.append(entry_check)
    params = None
    if entry is not None:
        params_check, params = _guarded('parameters', lambda: parse_params(entry.get('extra_params')))
        checks.append(params_check)
    if params is None:
        checks += [skipped(name, 'the parameters above are refused') for name in ('tokenizer', 'corpus', 'samples')]
    else:
        checks.append(_tokenizer(params, server))
        corpus_checks, corpus_dir = _corpus(params, entry)
        checks += corpus_checks
        samples_check, samplers = _samples(params, entry, corpus_dir, server)
        checks += [samples_check, _window(params, server, samplers, max_tokens=max_tokens, model_length=model_length)]
    checks.append(_judge(judge))
    return checks


def _guarded(name: str, call: Callable[[], Any]) -> tuple[Check, Any]:
    try:
        value = call()
    except NiahConfigError as exc:
        return Check(name, False, str(exc), 'change the value named above'), None
    return Check(name, True, 'valid'), value


def _dataset_entry(dataset_args: Mapping[str, Any]) -> Mapping[str, Any]:
    """The benchmark's entry, with the keys a run accepts (``NiahBenchmarkMeta._update``'s check)."""
    entry = dataset_entry(dataset_args)
    check_dataset_args(entry, allowed_keys=dataset_args_keys())
    return entry


def _evalscope_version() -> Check:
    """The installed EvalScope against the tested range, and the private hooks we rely on (evalscope_surface)."""
    version = importlib.metadata.version('evalscope')
    tested = tested_evalscope_range()
    in_range = tested is not None and SpecifierSet(tested).contains(version, prereleases=True)
    gone = missing_hooks()
    detail = f'{version} (tested: {tested or "unknown: evalscope-niah is not installed"})'
    if gone:
        detail += f'; hooks gone: {", ".join(line.partition(":")[0] for line in gone)}'
    return Check(
        'evalscope',
        in_range and not gone,
        detail,
        f'pip install "evalscope{tested or ""}"; or run --datasets {PUBLIC_NAME}, which uses public API only',
    )


def _name(name: str) -> Check:
    ours = resolves_to_ours(name)
    return Check(
        f'--datasets {name}',
        ours,
        'evalscope-niah' if ours else "EvalScope's built-in",
        f'use --datasets {PUBLIC_NAME}' if name != PUBLIC_NAME else 'reinstall evalscope-niah',
    )


def _plugins() -> list[Check]:
    """Tasks from other installed packages, read afresh: the ones loaded on one line, and each one refused on its own
    line with why (a broken plugin never stops a run of another task, but a run that asks for its task is refused).
    A plugin is on one line only: refused ones (two claiming one name among them) are never counted as loaded."""
    try:
        records = plugin_report(rescan=True)
    except NiahConfigError as exc:  # the timeout switch itself is wrong
        return [Check('task plugins', False, str(exc), 'change the value named above')]
    loaded = [record for record in records if record.task is not None]
    refused = [record for record in records if record.problem is not None]
    names = ', '.join(f'{record.task} ({record.distribution or record.entry_point})' for record in loaded)
    checks = [Check('task plugins', True, f'{names or "none"} loaded')] if loaded or not refused else []
    for record in refused:
        checks.append(
            Check(
                f'task plugin {record.label}',
                False,
                record.problem or '',
                f'fix or uninstall the package; or set {LOAD_SWITCH}',
            )
        )
    return checks


def _tokenizer(params: Any, server: Mapping[str, str | None] | None) -> Check:
    from ..making.tokenization import SERVER_TOKENIZER, load_tokenizer

    if params.tokenizer_path == SERVER_TOKENIZER and not (server and server.get('model')):
        return skipped(
            'tokenizer', "tokenizer_path 'server' counts with the model's server: give --api-url and --model"
        )
    try:
        tokenizer = load_tokenizer(params.tokenizer_path, **(server or {}))
        tokens = tokenizer.count('Needle in a haystack. 大海捞针。')
    except NiahConfigError as exc:
        return Check('tokenizer', False, str(exc), "set tokenizer_path to a local directory or 'tiktoken:<encoding>'")
    return Check('tokenizer', True, f'{tokenizer.name} ({tokens} tokens in the probe text)')


def _corpus(params: Any, dataset_args: Mapping[str, Any]) -> tuple[list[Check], Any]:
    """The corpus files of the subsets the run would use, read and checked; and their folder (None: not checked)."""
    from ..making.corpus import load_corpus, resolve_corpus_dir

    names = dataset_args.get('subset_list') or params.subset_names()
    try:
        subsets = params.resolve_subsets(names)
    except NiahConfigError as exc:
        return [Check('subsets', False, str(exc), 'choose subsets the parameters define')], None
    local_path = dataset_args.get('local_path')
    files = [name for subset in subsets for name in subset.corpus_files]
    if not local_path:
        why = (
            f'no local_path: the run downloads {", ".join(files)} from ModelScope {DATASET_ID}; download them once '
            'and give local_path to check them here'
        )
        return [skipped('corpus', why)], None
    try:
        directory = resolve_corpus_dir(local_path=local_path, files=files)
    except NiahConfigError as exc:
        return [Check('corpus', False, str(exc), 'point local_path at the folder holding the corpus files')], None
    checks = []
    for subset in subsets:
        try:
            corpus = load_corpus(directory, subset)
        except NiahConfigError as exc:
            checks.append(Check(f'corpus {subset.name}', False, str(exc), 'fix the file or the subset'))
            continue
        checks.append(Check(f'corpus {subset.name}', True, f'{corpus.path} ({len(corpus.text):,} characters)'))
    return checks, directory if all(check.ok for check in checks) else None


def _samples(
    params: Any, dataset_args: Mapping[str, Any], corpus_dir: Any, server: Mapping[str, str | None] | None
) -> tuple[Check, list[Any]]:
    """The run's samplers, built as ``eval`` builds them (prompt texts, corpus repeats for the longest length,
    lengths that hold the prompt), without building a haystack."""
    from ..making.prompts import PromptSpec
    from ..making.samples import subset_samplers

    if corpus_dir is None:
        return skipped('samples', 'the corpus above is not checked or refused'), []
    try:
        given = {
            'system_prompt': dataset_args.get('system_prompt'),
            'user_template': dataset_args.get('prompt_template'),
        }
        prompt = PromptSpec(**{field: value for field, value in given.items() if value is not None})
        samplers = subset_samplers(
            params,
            corpus_dir=corpus_dir,
            subsets=dataset_args.get('subset_list') or params.subset_names(),
            prompt=prompt,
            endpoint=server,
        )
    except NiahConfigError as exc:
        return Check('samples', False, str(exc), 'change the value named above'), []
    cells = sum(len(cells) for _, cells in samplers)
    lengths = sorted({cell.context_length for _, cells in samplers for cell in cells})
    detail = f'{cells} samples in {len(samplers)} subsets build, lengths {lengths[0]} to {lengths[-1]}'
    return Check('samples', True, detail if lengths else 'no samples'), samplers


def _window(
    params: Any,
    server: Mapping[str, str | None] | None,
    samplers: list[Any],
    *,
    max_tokens: int | None,
    model_length: int | None,
) -> Check:
    """The lengths against the model's window, as the run checks them before its first request."""
    if not server and not model_length:
        return skipped('model window', 'no --api-url (or --model-length) to read the window from')
    if not samplers:
        return skipped('model window', 'needs the samples above')
    if server and not server.get('model'):
        return skipped('model window', '--api-url without --model')
    try:
        found = check_window_of(params, dict(server or {}), samplers, model_length=model_length, budget=max_tokens or 0)
    except NiahConfigError as exc:
        return Check('model window', False, str(exc), 'change the value named above')
    if found is None:
        return skipped('model window', 'the server does not report its window; give --model-length')
    window, source = found
    budget = f' with an answer budget of {max_tokens}' if max_tokens else ' (no --max-tokens: no answer budget added)'
    return Check('model window', True, f'every length fits {window} tokens ({source}){budget}')


def _judge(judge: Mapping[str, Any] | None) -> Check:
    if not judge:
        return Check(
            'judge',
            False,
            'none configured: a run stops before the model is called (the LLM judge is the default)',
            'pass --judge \'{"models": [{"model_id": ..., "api_url": ..., "api_key": ...}]}\' or '
            '--judge \'{"strategy": "rule"}\'',
        )
    if judge.get('strategy') == 'rule':
        return Check('judge', True, 'rule scores only (no LLM judge)')
    models = judge.get('models') or []
    if not models:
        return Check('judge', False, f'strategy {judge.get("strategy")!r} without models', 'add judge.models')
    problems = []
    for model in models:
        url = urlparse(str(model.get('api_url') or ''))
        if not model.get('model_id'):
            problems.append('a model without model_id')
        if url.scheme not in ('http', 'https') or not url.netloc:
            problems.append(f'{model.get("model_id")!r} has no http(s) api_url')
    if problems:
        return Check('judge', False, '; '.join(problems), 'give each judge model model_id, api_url and api_key')
    names = ', '.join(str(model['model_id']) for model in models)
    return Check('judge', True, f'{names} (qualified against calibration answers when a run starts; not called here)')
