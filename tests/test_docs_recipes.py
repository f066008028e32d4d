"""The serve-then-run recipes of Getting started (both languages), as a user's shell reads them: each block marked
``<!-- serve-then-run -->`` runs in bash with every command it names replaced by a recorder, and each recorded
command is then checked: a server line names its context-length flag, our commands parse with our parser and
EvalScope's with its own, every JSON parses into a valid configuration (our parameters, EvalScope's judge), and a
judge's key comes from the environment, never from the page."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MARK = '<!-- serve-then-run -->'
PAGES = [ROOT / 'docs' / language / 'getting-started.md' for language in ('en', 'zh')]
# The commands a recipe may name: each becomes a shell function that records its arguments (and Ollama's window).
COMMANDS = ('vllm', 'python', 'lmdeploy', 'ollama', 'evalscope-niah', 'evalscope')
SECRET = 'key-from-the-environment'


def _blocks(page: Path) -> list[str]:
    return re.findall(re.escape(MARK) + r'\n```bash\n(.*?)```', page.read_text(encoding='utf-8'), flags=re.DOTALL)


def _recorded(block: str, tmp_path: Path) -> list[dict]:
    """The commands ``block`` runs, in order: {'command', 'argv', 'ollama_context_length'}."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    record = tmp_path / 'record.jsonl'
    recorder = (
        'import json, os, sys; print(json.dumps({"command": sys.argv[1], "argv": sys.argv[2:], '
        '"ollama_context_length": os.environ.get("OLLAMA_CONTEXT_LENGTH")}))'
    )
    call = f'{shlex.quote(sys.executable)} -c {shlex.quote(recorder)}'
    functions = ''.join(f'{name}() {{ {call} {name} "$@" >> {shlex.quote(str(record))}; }}\n' for name in COMMANDS)
    # A key the page exports as '...' is the user's to fill in: the test's own value stands in for it.
    script = functions + block.replace('=...', f'={SECRET}')
    done = subprocess.run(['bash', '-euo', 'pipefail', '-c', script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in record.read_text(encoding='utf-8').splitlines()]


def _option(argv: list[str], flag: str) -> str:
    assert flag in argv, (flag, argv)
    return argv[argv.index(flag) + 1]


def _check_params(dataset_args: dict) -> None:
    from evalscope_niah.tasks.compose import parse_params

    entry = dataset_args.get('needle_haystack', dataset_args)
    parse_params(entry.get('extra_params', {}))


def _check_judge(judge: dict) -> None:
    from evalscope.config import JudgeConfig

    config = JudgeConfig.model_validate(judge)
    for model in config.models:
        assert model.api_key is None or model.api_key.get_secret_value() == SECRET, 'a key written into the page'


def _check(command: dict) -> str:
    """What ``command`` is ('vllm', 'doctor', ...), after checking it."""
    name, argv = command['command'], command['argv']
    if name == 'vllm':
        assert argv[0] == 'serve' and int(_option(argv, '--max-model-len')) > 0
    elif name == 'python':
        assert argv[:2] == ['-m', 'sglang.launch_server'] and int(_option(argv, '--context-length')) > 0
    elif name == 'lmdeploy':
        assert argv[:2] == ['serve', 'api_server'] and int(_option(argv, '--session-len')) > 0
    elif name == 'ollama':
        assert argv[0] in ('serve', 'pull')
        if argv[0] == 'serve':
            assert int(command['ollama_context_length']) > 0, 'Ollama started without OLLAMA_CONTEXT_LENGTH'
    elif name == 'evalscope-niah' and argv[0] == 'doctor':
        from evalscope_niah.cli import _parser

        args = _parser().parse_args(argv)
        _check_params(args.dataset_args)
        if args.judge is not None:
            _check_judge(args.judge)
        return 'doctor'
    elif name in ('evalscope-niah', 'evalscope') and argv[0] == 'eval':
        from evalscope.arguments import add_argument

        parser = argparse.ArgumentParser(prog='evalscope eval')
        add_argument(parser)
        args = parser.parse_args(argv[1:])  # an unknown flag exits 2 here
        _check_params(args.dataset_args)
        _check_judge(args.judge)
        assert isinstance(args.generation_config, dict) and args.eval_batch_size >= 1
        return 'eval'
    else:
        raise AssertionError(f'a recipe runs a command the test does not know: {name} {argv[:1]}')
    return name


@pytest.mark.parametrize('page', PAGES, ids=lambda page: page.parent.name)
def test_every_recipe_block_is_a_valid_command_line(page: Path, tmp_path: Path) -> None:
    seen: list[str] = []
    for number, block in enumerate(_blocks(page)):
        seen += [_check(command) for command in _recorded(block, tmp_path / str(number))]
    # A server line per server, and doctor before each run.
    assert {'vllm', 'python', 'lmdeploy', 'ollama'} <= set(seen), seen
    assert seen.count('eval') == 4 and seen.count('doctor') >= 4 + 2, seen


@pytest.mark.parametrize('page', PAGES, ids=lambda page: page.parent.name)
def test_the_judge_blocks_take_the_key_from_the_environment(page: Path, tmp_path: Path) -> None:
    judges = [
        command
        for number, block in enumerate(_blocks(page))
        if 'API_KEY' in block
        for command in _recorded(block, tmp_path / str(number))
        if '--judge' in command['argv']
    ]
    urls = [json.loads(_option(command['argv'], '--judge'))['models'][0]['api_url'] for command in judges]
    assert any('dashscope' in url for url in urls) and any('openai.com' in url for url in urls), urls
    assert all(json.loads(_option(command['argv'], '--judge'))['models'][0]['api_key'] == SECRET for command in judges)


def test_no_page_writes_a_key() -> None:
    pages = [ROOT / 'README.md', ROOT / 'README_zh.md', *sorted((ROOT / 'docs').glob('*/*.md'))]
    found = [
        f'{page.name}: {match}'
        for page in pages
        for match in re.findall(r'(?<![A-Za-z])sk-[\w.]+', page.read_text('utf-8'))
    ]
    assert not found, found
