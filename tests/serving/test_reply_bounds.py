"""A reply's size is bounded before it is parsed: the deadline transport reads at most ``max_reply_bytes`` of body,
refuses a compressed body and a JSON reply with more choices than asked for, all as the library's
RemoteProtocolError; what a run keeps of a reply's text is cut with a marker. A real server on 127.0.0.1 (the test
server's 'huge_reply' fault, sent in chunks), a real httpx client.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from evalscope_niah.params.limits import LimitsParams
from evalscope_niah.serving.deadline import deadline_transport
from evalscope_niah.serving.reply_bounds import (
    DEFAULT_MAX_REPLY_BYTES,
    MAX_KEPT_REPLY_CHARS,
    MIN_MAX_REPLY_BYTES,
    ReplyChoices,
    ReplyTooLarge,
    kept_text,
    whole_text,
)
from evalscope_niah.testing.openai_server import FaultPlan, OpenAICompatServer, needle_finder

MODEL = 'huge-model'
CHAT = {'model': MODEL, 'messages': [{'role': 'user', 'content': 'The needle is: a blue fox.\nWhat is the needle?'}]}
CAP = 1 << 20


def _post(server: OpenAICompatServer, **bounds: int) -> httpx.Response:
    transport = deadline_transport(httpx.HTTPTransport(), **{'max_reply_bytes': CAP, **bounds})
    with httpx.Client(transport=transport, base_url=server.base_url, timeout=30) as client:
        return client.post('/chat/completions', json=CHAT)


@pytest.mark.parametrize('shape', ['content', 'choices'])
@pytest.mark.parametrize('declared', [False, True], ids=['chunked', 'declared'])
def test_a_reply_over_the_cap_is_refused_unparsed(shape: str, declared: bool) -> None:
    # 50 MB: the client stops at the cap (chunked: while counting; declared: from the header, unread).
    plan = FaultPlan(huge_reply=1.0, huge_bytes=50_000_000, huge_shape=shape, huge_declared=declared)
    refused = pytest.raises(httpx.RemoteProtocolError, match=r'over max_reply_bytes \(1,048,576\)')
    with OpenAICompatServer({MODEL: needle_finder}, {MODEL: plan}, max_seconds=60) as server, refused as raised:
        _post(server)
    assert isinstance(raised.value, ReplyTooLarge)
    assert ('declares 49,9' in str(raised.value) or 'declares 50,000,000' in str(raised.value)) is declared


def test_more_choices_than_asked_for_are_refused_unparsed() -> None:
    plan = FaultPlan(huge_reply=1.0, huge_bytes=200_000, huge_shape='choices')  # ~1,000 choices, under the cap
    with OpenAICompatServer({MODEL: needle_finder}, {MODEL: plan}, max_seconds=60) as server:
        with pytest.raises(ReplyTooLarge, match=r'holds 1,\d{3} choices, 1 asked for'):
            _post(server)
        with pytest.raises(ReplyTooLarge, match=r'3 asked for'):
            _post(server, max_choices=3)


@pytest.mark.parametrize('label', ['text/event-stream', 'text/plain', 'application/octet-stream'])
def test_the_choices_cap_holds_whatever_the_reply_is_labelled(label: str) -> None:
    # The SDK parses a non-streamed reply as JSON whatever its Content-Type: 40,000 choices labelled as an event
    # stream were parsed and scored. The cap applies to what the client parses.
    plan = FaultPlan(huge_reply=1.0, huge_bytes=5_300_000, huge_shape='choices', huge_content_type=label)
    refused = pytest.raises(ReplyTooLarge, match=r'holds 40,\d{3} choices, 1 asked for')
    with OpenAICompatServer({MODEL: needle_finder}, {MODEL: plan}, max_seconds=60) as server, refused:
        _post(server, max_reply_bytes=16 * CAP)


class _Streamed(BaseHTTPRequestHandler):
    """Answers a stream of server-sent events whose second event is ``server.event`` (bytes); its first 1,000 bytes
    in 7-byte chunks (CRLF split across two chunks too)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get('Content-Length', 0)))
        chunk = b'{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"fox"}}]}'
        body = b'data: ' + chunk + b'\r\n\r\n' + self.server.event + b'data: [DONE]\r\n\r\n'  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header('Content-Type', 'text/event-stream')
        self.send_header('Transfer-Encoding', 'chunked')
        self.end_headers()
        starts = [*range(0, min(len(body), 1000), 7), *range(1001, len(body), 1 << 16)]
        for start, end in zip(starts, [*starts[1:], len(body)], strict=True):
            piece = body[start:end]
            self.wfile.write(f'{len(piece):X}\r\n'.encode() + piece + b'\r\n')
        self.wfile.write(b'0\r\n\r\n')

    def log_message(self, *args: object) -> None:
        pass


def _streamed(event: bytes) -> httpx.Response:
    server = ThreadingHTTPServer(('127.0.0.1', 0), _Streamed)
    server.event = event  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        transport = deadline_transport(httpx.HTTPTransport(), max_reply_bytes=4 * CAP)
        with httpx.Client(transport=transport, timeout=10) as client:
            return client.post(f'http://127.0.0.1:{server.server_address[1]}/v1/chat/completions', json=CHAT)
    finally:
        server.shutdown()
        server.server_close()


_CHOICE = b'{"index":0,"delta":{"content":"x"}}'


@pytest.mark.parametrize(
    'event',
    [
        b'data: {"choices":[' + b','.join([_CHOICE] * 40_000) + b']}\r\n\r\n',  # one event, 40,000 choices
        b'data: {"choices":[{"index":39999,"delta":{"content":"x"}}]}\n\n',  # gathered by index: as many
        b'data: {"choices":\ndata: [' + b','.join([_CHOICE] * 3) + b']}\r\r',  # data lines joined, CR endings
    ],
    ids=['choices', 'index', 'split-data'],
)
def test_a_streamed_event_with_more_choices_than_asked_is_refused(event: bytes) -> None:
    with pytest.raises(ReplyTooLarge, match=r'holds (40,000|3) choices, 1 asked for'):
        _streamed(event)


def test_an_honest_stream_passes_through() -> None:
    body = _streamed(b': a comment\n\nevent: ping\ndata: {"choices":[]}\n\n').text
    assert body.count('data: ') == 3 and '"fox"' in body


def test_reply_choices_passes_events_on_as_they_come_and_holds_json_whole() -> None:
    events = ReplyChoices(1)
    assert events.feed(b'  \n') == (b'', None)  # undecided: only whitespace so far
    assert events.feed(b'data: {"choices":[]}\n\n') == (b'  \ndata: {"choices":[]}\n\n', None)
    assert events.feed(b'data: {"choices":[{},{}]}') == (b'data: {"choices":[{},{}]}', None)  # not ended yet
    assert events.finish() == (b'', 2)  # the last event, ended by the body's end
    held = ReplyChoices(2)
    assert held.feed(b'{"choices":[{},') == (b'', None)
    assert held.feed(b'{}]}') == (b'', None)
    assert held.finish() == (b'{"choices":[{},{}]}', None)


def test_a_reply_under_the_cap_is_untouched() -> None:
    plan = FaultPlan(huge_reply=1.0, huge_bytes=CAP - 1000)  # one answer just under the cap: read whole
    with OpenAICompatServer({MODEL: needle_finder}, {MODEL: plan}, max_seconds=60) as server:
        huge = _post(server).json()
    content = huge['choices'][0]['message']['content']
    assert content.startswith('The needle is: a blue fox.') and len(content) > CAP - 2000
    assert set(content[-100:]) == {'x'}
    with OpenAICompatServer({MODEL: needle_finder}, max_seconds=60) as server:
        reply = _post(server)
    assert reply.json()['choices'][0]['message']['content'].startswith('The needle is: a blue fox.')
    assert len(reply.json()['choices']) == 1


class _Gzipped(BaseHTTPRequestHandler):
    """Answers a gzip body whatever the request's Accept-Encoding (a 1 KB bomb would decode to gigabytes)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get('Content-Length', 0)))
        self.server.accept_encoding = self.headers.get('Accept-Encoding')  # type: ignore[attr-defined]
        body = gzip.compress(b'{"choices": []}')
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Encoding', 'gzip')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def gzip_server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(('127.0.0.1', 0), _Gzipped)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_compressed_reply_is_refused_unread(gzip_server: ThreadingHTTPServer) -> None:
    transport = deadline_transport(httpx.HTTPTransport())
    url = f'http://127.0.0.1:{gzip_server.server_address[1]}/v1/chat/completions'
    refused = pytest.raises(ReplyTooLarge, match="'gzip'-compressed reply though the request asked for none")
    with httpx.Client(transport=transport, timeout=10) as client, refused:
        client.post(url, json=CHAT)
    assert gzip_server.accept_encoding == 'identity'  # type: ignore[attr-defined]


def test_a_long_text_is_kept_head_and_tail_with_a_marker() -> None:
    text = 'the answer first ' + 'y' * 52_428_800 + ' the answer last'
    kept = kept_text(text)
    assert len(kept) < MAX_KEPT_REPLY_CHARS + 100
    assert kept.startswith('the answer first') and kept.endswith('the answer last')
    assert f'…[cut: {len(text):,} chars, kept {MAX_KEPT_REPLY_CHARS:,}]…' in kept
    assert kept_text(kept) == kept  # cut once only
    assert kept_text('short') == 'short'


@pytest.mark.parametrize('value', [MIN_MAX_REPLY_BYTES - 1, 0, -5, 1.5, '16MB', True])
def test_a_bad_max_reply_bytes_is_one_clear_error(value: object) -> None:
    with pytest.raises(ValueError, match=r'max_reply_bytes\n.*(at least 65,536|whole number of bytes)'):
        LimitsParams(max_reply_bytes=value)
    assert LimitsParams().max_reply_bytes == DEFAULT_MAX_REPLY_BYTES


def test_a_streamed_reply_is_counted_as_it_arrives() -> None:
    # SSE events pass through as they come (not held whole); the cap still counts them. 300 bytes: a few events.
    streamed = {**CHAT, 'stream': True}
    with OpenAICompatServer({MODEL: needle_finder}, max_seconds=60) as server:
        for cap, refused in ((CAP, False), (300, True)):
            transport = deadline_transport(httpx.HTTPTransport(), max_reply_bytes=cap)
            with httpx.Client(transport=transport, base_url=server.base_url, timeout=30) as client:
                if refused:
                    with pytest.raises(ReplyTooLarge, match=r'over max_reply_bytes \(300\)'):
                        client.post('/chat/completions', json=streamed)
                else:
                    body = client.post('/chat/completions', json=streamed).text
                    assert body.count('data: ') >= 3 and 'fox' in body and body.rstrip().endswith('[DONE]')


def test_whole_text_replaces_each_lone_surrogate_and_counts_them() -> None:
    assert whole_text('plain') == ('plain', 0)
    assert whole_text('🙂 中文') == ('🙂 中文', 0)  # JSON's escaped pairs decode to one character: nothing to replace
    assert whole_text('a\ud83db\udc00\udfff') == ('a\ufffdb\ufffd\ufffd', 3)
    repaired, _ = whole_text('x\ud800' * 1000)
    repaired.encode('utf-8')  # what any UTF-8 file needs
