"""A deadline for the whole request: a server that drips its reply, or declares a body longer than it sends, is
given up on near the timeout; stop_requests cuts a request in flight. A real server on 127.0.0.1, a real httpx client.
"""

from __future__ import annotations

import threading

import httpx
import pytest

from evalscope_niah.serving.deadline import (
    DeadlineExceeded,
    RequestsStopped,
    allow_requests,
    deadline_transport,
    stop_requests,
)
from evalscope_niah.testing.openai_server import FaultPlan, OpenAICompatServer, needle_finder

MODEL = 'slow-model'
CHAT = {'model': MODEL, 'messages': [{'role': 'user', 'content': 'The needle is: a blue fox. What is the needle?'}]}


def _client(server: OpenAICompatServer, timeout: float) -> httpx.Client:
    return httpx.Client(transport=deadline_transport(httpx.HTTPTransport()), base_url=server.base_url, timeout=timeout)


@pytest.mark.parametrize('fault', ['drip', 'long_body'])
def test_a_reply_that_never_completes_fails_as_a_timeout(fault):
    # Every read gets a byte within 0.2 s (drip), or the body stalls (long_body, up to 60 s): httpx's read timeout
    # alone would wait out the drip. The plain client shows the fault is real: it is still reading after 1 s.
    plan = FaultPlan(**{fault: 1.0}, drip_interval_s=0.2, drip_seconds=60, hang_seconds=60)
    with OpenAICompatServer({MODEL: needle_finder}, {MODEL: plan}, max_seconds=120) as server:
        with _client(server, timeout=1.0) as client, pytest.raises(DeadlineExceeded, match='1 s request timeout'):
            client.post('/chat/completions', json=CHAT)
        assert server.fault_counts[fault] == 1


def test_a_reply_in_time_is_untouched():
    with OpenAICompatServer({MODEL: lambda messages: 'a blue fox'}) as server, _client(server, 5.0) as client:
        reply = client.post('/chat/completions', json=CHAT)
    assert reply.json()['choices'][0]['message']['content'] == 'a blue fox'


def test_stop_requests_cuts_a_request_in_flight_and_refuses_new_ones():
    plan = FaultPlan(drip=1.0, drip_interval_s=0.2, drip_seconds=60)
    failures: list[BaseException] = []
    with OpenAICompatServer({MODEL: needle_finder}, {MODEL: plan}, max_seconds=120) as server:
        client = _client(server, timeout=60.0)

        def send() -> None:
            try:
                client.post('/chat/completions', json=CHAT)
            except BaseException as exc:  # RequestsStopped is a KeyboardInterrupt
                failures.append(exc)

        worker = threading.Thread(target=send)
        worker.start()
        try:
            assert server.wait_for_requests(1)
            stop_requests()
            worker.join(timeout=30)
            assert not worker.is_alive()
            assert [type(exc) for exc in failures] == [RequestsStopped]
            with pytest.raises(RequestsStopped):
                client.post('/chat/completions', json=CHAT)
        finally:
            allow_requests()
            client.close()
