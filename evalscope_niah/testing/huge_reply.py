"""The body of a 'huge_reply' fault: a chat reply of any size, made piece by piece so the server never holds it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .faults import FaultPlan

__all__ = ['huge_body', 'send_huge']

_CHUNK = 1 << 20


def send_huge(handler: Any, completion: dict, plan: FaultPlan) -> None:
    """Answer ``handler``'s request (the test server's) with ``plan.huge_bytes`` of body, chunked unless
    ``plan.huge_declared``; stops when the client stops reading or the server stops."""
    size, pieces = huge_body(completion, plan.huge_shape, plan.huge_bytes)
    handler.send_response(200)
    handler.send_header('Content-Type', plan.huge_content_type)
    handler.send_header(*(('Content-Length', str(size)) if plan.huge_declared else ('Transfer-Encoding', 'chunked')))
    handler.end_headers()
    handler.close_connection = True
    send = handler.wfile.write if plan.huge_declared else handler._send_chunk
    try:
        for piece in pieces:
            if handler.owner._stopping.is_set():
                break
            send(piece)
        if not plan.huge_declared:
            handler.wfile.write(b'0\r\n\r\n')
        handler.wfile.flush()
    except OSError:  # the client stopped reading: what the fault is for
        pass


def huge_body(completion: dict, shape: str, size: int) -> tuple[int, Iterator[bytes]]:
    """(exact byte count, the pieces) of ``completion`` grown to about ``size`` bytes: 'content' pads the first
    choice's answer with 'x', 'choices' repeats the first choice (10**6 choices are 188 MB)."""
    head, tail = _frame(completion, shape)
    unit = b'x' if shape == 'content' else b',' + json.dumps(completion['choices'][0]).encode()
    fill = max(0, size - len(head) - len(tail)) // len(unit) * len(unit)
    return len(head) + fill + len(tail), _pieces(head, unit, fill, tail)


def _pieces(head: bytes, unit: bytes, fill: int, tail: bytes) -> Iterator[bytes]:
    yield head
    chunk = unit * max(1, _CHUNK // len(unit))
    while fill > 0:
        yield chunk[:fill]
        fill -= min(fill, len(chunk))
    yield tail


def _frame(completion: dict, shape: str) -> tuple[bytes, bytes]:
    """The reply's JSON before and after the filling bytes: inside the answer's string, or after the first choice."""
    completion = json.loads(json.dumps(completion))  # a copy: the caller's reply is left as it was
    marker = '\x00huge\x00'  # escaped by json.dumps, so it cannot occur in the reply's own JSON text
    if shape == 'content':
        completion['choices'][0]['message']['content'] += marker
        escaped = json.dumps(marker)[1:-1]
    else:
        completion['choices'].append(marker)
        escaped = ', ' + json.dumps(marker)
    head, _, tail = json.dumps(completion, ensure_ascii=False).partition(escaped)
    return head.encode('utf-8'), tail.encode('utf-8')
