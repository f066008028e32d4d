"""The routing key: keeps every prompt of one prefix group on one replica behind a router.

Prompts of a subset that start at the same corpus point share their text up to their first needle (ordering.py).
A replica caches the prefix it computed; the saving survives many replicas only if the group's prompts reach the
replica that holds it. Routers pick a replica from a request key with their sticky / consistent-hash policies, and
read it from these headers (their docs and source):

- ``X-Session-ID``: vllm-router ``--policy consistent_hash`` (its first choice; it also reads ``X-User-ID``, the
  body's ``user`` and ``session_params.session_id``, and else hashes the whole body, which splits a group).
- ``X-SMG-Routing-Key``: sglang-router / SGLang Model Gateway (SMG) ``--policy consistent_hashing`` and ``manual``.

A server without a router ignores headers it does not know, so the key is sent by default (``routing_key_header:
on``). A custom header name serves other balancers (an Envoy/nginx hash on a header); ``off`` sends nothing.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    'ROUTER_KEY_HEADERS',
    'ROUTING_KEY_CHOICES',
    'check_routing_key_header',
    'routing_headers',
    'routing_key',
]

# What ``routing_key_header: on`` sends: one header per router family named above.
ROUTER_KEY_HEADERS = ('X-Session-ID', 'X-SMG-Routing-Key')
ROUTING_KEY_CHOICES = "'on' (headers " + ', '.join(ROUTER_KEY_HEADERS) + "), 'off', or a custom header name"

# An HTTP field name is an RFC 9110 token; 64 characters is beyond any real header name.
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}")
# Headers the HTTP client or the API owns: a key sent in one of them would break the request or leak into auth.
_RESERVED_HEADERS = frozenset(
    name.lower()
    for name in (
        'Authorization',
        'Connection',
        'Content-Encoding',
        'Content-Length',
        'Content-Type',
        'Cookie',
        'Host',
        'Proxy-Authorization',
        'Transfer-Encoding',
        'Upgrade',
        'User-Agent',
        'X-Api-Key',
        'Api-Key',
    )
)


def check_routing_key_header(value: Any) -> str:
    """The setting as ``'on'``, ``'off'`` or a header name; ValueError says what is allowed.

    YAML reads a bare ``on`` / ``off`` as a boolean, so True and False are taken for them.
    """
    if isinstance(value, bool):
        return 'on' if value else 'off'
    if not isinstance(value, str):
        raise ValueError(f'must be {ROUTING_KEY_CHOICES}')
    text = value.strip()
    if text.lower() in ('on', 'off'):
        return text.lower()
    if not _HEADER_NAME.fullmatch(text):
        raise ValueError(f"must be {ROUTING_KEY_CHOICES}; a header name is 1-64 letters, digits or !#$%&'*+.^_`|~-")
    if text.lower() in _RESERVED_HEADERS:
        raise ValueError(f'{text!r} is a header the HTTP client or the API needs; name another header')
    return text


def routing_key(subset: str, start_token: int) -> str:
    """The key of a prefix group: the same for every length and depth that shares the haystack's start.

    A group is (subset, haystack start); ``repeat`` picks the start, so different repeats are different groups.
    Subset names are ASCII (params.SUBSET_NAME_RULE), so the key is a valid header value as is, and it stays the
    same across runs: a second model or a resumed run finds the same replica warm.
    """
    return f'niah-{subset}-{int(start_token)}'


def routing_headers(setting: str, key: str) -> dict[str, str]:
    """Headers that carry ``key`` for ``setting`` (a value ``check_routing_key_header`` returned)."""
    if setting == 'off':
        return {}
    names = ROUTER_KEY_HEADERS if setting == 'on' else (setting,)
    return dict.fromkeys(names, key)
