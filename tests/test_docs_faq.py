"""The FAQ's error catalogue is found by the words a user sees: real bad configurations, given to the CLI and to
EvalScope's run_task, print their errors, and each printed line is in the catalogue (the entry whose words it
prints, with the example values filled in where the user's differ), on the English and the Chinese page."""

from __future__ import annotations

import json
import os
import runpy
import shutil
import subprocess
from pathlib import Path

import pytest

from evalscope_niah.cli import main
from evalscope_niah.errors import NiahConfigError
from evalscope_niah.making.corpus import DEMO_CORPUS_DIR
from evalscope_niah.making.tokenization import shipped_qwen3_dir
from evalscope_niah.testing.openai_server import OpenAICompatServer, needle_finder
from tests.support.tasks import task_settings

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = runpy.run_path(str(ROOT / 'docs' / 'hooks' / 'error_catalogue.py'))
ERRORS = CATALOGUE['raised_errors']()  # read once: the walk and the parses take seconds
PAGES = {language: (ROOT / 'docs' / language / 'faq.md').read_text(encoding='utf-8') for language in ('en', 'zh')}
PREFIX = 'evalscope-niah: error: '
PARAM = '\ue000param\ue001: '
DEMO = str(DEMO_CORPUS_DIR)


def _preview(entry: dict) -> list[str]:
    return ['preview', '--limit', '1', '--subset', 'english', '--dataset-args', json.dumps(entry)]


def _demo_subset(**subset: str) -> dict:
    return {'local_path': DEMO, 'extra_params': {'subsets': {'english': {'corpus_file': 'english.txt', **subset}}}}


# Bad configurations as users write them, each through the command a user runs.
CLI_CASES = {
    'a corpus folder that is not there': _preview({'local_path': '/nonexistent/corpus'}),
    'a misspelt parameter': _preview({'local_path': DEMO, 'extra_params': {'context_lenghts': [1000]}}),
    'a judge check mode that does not exist': _preview({'local_path': DEMO, 'extra_params': {'judge_check': 'maybe'}}),
    'an unknown task': _preview({'local_path': DEMO, 'extra_params': {'task': 'klingon'}}),
    'an unknown tiktoken encoding': _preview({'local_path': DEMO, 'extra_params': {'tokenizer_path': 'tiktoken:x'}}),
    'a prompt template without the question': _preview({'local_path': DEMO, 'prompt_template': '{context}'}),
    'a corpus file outside the corpus folder': _preview(_demo_subset(corpus_file='../secret.txt')),
    'a corpus file that is not there': _preview(_demo_subset(corpus_file='missing.txt')),
    'a negative length': _preview({'local_path': DEMO, 'extra_params': {'context_lengths': [-5]}}),
    'two tools mixed': _preview({'local_path': DEMO, 'extra_params': {'n_contexts': 3, 'length': [1000]}}),
    "Kamradt's evaluator": _preview({'local_path': DEMO, 'extra_params': {'evaluator': 'openai'}}),
    'the demo asked past its model': ['demo', '--lengths', '9000'],
    'prices that do not parse': ['preview', '--estimate', '--prices', 'model_input=x', *_preview(_demo_subset())[1:]],
}


def _fixed(template: str) -> str:
    return ''.join(CATALOGUE['PLACEHOLDER'].split(template)[::2])


def _entry_for(line: str):
    """The catalogue entry whose words ``line`` prints (the RaisedError): of those whose template matches it, the one
    with the most fixed text (a bare ``{message}`` entry matches anything and says nothing); None when none does."""
    matches = [
        error
        for error in ERRORS
        if any(
            CATALOGUE['template_pattern'](template).fullmatch(line)
            # The line names a parameter; the entry may list the message under the one that words it.
            for template in (f'{error.param}: {error.message}', error.message, f'{PARAM}{error.message}')
        )
    ]
    return max(matches, key=lambda error: len(_fixed(error.message)), default=None)


def _assert_in_the_faq(line: str) -> None:
    error = _entry_for(line)
    assert error is not None, f'no catalogue entry prints {line!r}'
    shown = CATALOGUE['as_printed'](error.message, error.module)
    # The words the user sees are the entry's own: its longest piece of fixed text is in the line and on both pages.
    words = max(CATALOGUE['PLACEHOLDER'].split(error.message)[::2], key=len)
    assert len(_fixed(error.message)) >= 12 and words in line, (error.message, line)
    for language, page in PAGES.items():
        assert shown in ' '.join(page.split()), (language, shown)


@pytest.mark.parametrize('argv', CLI_CASES.values(), ids=CLI_CASES.keys())
def test_a_bad_config_prints_a_line_of_the_faq(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    printed = [line for line in capsys.readouterr().err.splitlines() if line.startswith(PREFIX)]
    assert len(printed) == 1, printed
    _assert_in_the_faq(printed[0].removeprefix(PREFIX))


def test_lengths_past_the_models_window_print_a_line_of_the_faq(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    from evalscope import TaskConfig, run_task

    server = OpenAICompatServer(
        {'windowed': needle_finder}, api_style='vllm', tokenizer_dir=str(shipped_qwen3_dir()), context_window=1800
    )
    with server:
        extra = {'context_lengths': [600, 2000], 'document_depth_percents': [50]}
        settings = task_settings(
            server, fixture_corpus_dir, tmp_path, model='windowed', extra=extra, generation_config={'max_tokens': 100}
        )
        with pytest.raises(NiahConfigError) as error:
            run_task(TaskConfig(**settings))
    assert 'the model reads at most 1800 tokens' in str(error.value)
    _assert_in_the_faq(str(error.value))


def test_an_unreachable_judge_prints_a_line_of_the_faq(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    from evalscope import TaskConfig, run_task

    judge = {'models': [{'model_id': 'judge', 'api_url': 'http://127.0.0.1:9/v1', 'api_key': 'x'}]}
    with OpenAICompatServer({'model': needle_finder}) as server:
        extra = {'context_lengths': [600], 'document_depth_percents': [50]}
        settings = task_settings(server, fixture_corpus_dir, tmp_path, model='model', extra=extra, judge=judge)
        with pytest.raises(NiahConfigError) as error:
            run_task(TaskConfig(**settings))
    assert 'judge server unreachable at http://127.0.0.1:9/v1' in str(error.value)
    _assert_in_the_faq(str(error.value))
    # The failure alone, as the console and the judge check file say it, is an entry too.
    assert 'judge server unreachable at' in PAGES['en'] and 'judge server unreachable at' in PAGES['zh']


def test_eval_names_a_missing_corpus_folder_and_what_to_point_it_at(tmp_path: Path) -> None:
    if shutil.which('evalscope-niah') is None:
        pytest.skip('evalscope-niah is not on PATH (install the package)')
    dataset_args = json.dumps({'needle_haystack': {'local_path': '/nonexistent/corpus'}})
    argv = ['eval', '--model', 'm', '--api-url', 'http://127.0.0.1:9/v1', '--datasets', 'needle_haystack']
    argv += ['--dataset-args', dataset_args, '--judge', '{"strategy": "rule"}', '--work-dir', str(tmp_path)]
    env = {**os.environ, 'PYTHONPATH': str(ROOT)}
    done = subprocess.run(['evalscope-niah', *argv], env=env, capture_output=True, text=True, timeout=300)
    (line,) = [line for line in done.stderr.splitlines() if PREFIX in line]
    line = line[line.index(PREFIX) + len(PREFIX) :]  # after EvalScope's progress bar on the same line
    assert done.returncode == 2 and 'is not a directory; point local_path at the folder holding' in line
    _assert_in_the_faq(line)


def test_internal_checks_are_left_out() -> None:
    messages = [error.message for error in ERRORS]
    assert not [message for message in messages if 'calibration items' in message and 'judge replies' in message]
    assert not [message for message in messages if message.startswith('needles must not be empty')]
