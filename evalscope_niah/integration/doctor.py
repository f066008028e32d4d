"""`evalscope-niah doctor`: what a run would use, checked offline and without any model call.

Each check is a line: ok, or problem with its fix. Nothing is downloaded and no endpoint is called, so it runs in
CI and on an air-gapped machine in seconds.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from packaging.specifiers import SpecifierSet

from ..errors import NiahConfigError
from ..params.corpus_format import DATASET_ID
from ..tasks import failed_plugins, plugin_tasks
from ..tasks.compose import parse_params
from ..tasks.plugins import LOAD_SWITCH
from .evalscope_surface import missing_hooks, tested_evalscope_range
from .registration import OVERRIDDEN_NAME, PUBLIC_NAME, register, resolves_to_ours

__all__ = ['Check', 'run_checks']


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ''

    def line(self) -> str:
        text = f'{"ok" if self.ok else "problem":<8} {self.name}: {self.detail}'
        return text if self.ok or not self.fix else f'{text}\n         fix: {self.fix}'


def run_checks(*, dataset_args: Mapping[str, Any], judge: Mapping[str, Any] | None) -> list[Check]:
    checks = [_evalscope_version()]
    register()
    checks += [_name(PUBLIC_NAME), _name(OVERRIDDEN_NAME), *_plugins()]
    params_check, params = _guarded('parameters', lambda: parse_params(dataset_args.get('extra_params')))
    checks.append(params_check)
    if params is not None:
        checks.append(_tokenizer(params))
        checks += _corpus(params, dataset_args)
    checks.append(_judge(judge))
    return checks


def _guarded(name: str, call: Callable[[], Any]) -> tuple[Check, Any]:
    try:
        value = call()
    except NiahConfigError as exc:
        return Check(name, False, str(exc), 'change the value named above'), None
    return Check(name, True, 'valid'), value


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
    """Tasks from other installed packages: each one loaded, and each one skipped with why (a broken plugin never
    stops a run of another task, but a run that asks for its task is refused)."""
    loaded, failed = plugin_tasks(), failed_plugins()
    checks = [Check('task plugins', True, f'{", ".join(loaded) or "none"} loaded')] if loaded or not failed else []
    for name, why in failed.items():
        checks.append(Check(f'task plugin {name}', False, why, f'fix or uninstall the package; or set {LOAD_SWITCH}'))
    return checks


def _tokenizer(params: Any) -> Check:
    from ..making.tokenization import load_tokenizer

    try:
        tokenizer = load_tokenizer(params.tokenizer_path)
        tokens = tokenizer.count('Needle in a haystack. 大海捞针。')
    except NiahConfigError as exc:
        return Check('tokenizer', False, str(exc), "set tokenizer_path to a local directory or 'tiktoken:<encoding>'")
    return Check('tokenizer', True, f'{tokenizer.name} (offline; {tokens} tokens in the probe text)')


def _corpus(params: Any, dataset_args: Mapping[str, Any]) -> list[Check]:
    from ..making.corpus import load_corpus, resolve_corpus_dir

    names = dataset_args.get('subset_list') or params.subset_names()
    try:
        subsets = [params.resolve_subset(name) for name in names]
    except NiahConfigError as exc:
        return [Check('subsets', False, str(exc), 'choose subsets the parameters define')]
    local_path = dataset_args.get('local_path')
    files = [name for subset in subsets for name in subset.corpus_files]
    if not local_path:
        return [
            Check(
                'corpus',
                True,
                f'no local_path: the run downloads {", ".join(files)} from ModelScope '
                f'{DATASET_ID} (needs network; not checked here)',
            )
        ]
    checks = []
    try:
        directory = resolve_corpus_dir(
            local_path=local_path, files=[name for subset in subsets for name in subset.corpus_files]
        )
    except NiahConfigError as exc:
        return [Check('corpus', False, str(exc), 'point local_path at the folder holding the corpus files')]
    for subset in subsets:
        try:
            corpus = load_corpus(directory, subset)
        except NiahConfigError as exc:
            checks.append(Check(f'corpus {subset.name}', False, str(exc), 'fix the file or the subset'))
            continue
        checks.append(Check(f'corpus {subset.name}', True, f'{corpus.path} ({len(corpus.text):,} characters)'))
    return checks


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
