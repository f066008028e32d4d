"""Secrets out of what we store and print: text that comes from a server (an error message, a judge's reply) can
quote the API key the request carried, and some servers do echo a rejected key. A ``Redactor`` built from the
run's configured secrets replaces each of them wherever server text enters our files and logs. No evalscope
import: integration/ collects the secrets from EvalScope's configuration.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

__all__ = ['MIN_SECRET_CHARS', 'NO_SECRETS', 'REDACTED', 'Redactor']

# Shorter values are not redacted: placeholders such as 'EMPTY' or 'x' are no secrets, and replacing every 'x' in
# an error message would make it unreadable. docs/en/guarantees.md.
MIN_SECRET_CHARS = 8
REDACTED = '[redacted secret]'
# Exception attributes that hold a copy of the message (openai's APIError: message and body; ours: detail).
_TEXT_ATTRIBUTES = ('message', 'body', 'detail', 'msg', 'reason', 'text')
# How far a chain of causes and contexts is followed.
_MAX_CHAIN = 16


class Redactor:
    """Replaces every configured secret (of at least ``MIN_SECRET_CHARS`` characters) with ``REDACTED``.

    Each secret is found verbatim (so also inside 'Bearer <key>') and as it reads once escaped by JSON, by
    Python's repr and by URL quoting, the forms an error message or a JSON body quoting a request takes.
    """

    def __init__(self, secrets: Iterable[str | None]) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if isinstance(secret, str) and len(secret.strip()) >= MIN_SECRET_CHARS:
                secret = secret.strip()
                forms.update({secret, json.dumps(secret)[1:-1], repr(secret)[1:-1], quote(secret, safe='')})
        # Longest first: a secret containing another is replaced whole.
        ordered = sorted(forms, key=lambda form: (-len(form), form))
        self._pattern = re.compile('|'.join(map(re.escape, ordered))) if ordered else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def text(self, text: str) -> str:
        """``text`` with every secret replaced."""
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(REDACTED, text)

    def value(self, value: Any) -> Any:
        """Strings redacted inside a JSON-like value (dicts, lists, tuples); anything else is returned as is."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.value(item) for item in value)
        return value

    def exception(self, exc: BaseException) -> BaseException:
        """Redact ``exc`` in place (its args, the attributes that copy its message, its causes and contexts) and
        return it: re-raised, the same exception keeps its type and traceback, and whatever logs or stores it later
        (EvalScope's error log, a review's error) shows no secret."""
        if self._pattern is None:
            return exc
        seen: set[int] = set()
        current: BaseException | None = exc
        pending: list[BaseException] = []
        while current is not None and len(seen) < _MAX_CHAIN:
            if id(current) not in seen:
                seen.add(id(current))
                self._redact_one(current)
                pending += [link for link in (current.__cause__, current.__context__) if link is not None]
            current = pending.pop() if pending else None
        return exc

    def _redact_one(self, exc: BaseException) -> None:
        args = self.value(exc.args)
        if args != exc.args:
            with contextlib.suppress(TypeError, AttributeError):  # an exception type whose args cannot be set
                exc.args = args
        for name in _TEXT_ATTRIBUTES:
            current = getattr(exc, name, None)
            if isinstance(current, str | dict | list | tuple):
                redacted = self.value(current)
                if redacted != current:
                    # A read-only property raises: its text came from args, redacted above.
                    with contextlib.suppress(TypeError, AttributeError):
                        setattr(exc, name, redacted)


NO_SECRETS = Redactor(())
