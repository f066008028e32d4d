"""Other tools' documented configs (tests/support/peer_configs.py) run through EvalScope's run_task against the
127.0.0.1 test server as their authors wrote them, only corpus folders and URLs changed: a model that finds the
needles scores >= 0.9 by rule, one that does not <= 0.3."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.making.corpus import DEMO_CORPUS_DIR, DEMO_CORPUS_FILES
from evalscope_niah.testing.openai_server import OpenAICompatServer, needle_finder
from tests.support.peer_configs import CDME_SINGLE, PEER_CONFIGS, PeerConfig
from tests.support.reports import overall_scores
from tests.support.tasks import task_config

pytest.importorskip('evalscope')

from evalscope import run_task

MODEL = 'mock-model'
NOT_FOUND = 'The document does not say.'
_TERM = re.compile(r'[a-z]{3,}|[\u4e00-\u9fff]')
_SENTENCE = re.compile(r'(?<=[.!?。！？])\s*|\n+')


def _user_text(messages: list[dict]) -> str:
    return messages[-1]['content']


def _right_model(config: PeerConfig):
    """Answers only when every needle of the config is in the prompt: a model that found them."""
    if config.right_answer is None and not config.all_matches:
        return needle_finder

    def respond(messages: list[dict]) -> str:
        text = _user_text(messages)
        if config.all_matches:  # every sentence as close to the question as the best one (the pizza needles)
            context, question = text.split('</text>', 1) if '</text>' in text else (text, text)
            wanted = set(_TERM.findall(question.lower()))
            sentences = [s.strip() for s in _SENTENCE.split(context) if s.strip()]
            scored = [(len(wanted & set(_TERM.findall(s.lower()))), s) for s in sentences]
            best = max(score for score, _ in scored)
            return ' '.join(s for score, s in scored if score == best)
        return config.right_answer if all(needle in text for needle in config.needles) else NOT_FOUND

    return respond


def _wrong_model(messages: list[dict]) -> str:
    return NOT_FOUND


def _corpus(config: PeerConfig, tmp_path: Path, fixture_corpus_dir: Path) -> Path:
    """The folder the config's file names point into: CDME's JSON Lines files written here, else the fixtures."""
    if not config.jsonl_files:
        return fixture_corpus_dir
    folder = tmp_path / 'CDME'
    folder.mkdir()
    for name, language in config.jsonl_files.items():
        text = (DEMO_CORPUS_DIR / DEMO_CORPUS_FILES[language]).read_text('utf-8')
        lines = [json.dumps({'text': paragraph}, ensure_ascii=False) for paragraph in text.split('\n') if paragraph]
        (folder / name).write_text('\n'.join(lines) + '\n', encoding='utf-8')
    return folder


@pytest.mark.parametrize('right', [True, False], ids=['right', 'wrong'])
@pytest.mark.parametrize('config', PEER_CONFIGS, ids=[config.name for config in PEER_CONFIGS])
def test_peer_config_runs_as_written(config: PeerConfig, right: bool, tmp_path: Path, fixture_corpus_dir: Path):
    responder = _right_model(config) if right else _wrong_model
    corpus = _corpus(config, tmp_path, fixture_corpus_dir)
    with OpenAICompatServer({MODEL: responder}) as server:
        task = task_config(
            server, corpus, tmp_path / 'work', model=MODEL, extra=dict(config.extra_params), subsets=config.subsets
        )
        report = run_task(task)['needle_haystack']
        prompts = [_user_text(request.messages) for request in server.requests]
    accuracy = overall_scores(report)['accuracy']
    if right:
        assert accuracy >= 0.9, accuracy
    else:
        assert accuracy <= 0.3, accuracy
    for needle in _raw_needles(config.extra_params):  # as written: a '\n...\n' needle stands on its own line
        inserted = f'\n{needle.strip()}\n' if needle != needle.strip('\n') else needle.strip()
        assert all(inserted in prompt for prompt in prompts), inserted


def _raw_needles(extra: dict) -> list[str]:
    """Every needle a config writes, top level and per subset, as written."""
    found = []
    for entry in (extra, *extra.get('subsets', {}).values()):
        found += ([entry['needle']] if 'needle' in entry else []) + list(entry.get('needles', []))
    return found


def test_cdme_needle_keeps_its_own_line(tmp_path: Path, fixture_corpus_dir: Path):
    config = PEER_CONFIGS[0]
    corpus = _corpus(config, tmp_path, fixture_corpus_dir)
    with OpenAICompatServer({MODEL: _wrong_model}) as server:
        run_task(task_config(server, corpus, tmp_path / 'work', model=MODEL, extra=CDME_SINGLE, subsets=['chinese']))
        prompts = [_user_text(request.messages) for request in server.requests]
    assert len(prompts) == CDME_SINGLE['num_repeats_per_file']
    needle = CDME_SINGLE['needle'].strip()
    assert all(f'\n{needle}\n' in prompt for prompt in prompts)
    # guide on a question that already asks a format: a think-first hint before the request, the format once.
    assert all(prompt.count('的格式回答') == 1 and '最相关' in prompt for prompt in prompts)


@pytest.mark.parametrize(
    ('key', 'fragment'),
    [('abbr', 'leave it out'), ('type', 'leave it out'), ('path', 'local_path'), ('reader_cfg', 'leave it out')],
)
def test_opencompass_objects_are_refused_with_what_to_write(key: str, fragment: str, tmp_path: Path):
    with OpenAICompatServer({MODEL: _wrong_model}) as server:
        with pytest.raises(NiahConfigError) as info:
            run_task(task_config(server, tmp_path, tmp_path / 'work', model=MODEL, extra={**CDME_SINGLE, key: 'x'}))
        assert not server.requests
    assert info.value.param == key and fragment in info.value.detail


def _readme_cdme_block() -> dict:
    # The docs page 'Coming from OpenCompass or inspect_evals' (it was the README's section of that name).
    page = Path(__file__).resolve().parents[2].joinpath('docs', 'en', 'coming-from.md').read_text(encoding='utf-8')
    code = page.split('A CDME multi-needle dict as written', 1)[1].split('```python\n', 1)[1].split('```', 1)[0]
    namespace: dict = {}
    exec(code, namespace)  # the page's own text, nothing else
    return namespace['dataset_args']['needle_haystack']


def test_readme_cdme_example_runs(tmp_path: Path, fixture_corpus_dir: Path):
    block = _readme_cdme_block()
    extra = block['extra_params']
    config = PEER_CONFIGS[1]  # the chain: its right model answers when all three links are in the prompt
    assert extra['needles'] == config.extra_params['needles'] and extra['keyword'] == config.extra_params['keyword']
    corpus = _corpus(config, tmp_path, fixture_corpus_dir)
    with OpenAICompatServer({MODEL: _right_model(config)}) as server:
        report = run_task(
            task_config(server, corpus, tmp_path / 'work', model=MODEL, extra=extra, subsets=block['subset_list'])
        )
        assert len(server.requests) == extra['num_repeats_per_file']
    assert overall_scores(report['needle_haystack'])['accuracy'] >= 0.9
