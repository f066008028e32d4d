"""benchmarks/bench_server_order.py: export a tiny grid, replay it against the local OpenAI-compatible server."""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.openai_server import OpenAICompatServer, needle_finder

REPO = Path(__file__).resolve().parents[1]
TINY_GRID = ['--max-length', '2000', '--lengths', '2', '--depths', '3']


def _load_bench() -> ModuleType:
    # benchmarks/ is no package: load the script from its path.
    spec = importlib.util.spec_from_file_location('bench_server_order', REPO / 'benchmarks' / 'bench_server_order.py')
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench = _load_bench()


@pytest.fixture(scope='module')
def exported(fixture_corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp('server_order') / 'requests.json.gz'
    assert bench.main(['--export', str(path), '--corpus', str(fixture_corpus_dir), *TINY_GRID]) == 0
    return path, bench.read_export(path)


def _user_text(messages: list[dict]) -> str:
    return next(m['content'] for m in messages if m['role'] == 'user')


def test_export_holds_both_orders_and_predictions(exported: tuple[Path, dict]) -> None:
    _, data = exported
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
def test_replay_sends_every_request_once_per_run(
    exported: tuple[Path, dict], tmp_path: Path, capsys: pytest.CaptureFixture[str], in_flight: int
) -> None:
    path, data = exported
    by_text = {_user_text(item['messages']): item['id'] for item in data['requests']}
    report = tmp_path / 'report.json'
    with OpenAICompatServer({'m': needle_finder}) as server:
        argv = ['--replay', str(path), '--api-url', server.base_url, '--model', 'm', '--in-flight', str(in_flight)]
        assert bench.main([*argv, '--rounds', '1', '--json', str(report), '--no-warmup']) == 0
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
        if in_flight == 1:
            assert run['sent_ids'] == data['orders'][order]
    table = capsys.readouterr().out
    assert 'grid order (built-in)' in table and 'ours: prefix_friendly_order' in table
    assert 'grid order / our order, wall time:' in table


def test_replay_restarts_the_server_per_run(exported: tuple[Path, dict], tmp_path: Path) -> None:
    path, data = exported
    with socket.socket() as probe:  # a free port for the server command
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    command = f'{sys.executable} -m tests.support.openai_server --port {port} --model m'
    report = tmp_path / 'report.json'
    argv = ['--replay', str(path), '--api-url', f'http://127.0.0.1:{port}/v1', '--model', 'm', '--rounds', '1']
    argv += ['--server-cmd', command, '--server-log', str(tmp_path / 'server.log'), '--json', str(report)]
    assert bench.main(argv) == 0
    result = json.loads(report.read_text())
    assert [run['order'] for run in result['runs']] == ['grid', 'prefix']
    assert all(run['ok'] == len(data['requests']) for run in result['runs'])
    assert (tmp_path / 'server.log').read_text().count('=====') == 2 * 2  # one banner per fresh server


def test_rounds_alternate_which_order_goes_first() -> None:
    assert bench.run_schedule(3) == [['grid', 'prefix'], ['prefix', 'grid'], ['grid', 'prefix']]
    assert bench.run_schedule(2, 'prefix') == [['prefix', 'grid'], ['grid', 'prefix']]


def test_cached_tokens_from_llama_server_and_vllm_replies() -> None:
    assert bench._cached_tokens({'timings': {'cache_n': 30, 'prompt_n': 70}}) == (30, 70)
    vllm = {'usage': {'prompt_tokens': 100, 'prompt_tokens_details': {'cached_tokens': 64}}}
    assert bench._cached_tokens(vllm) == (64, 36)
    assert bench._cached_tokens({'usage': {'prompt_tokens': 100}}) == (None, None)


def test_replay_sends_each_requests_routing_key_when_asked(exported: tuple[Path, dict], tmp_path: Path) -> None:
    path, data = exported
    keys = {_user_text(item['messages']): item['routing_key'] for item in data['requests']}
    assert data['routing_key_headers'] == ['X-Session-ID', 'X-SMG-Routing-Key']
    assert len(set(keys.values())) == 2  # one haystack start per subset: two prefix groups
    sent = {}
    for setting in ('on', 'X-Hash-Key'):
        with OpenAICompatServer({'m': needle_finder}) as server:
            argv = ['--replay', str(path), '--api-url', server.base_url, '--model', 'm', '--no-warmup']
            assert bench.main([*argv, '--routing-key-header', setting]) == 0
            sent[setting] = server.requests
    keyed, custom = sent['on'], sent['X-Hash-Key']
    assert len(keyed) == 2 * len(data['requests'])
    for request in keyed:
        expected = keys[_user_text(request.messages)]
        assert request.headers['x-session-id'] == request.headers['x-smg-routing-key'] == expected
    assert all(request.headers['x-hash-key'] == keys[_user_text(request.messages)] for request in custom)
    assert all('x-session-id' not in request.headers for request in custom)


def test_computed_tokens_from_llama_cpp_and_vllm_metrics() -> None:
    llama = '# HELP llamacpp:prompt_tokens_total x\nllamacpp:prompt_tokens_total 1200\nllamacpp:n_decode_total 9\n'
    assert bench.computed_tokens(bench.parse_prometheus(llama)) == 1200
    vllm = (
        '# TYPE vllm:prompt_tokens_total counter\n'
        'vllm:prompt_tokens_total{engine="0",model_name="m"} 1000.0\n'
        'vllm:prompt_tokens_total{engine="1",model_name="m"} 500.0\n'
        'vllm:prefix_cache_hits_total{engine="0",model_name="m"} 640.0\n'
        'garbage line\n'
    )
    assert bench.computed_tokens(bench.parse_prometheus(vllm)) == 1500 - 640
    assert bench.computed_tokens(bench.parse_prometheus('other_metric 3\n')) is None
    assert bench.key_headers('off', ['X-A']) == [] and bench.key_headers('on', ['X-A', 'X-B']) == ['X-A', 'X-B']
    assert bench.key_headers('X-C', ['X-A']) == ['X-C']
