"""Why a judge call brought no reply, named for the person who must fix it: the kind of failure, the judge's URL and
the fix. A reply that came and could not be read is no call failure: qualification.py calls that unparsable.

Pure: the integration layer (integration/judge_errors.py) decides the kind from the exception EvalScope raised.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

__all__ = ['FATAL_FAILURE_KINDS', 'JudgeCallFailure', 'JudgeFailureKind', 'judge_call_failure', 'shown_url']

JudgeFailureKind = Literal['unreachable', 'timeout', 'rejected_key', 'model_not_found', 'http_error', 'bad_reply']

# What each kind is, as the console line, the JSON and the error message name it.
_WHAT: dict[str, str] = {
    'unreachable': 'judge server unreachable',
    'timeout': 'judge server did not answer in time',
    'rejected_key': 'judge server rejected the API key',
    'model_not_found': 'judge model not found',
    'http_error': 'judge server answered with an error',
    'bad_reply': 'judge server sent no usable reply',
}

# Kinds that fail every call alike (the address, the key, the model name are the same for all): the judge check
# stops at the first one instead of asking the rest of its set, and reports it as the reason.
FATAL_FAILURE_KINDS: frozenset[str] = frozenset({'unreachable', 'timeout', 'rejected_key', 'model_not_found'})


@dataclass(frozen=True)
class JudgeCallFailure:
    """A judge call that brought no reply: what failed, where, and what fixes it."""

    kind: JudgeFailureKind
    url: str  # the judge's api_url, without credentials
    detail: str  # 'connection refused', 'HTTP 401', ...
    fix: str

    def describe(self) -> str:
        """'judge server unreachable at http://127.0.0.1:9/v1 (connection refused)'."""
        return f'{_WHAT[self.kind]} at {self.url} ({self.detail})'

    def to_dict(self) -> dict[str, str]:
        return {
            'kind': self.kind,  # 'unreachable', 'timeout', 'rejected_key', 'model_not_found', ...
            'url': self.url,  # the judge's api_url, without credentials
            'detail': self.detail,  # what the call got: 'connection refused', 'HTTP 401', ...
            'fix': self.fix,  # what to change, in words
            'text': self.describe(),  # the line the console printed: 'judge server unreachable at ... (...)'
        }


def judge_call_failure(kind: JudgeFailureKind, *, url: str, model: str, detail: str) -> JudgeCallFailure:
    """The failure of ``kind`` with the fix that belongs to it."""
    url = shown_url(url)
    fixes = {
        'unreachable': (
            f"check the judge's api_url ({url}): a server must be running there and reachable from this machine, "
            "with the path that ends before /chat/completions (usually '/v1')"
        ),
        'timeout': (
            "check that the judge server is up and not overloaded, or give it longer: the judge's "
            "generation_config {'timeout': seconds}"
        ),
        'rejected_key': "set the judge's api_key to a key this server accepts (judge={'models': [{'api_key': ...}]})",
        'model_not_found': (
            f"set the judge's model_id to a model this server serves (not {model!r}; GET {url}/models lists them), "
            'or correct api_url if it points at the wrong server or path'
        ),
        'http_error': 'check the judge server (its message is above); a server fault is retried, then reported',
        'bad_reply': 'check the judge server: it answered, but without a usable reply',
    }
    return JudgeCallFailure(kind=kind, url=url, detail=detail, fix=fixes[kind])


def shown_url(url: str) -> str:
    """``url`` without user name, password, query or fragment: safe to print and store."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return '<unparsable url>'
    host = parts.hostname or ''
    if ':' in host:  # an IPv6 address keeps its brackets
        host = f'[{host}]'
    if parts.port is not None:
        host = f'{host}:{parts.port}'
    return urlunsplit((parts.scheme, host, parts.path, '', ''))
