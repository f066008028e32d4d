"""What a failed judge call's exception means: EvalScope lets the OpenAI client's exception through (after its own
retries, none for a 4xx), and this names it as a ``JudgeCallFailure`` (kind, URL, fix) instead of an empty reply."""

from __future__ import annotations

import socket
import sys
from typing import Any

from ..errors import exception_chain
from ..judging.judge_failures import JudgeCallFailure, judge_call_failure
from .replies import CutReplyError, EmptyReplyError, UnreadableReplyError

__all__ = ['judge_call_error']

# Links of an exception's chain that are read: enough for the SDK's and EvalScope's wrapping, bounded.
_MAX_CHAIN = 10


def judge_call_error(exc: BaseException, *, url: str, model: str) -> JudgeCallFailure:
    """The failure ``exc`` stands for, for the judge ``model`` at ``url``."""
    status = getattr(exc, 'status_code', None)
    if isinstance(status, int):
        if status in (401, 403):
            # The server's message is left out: some echo part of the key.
            return judge_call_failure('rejected_key', url=url, model=model, detail=f'HTTP {status}')
        if status == 404:
            return judge_call_failure('model_not_found', url=url, model=model, detail=_http_detail(exc, status))
        return judge_call_failure('http_error', url=url, model=model, detail=_http_detail(exc, status))
    if isinstance(exc, _openai_errors('APITimeoutError')) or _caused_by(exc, TimeoutError):
        return judge_call_failure('timeout', url=url, model=model, detail='no reply before the timeout')
    if isinstance(exc, _openai_errors('APIConnectionError')) or _caused_by(exc, ConnectionError, socket.gaierror):
        return judge_call_failure('unreachable', url=url, model=model, detail=_connection_detail(exc))
    if isinstance(exc, (EmptyReplyError, CutReplyError, UnreadableReplyError)):
        return judge_call_failure('bad_reply', url=url, model=model, detail=_cut(str(exc)))
    return judge_call_failure('http_error', url=url, model=model, detail=f'{type(exc).__name__}: {_cut(str(exc))}')


def _openai_errors(name: str) -> tuple[type[BaseException], ...]:
    # Read from sys.modules, never imported here: importing openai cost every `import evalscope` a quarter second
    # (this module loads when the benchmark registers), and an exception of openai's can only exist once the
    # client that raises it has imported openai.
    openai = sys.modules.get('openai')
    error = getattr(openai, name, None)
    return (error,) if isinstance(error, type) and issubclass(error, BaseException) else ()


def _caused_by(exc: BaseException, *types: type[BaseException]) -> bool:
    return any(isinstance(link, types) for link in exception_chain(exc, limit=_MAX_CHAIN))


def _connection_detail(exc: BaseException) -> str:
    chain = exception_chain(exc, limit=_MAX_CHAIN)
    if any(isinstance(link, ConnectionRefusedError) for link in chain):
        return 'connection refused: nothing listens at that address and port'
    if any(isinstance(link, socket.gaierror) for link in chain):
        return 'host name not found (DNS)'
    return f'could not connect: {_cut(str(chain[-1]))}'


def _http_detail(exc: Any, status: int) -> str:
    body = getattr(exc, 'body', None)
    message = body.get('message') if isinstance(body, dict) else None
    return f'HTTP {status}: {_cut(str(message))}' if message else f'HTTP {status}'


def _cut(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + '...'
