"""The routing key: the setting's checks, one key per prefix group, and the headers every model request carries
through EvalScope's OpenAI client to a real 127.0.0.1 server."""

from __future__ import annotations

from collections import defaultdict

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.integration.run import run_task_settings
from evalscope_niah.making.samples import iter_plans
from evalscope_niah.params.subsets import EN_NEEDLE
from evalscope_niah.serving.routing import (
    ROUTER_KEY_HEADERS,
    check_routing_key_header,
    routing_headers,
    routing_key,
)
from evalscope_niah.tasks.compose import parse_params
from evalscope_niah.testing.openai_server import OpenAICompatServer, needle_finder
from tests.support.tasks import task_settings

MODEL = 'needle-finder'
LENGTHS = [600, 1200]
DEPTHS = [0, 50, 100]


# ---- the setting ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('given', 'expected'),
    [('on', 'on'), ('OFF', 'off'), (' on ', 'on'), (True, 'on'), (False, 'off'), ('X-Route-Key', 'X-Route-Key')],
)
def test_setting_accepts_on_off_yaml_booleans_and_header_names(given, expected) -> None:
    assert check_routing_key_header(given) == expected
    assert parse_params({'routing_key_header': given}).routing_key_header == expected


def test_setting_is_on_by_default() -> None:
    assert parse_params({}).routing_key_header == 'on'


@pytest.mark.parametrize(
    ('given', 'says'),
    [
        ('two words', 'a header name is 1-64'),
        ('', 'a header name is 1-64'),
        ('X-Key\r\nX-Evil: 1', 'a header name is 1-64'),
        ('x' * 65, 'a header name is 1-64'),
        (3, "'on' (headers X-Session-ID, X-SMG-Routing-Key), 'off', or a custom header name"),
        ('authorization', 'a header the HTTP client or the API needs'),
        ('Content-Length', 'a header the HTTP client or the API needs'),
    ],
)
def test_bad_setting_is_one_error_naming_the_parameter(given, says) -> None:
    with pytest.raises(NiahConfigError) as caught:
        parse_params({'routing_key_header': given})
    assert caught.value.param == 'routing_key_header'
    assert says in caught.value.detail


def test_headers_for_each_setting() -> None:
    assert routing_headers('on', 'k') == dict.fromkeys(ROUTER_KEY_HEADERS, 'k')
    assert set(ROUTER_KEY_HEADERS) == {'X-Session-ID', 'X-SMG-Routing-Key'}
    assert routing_headers('off', 'k') == {}
    assert routing_headers('X-Route-Key', 'k') == {'X-Route-Key': 'k'}


# ---- one key per prefix group ---------------------------------------------------------------------------------


def test_key_is_shared_by_every_length_and_depth_of_a_group_and_differs_between_groups(fixture_corpus_dir) -> None:
    params = parse_params({'context_lengths': LENGTHS, 'document_depth_percents': DEPTHS, 'num_repeats': 2})
    plans = list(iter_plans(params, corpus_dir=fixture_corpus_dir, subsets=['english', 'chinese']))
    keys: dict[tuple[str, int], set[str]] = defaultdict(set)
    for plan in plans:
        keys[(plan.subset, plan.repeat)].add(routing_key(plan.subset, plan.start_token))
    assert set(keys) == {(subset, repeat) for subset in ('english', 'chinese') for repeat in (0, 1)}
    assert all(len(group) == 1 for group in keys.values())  # one key for all lengths and depths of a group
    assert len(set().union(*keys.values())) == 4  # and a different key per subset and haystack start
    # The key is a plain ASCII header value, the same in every run.
    for (subset, _), (key,) in keys.items():
        assert key.isascii() and key.startswith(f'niah-{subset}-')
    # Planned again (a resumed run, the next model), the grid gets the same keys.
    replanned = iter_plans(params, corpus_dir=fixture_corpus_dir, subsets=['english', 'chinese'])
    assert {routing_key(plan.subset, plan.start_token) for plan in replanned} == set().union(*keys.values())


# ---- through EvalScope to a real server -----------------------------------------------------------------------


def _run(server, corpus_dir, work_dir, extra, **overrides):
    settings = task_settings(
        server,
        corpus_dir,
        work_dir,
        model=MODEL,
        extra={'context_lengths': LENGTHS, 'document_depth_percents': DEPTHS, 'num_repeats': 2, **extra},
        subsets=['english'],
        **{'eval_batch_size': 2, **overrides},
    )
    return run_task_settings(settings)  # registers our adapter first, whatever ran before in this process


def _chat_requests(server):
    return [request for request in server.requests if request.path.endswith('/chat/completions')]


def test_every_request_carries_its_group_key_in_both_router_headers(fixture_corpus_dir, tmp_path) -> None:
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        _run(server, fixture_corpus_dir, tmp_path, {})
        requests = _chat_requests(server)
    assert len(requests) == len(LENGTHS) * len(DEPTHS) * 2
    by_key: dict[str, list] = defaultdict(list)
    for request in requests:
        key = request.headers['x-session-id']
        assert request.headers['x-smg-routing-key'] == key
        by_key[key].append(request)
    # Two haystack starts: two groups of lengths x depths prompts each, and the key names the group.
    assert sorted(len(group) for group in by_key.values()) == [len(LENGTHS) * len(DEPTHS)] * 2
    for group in by_key.values():
        first_words = {_haystack_start(request) for request in group}
        assert len(first_words) == 1  # every prompt of one key starts its haystack at the same corpus text


def _haystack_start(request) -> str:
    # The haystack without its needle (a depth-0 needle opens it) starts at the group's corpus point.
    haystack = request.messages[-1]['content'].split('<text>', 1)[1]
    return haystack.replace(EN_NEEDLE, '').strip()[:200]


def test_off_sends_no_key_and_a_custom_name_sends_only_that_header(fixture_corpus_dir, tmp_path) -> None:
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        _run(server, fixture_corpus_dir, tmp_path / 'off', {'routing_key_header': 'off'})
        off = _chat_requests(server)
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        _run(server, fixture_corpus_dir, tmp_path / 'custom', {'routing_key_header': 'X-Route-Key'})
        custom = _chat_requests(server)
    assert off and all(name not in request.headers for request in off for name in ('x-session-id', 'x-smg-routing-key'))
    assert custom and all(request.headers['x-route-key'].startswith('niah-english-') for request in custom)
    assert all('x-session-id' not in request.headers for request in custom)
    assert len({request.headers['x-route-key'] for request in custom}) == 2


def test_the_users_own_headers_are_kept_and_win_on_a_clash(fixture_corpus_dir, tmp_path) -> None:
    own = {'X-Trace-Tag': 'mine', 'x-session-id': 'user-session'}
    with OpenAICompatServer({MODEL: needle_finder}) as server:
        _run(server, fixture_corpus_dir, tmp_path, {}, generation_config={'extra_headers': own})
        requests = _chat_requests(server)
    assert requests
    for request in requests:
        assert request.headers['x-trace-tag'] == 'mine'
        assert request.headers['x-session-id'] == 'user-session'  # the user's explicit value is not overwritten
        assert request.headers['x-smg-routing-key'].startswith('niah-english-')


def test_replicas_order_lets_the_groups_take_turns(fixture_corpus_dir, tmp_path) -> None:
    # One request at a time: the server sees our order. 'replicas' alternates the two haystack starts, 'prefix'
    # sends one start's prompts, then the other's.
    sent = {}
    for order in ('replicas', 'prefix'):
        with OpenAICompatServer({MODEL: needle_finder}) as server:
            _run(server, fixture_corpus_dir, tmp_path / order, {'request_order': order}, eval_batch_size=1)
            sent[order] = [request.headers['x-session-id'] for request in _chat_requests(server)]
    group = len(LENGTHS) * len(DEPTHS)
    first, second = sent['prefix'][0], sent['prefix'][-1]
    assert first != second and sent['prefix'] == [first] * group + [second] * group
    assert sent['replicas'] == [first, second] * group
