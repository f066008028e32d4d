"""A failed judge call's exception, as the OpenAI client raises it against a real endpoint, is named by what failed:
unreachable, timeout, rejected key, model not found, another HTTP error, a reply without text."""

from __future__ import annotations

import socket

import openai
import pytest

pytest.importorskip('evalscope')

from evalscope_niah.integration.judge_errors import judge_call_error
from evalscope_niah.integration.replies import EmptyReplyError
from evalscope_niah.judging.judge_failures import FATAL_FAILURE_KINDS
from evalscope_niah.testing.openai_server import FaultPlan, OpenAICompatServer

JUDGE = 'judge'


def _raised(base_url: str, *, model: str = JUDGE, api_key: str = 'x', timeout: float = 10) -> Exception:
    client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout)
    with pytest.raises(Exception) as error:
        client.chat.completions.create(model=model, messages=[{'role': 'user', 'content': 'hi'}])
    return error.value


def _closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    return f'http://127.0.0.1:{port}/v1'


def test_a_refused_connection_is_unreachable() -> None:
    url = _closed_port_url()
    failure = judge_call_error(_raised(url), url=url, model=JUDGE)
    assert (failure.kind, failure.url) == ('unreachable', url)
    assert 'connection refused' in failure.detail and 'api_url' in failure.fix
    assert failure.kind in FATAL_FAILURE_KINDS


def test_an_unknown_host_is_unreachable_by_dns() -> None:
    url = 'http://no-such-judge-host.invalid/v1'  # .invalid never resolves (RFC 2606)
    failure = judge_call_error(_raised(url), url=url, model=JUDGE)
    assert failure.kind == 'unreachable' and 'DNS' in failure.detail


def test_statuses_are_named() -> None:
    with OpenAICompatServer({JUDGE: lambda messages: '{"rating": 10}'}, api_keys={JUDGE: 'key'}) as server:
        url = server.base_url
        rejected = judge_call_error(_raised(url), url=url, model=JUDGE)
        missing = judge_call_error(_raised(url, model='nope', api_key='key'), url=url, model='nope')
    assert (rejected.kind, rejected.detail) == ('rejected_key', 'HTTP 401') and 'api_key' in rejected.fix
    assert missing.kind == 'model_not_found' and missing.detail.startswith('HTTP 404')
    assert "'nope'" in missing.fix and f'{url}/models' in missing.fix


def test_a_server_error_and_a_timeout_are_named() -> None:
    faults = {JUDGE: FaultPlan(http_500=1.0), 'slow': FaultPlan(hang=1.0)}
    responders = {JUDGE: lambda messages: 'x', 'slow': lambda messages: 'x'}
    with OpenAICompatServer(responders, faults=faults) as server:
        url = server.base_url
        broken = judge_call_error(_raised(url), url=url, model=JUDGE)
        slow = judge_call_error(_raised(url, model='slow', timeout=0.2), url=url, model='slow')
    assert broken.kind == 'http_error' and broken.detail.startswith('HTTP 500')
    assert broken.kind not in FATAL_FAILURE_KINDS  # a server fault may pass: the rest of the set is asked
    assert slow.kind == 'timeout' and 'timeout' in slow.fix


def test_an_empty_reply_is_a_bad_reply_and_credentials_never_show() -> None:
    url = 'http://user:secret@127.0.0.1:9/v1?key=secret'
    failure = judge_call_error(EmptyReplyError('judge reply 3 of 3 is empty'), url=url, model=JUDGE)
    assert failure.kind == 'bad_reply' and 'empty' in failure.detail
    assert failure.url == 'http://127.0.0.1:9/v1' and 'secret' not in failure.describe()


def test_registering_the_benchmark_does_not_import_the_openai_client() -> None:
    # judge_errors loads when the benchmark registers (at `import evalscope`): importing openai there cost every
    # evalscope command a quarter second; the client's exceptions are looked up only once the client exists.
    import subprocess
    import sys

    code = 'import evalscope_niah.integration, sys; print("openai" in sys.modules)'
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True, timeout=120)
    assert result.stdout.strip() == 'False'
