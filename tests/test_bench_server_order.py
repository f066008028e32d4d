"""benchmarks/bench_server_order.py, run as the script it is: export a tiny grid, replay it against the local
OpenAI-compatible server."""

from __future__ import annotations

import gzip
import json
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from evalscope_niah.testing.openai_server import OpenAICompatServer, needle_finder

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / 'benchmarks' / 'bench_server_order.py'
TINY_GRID = ['--max-length', '2000', '--lengths', '2', '--depths', '3']


def _bench(*argv: str) -> subprocess.CompletedProcess[str]:
    """The benchmark's own command line, in a fresh process; a failure shows the script's output."""
    done = subprocess.run([sys.executable, str(BENCH), *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _replay(path: Path, server: OpenAICompatServer, report: Path, *extra: str) -> dict:
    argv = ['--replay', str(path), '--api-url', server.base_url, '--model', 'm', '--json', str(report)]
    _bench(*argv, '--no-warmup', *extra)
    return json.loads(report.read_text())


@pytest.fixture(scope='module')
def exported(fixture_corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp('server_order') / 'requests.json.gz'
    _bench('--export', str(path), '--corpus', str(fixture_corpus_dir), *TINY_GRID)
    with gzip.open(path, 'rt', encoding='utf-8') as handle:  # the name ends in .gz: gzip, as documented
        return path, json.load(handle)


def _user_text(messages: list[dict]) -> str:
    return next(m['content'] for m in messages if m['role'] == 'user')


def test_export_holds_both_orders_and_predictions(exported: tuple[Path, dict]) -> None:
    _, data = exported
    assert data['format'] == 'evalscope-niah-server-order/1'
    ids = [item['id'] for item in data['requests']]
    assert len(ids) == 2 * 2 * 3  # english + chinese, 2 lengths, 3 depths
    assert data['orders']['grid'] == ids
    assert sorted(data['orders']['prefix']) == ids and data['orders']['prefix'] != ids
    for item in data['requests']:
        assert {'subset', 'context_length', 'depth_percent', 'divergence_token', 'messages'} <= item.keys()
    for order in ('grid', 'prefix'):
        assert set(data['predicted_share'][order]) >= {'1', '8'}
    # One request at a time, the share cannot depend on the order.
    assert data['predicted_share']['grid']['1'] == pytest.approx(data['predicted_share']['prefix']['1'])


@pytest.mark.parametrize('in_flight', [1, 3])
def test_replay_sends_every_request_once_per_run(exported: tuple[Path, dict], tmp_path: Path, in_flight: int) -> None:
    path, data = exported
    by_text = {_user_text(item['messages']): item['id'] for item in data['requests']}
    report = tmp_path / 'report.json'
    with OpenAICompatServer({'m': needle_finder}) as server:
        argv = ['--replay', str(path), '--api-url', server.base_url, '--model', 'm', '--in-flight', str(in_flight)]
        table = _bench(*argv, '--rounds', '1', '--json', str(report), '--no-warmup').stdout
        received = [by_text[_user_text(request.messages)] for request in server.requests]
    count = len(data['requests'])
    first, second = received[:count], received[count:]  # round 1: grid order, then ours
    assert len(second) == count
    for sent, order in ((first, 'grid'), (second, 'prefix')):
        assert Counter(sent) == Counter(data['orders'][order])  # every request exactly once
        if in_flight == 1:
            assert sent == data['orders'][order]
    result = json.loads(report.read_text())
    assert [run['order'] for run in result['runs']] == ['grid', 'prefix']
    for run, order in zip(result['runs'], ('grid', 'prefix'), strict=True):
        assert run['ok'] == count
        assert run['cache_share'] is None  # this server does not say what it reused
        if in_flight == 1:
            assert run['sent_ids'] == data['orders'][order]
    assert 'grid order (built-in)' in table and 'ours: prefix_friendly_order' in table
    assert 'grid order / our order, wall time:' in table


def test_replay_restarts_the_server_per_run(exported: tuple[Path, dict], tmp_path: Path) -> None:
    path, data = exported
    with socket.socket() as probe:  # a free port for the server command
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    command = f'{sys.executable} -m evalscope_niah.testing.openai_server --port {port} --model m'
    report = tmp_path / 'report.json'
    argv = ['--replay', str(path), '--api-url', f'http://127.0.0.1:{port}/v1', '--model', 'm', '--rounds', '1']
    _bench(*argv, '--server-cmd', command, '--server-log', str(tmp_path / 'server.log'), '--json', str(report))
    result = json.loads(report.read_text())
    assert [run['order'] for run in result['runs']] == ['grid', 'prefix']
    assert all(run['ok'] == len(data['requests']) for run in result['runs'])
    assert (tmp_path / 'server.log').read_text().count('=====') == 2 * 2  # one banner per fresh server


@pytest.mark.parametrize(
    ('extra', 'orders'),
    [
        (['--rounds', '3'], ['grid', 'prefix', 'prefix', 'grid', 'grid', 'prefix']),
        (['--rounds', '2', '--start-with', 'prefix'], ['prefix', 'grid', 'grid', 'prefix']),
    ],
)
def test_rounds_alternate_which_order_goes_first(
    exported: tuple[Path, dict], tmp_path: Path, extra: list[str], orders: list[str]
) -> None:
    path, _ = exported
    with OpenAICompatServer({'m': needle_finder}) as server:
        result = _replay(path, server, tmp_path / 'report.json', *extra)
    assert [run['order'] for run in result['runs']] == orders
    assert [run['round'] for run in result['runs']] == [n for n in range(1, len(orders) // 2 + 1) for _ in (0, 1)]


@pytest.mark.parametrize('api_style', ['llama.cpp', 'vllm'])
def test_cached_tokens_read_from_llama_server_and_vllm_replies(
    exported: tuple[Path, dict], tmp_path: Path, api_style: str
) -> None:
    """The share of prompt tokens served from cache comes from each reply (llama-server's ``timings``, vLLM's
    ``usage.prompt_tokens_details``), here a one-slot cache's as llama-server with one slot reports it."""
    path, _ = exported
    with OpenAICompatServer({'m': needle_finder}, api_style=api_style, tokenize=False, prompt_cache=True) as server:
        result = _replay(path, server, tmp_path / 'report.json', '--in-flight', '1')
    for run in result['runs']:
        assert 0 < run['cache_share'] < 1  # consecutive requests share the instructions and some haystack
        assert run['cached_tokens'] + run['computed_tokens'] == run['prompt_tokens_server']


def test_replay_sends_each_requests_routing_key_when_asked(exported: tuple[Path, dict], tmp_path: Path) -> None:
    path, data = exported
    keys = {_user_text(item['messages']): item['routing_key'] for item in data['requests']}
    assert data['routing_key_headers'] == ['X-Session-ID', 'X-SMG-Routing-Key']
    assert len(set(keys.values())) == 2  # one haystack start per subset: two prefix groups
    sent = {}
    for setting in ('on', 'X-Hash-Key'):
        with OpenAICompatServer({'m': needle_finder}) as server:
            _replay(path, server, tmp_path / f'{setting}.json', '--routing-key-header', setting)
            sent[setting] = server.requests
    keyed, custom = sent['on'], sent['X-Hash-Key']
    assert len(keyed) == 2 * len(data['requests'])  # both orders
    for request in keyed:
        expected = keys[_user_text(request.messages)]
        assert request.headers['x-session-id'] == request.headers['x-smg-routing-key'] == expected
    assert all(request.headers['x-hash-key'] == keys[_user_text(request.messages)] for request in custom)
    assert all('x-session-id' not in request.headers for request in custom)
