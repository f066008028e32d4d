"""benchmarks/bench_server_order.py: the export holds both orders, and the replay sends each order as declared."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests.support.openai_server import OpenAICompatServer, needle_finder

SCRIPT = Path(__file__).resolve().parents[1] / 'benchmarks' / 'bench_server_order.py'
MODEL = 'replayed'


@pytest.fixture(scope='module')
def bench():
    spec = importlib.util.spec_from_file_location('bench_server_order', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault('bench_server_order', module)
    spec.loader.exec_module(module)
    return module


def test_export_then_replay_sends_each_order_once_in_order(bench, fixture_corpus_dir, tmp_path, capsys):
    exported = tmp_path / 'requests.json.gz'
    data = bench.export(
        exported, corpus=fixture_corpus_dir, grid='default', max_length=1500, lengths=2, depths=3, subsets=['english']
    )
    orders = data['orders']
    assert sorted(orders['grid']) == sorted(orders['prefix']) == list(range(6))
    assert orders['grid'] != orders['prefix']  # the deepest prompt of each length goes first in ours
    figures = tmp_path / 'figures.json'
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        argv = ['--replay', str(exported), '--api-url', server.base_url, '--model', MODEL, '--in-flight', '1']
        assert bench.main([*argv, '--no-warmup', '--json', str(figures)]) == 0
        requests = server.requests
    by_user_prompt = {item['messages'][-1]['content']: item['id'] for item in bench.read_export(exported)['requests']}
    sent = [by_user_prompt[request.messages[-1]['content']] for request in requests]
    assert sent == orders['grid'] + orders['prefix']  # one run of each, grid first, one request at a time
    table = capsys.readouterr().out
    assert 'grid order (built-in)' in table and 'ours: prefix_friendly_order' in table
    summary = json.loads(figures.read_text())['summary']
    assert set(summary) == {'grid', 'prefix'}
    assert all(entry['failed_requests'] == 0 for entry in summary.values())
