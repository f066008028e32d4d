"""The run's secrets, read from EvalScope's configuration, and model calls whose server text is redacted of them.

EvalScope wraps every secret of a TaskConfig in pydantic's SecretStr (the model's and each judge's api_key, keys in
model_args, Authorization-like extra_headers) and masks it in the config it dumps; the text a server sends back
is not masked. ``redacting`` makes a call's reply and its exceptions carry no secret before EvalScope or we store
or log them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from evalscope.api.model import ModelOutput
from pydantic import BaseModel, SecretStr

from ..escaping import inert_logger
from ..serving.redact import NO_SECRETS, Redactor

__all__ = ['configured_secrets', 'redacting', 'run_redactor']

T = TypeVar('T')

# Nesting of TaskConfig -> judge -> models -> generation_config -> extra_headers is 5 deep; a bound stops a cycle.
_MAX_DEPTH = 12


def configured_secrets(config: Any) -> list[str]:
    """Every SecretStr value in ``config`` (a TaskConfig, or any pydantic model, dict or list): a header value such
    as 'Bearer <token>' also gives its token."""
    found: list[str] = []
    _collect(config, found, depth=0)
    tokens = [value.split()[-1] for value in found if len(value.split()) > 1]
    return [*found, *tokens]


def _collect(value: Any, found: list[str], *, depth: int) -> None:
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, SecretStr):
        found.append(value.get_secret_value())
    elif isinstance(value, BaseModel):
        for item in value.__dict__.values():
            _collect(item, found, depth=depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            _collect(item, found, depth=depth + 1)
    elif isinstance(value, list | tuple | set):
        for item in value:
            _collect(item, found, depth=depth + 1)


def run_redactor(task_config: Any) -> Redactor:
    """The redactor of a run's configured secrets (none without a TaskConfig); from then on EvalScope's logger prints
    them redacted too (with the secrets of earlier runs in this process), as it logs a retried call's error before
    the call returns to us; and inert (`inert.inert_logger`), secrets or not."""
    # EvalScope logs what servers sent (a retried call's error body): shown, never obeyed, on its console and in
    # eval_log.log, from the first run on (its logger does not propagate, so it takes the filter itself).
    inert_logger(_LOGGERS[0])
    if task_config is None:
        return NO_SECRETS
    secrets = configured_secrets(task_config)
    _redact_logs(secrets)
    return Redactor(secrets)


def redacting(call: Callable[..., T], redactor: Redactor) -> Callable[..., T]:
    """``call`` whose ModelOutput text and whose exceptions hold no secret of ``redactor``."""
    if not redactor:
        return call

    def redacted_call(*args: Any, **kwargs: Any) -> T:
        try:
            output = call(*args, **kwargs)
        except Exception as exc:
            redactor.exception(exc)  # the same exception, redacted in place: type and traceback kept
            raise
        if isinstance(output, ModelOutput):
            _redact_output(output, redactor)
        return output

    return redacted_call


def _redact_output(output: ModelOutput, redactor: Redactor) -> None:
    """A reply quoting a secret (EvalScope turns some 400 errors into a reply holding the error text) is stored
    with the secret replaced; any other reply is left exactly as it came."""
    for choice in output.choices:
        message = choice.message
        if isinstance(message.content, str):
            _redact_field(message, 'content', redactor)
            continue
        for part in message.content:
            for name in ('text', 'reasoning'):
                _redact_field(part, name, redactor)
    _redact_field(output, 'error', redactor)


def _redact_field(holder: Any, name: str, redactor: Redactor) -> None:
    """Set only when the text held a secret: a field that held none is left untouched (not even re-assigned)."""
    text = getattr(holder, name, None)
    if isinstance(text, str) and text:
        redacted = redactor.text(text)
        if redacted != text:
            setattr(holder, name, redacted)


# EvalScope logs a retried call's error (the body a server sent, maybe quoting the key) before the call returns to
# us; its logger does not propagate, so a filter on it redacts what reaches its console and eval_log.log handlers.
_LOGGERS = ('evalscope',)  # ours redact at the source (a logger's filter does not see its children's records)


class _LogRedaction(logging.Filter):
    """One filter per process; it redacts every secret of every run started in it (more redaction is harmless)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self._redactor = NO_SECRETS

    def add(self, secrets: list[str]) -> None:
        with self._lock:
            self._secrets.update(secrets)
            self._redactor = Redactor(self._secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        redactor = self._redactor
        if redactor:
            message = record.getMessage()
            redacted = redactor.text(message)
            if redacted != message:
                record.msg, record.args = redacted, ()
        return True


_LOG_REDACTION = _LogRedaction()


def _redact_logs(secrets: list[str]) -> None:
    _LOG_REDACTION.add(secrets)
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        if _LOG_REDACTION not in logger.filters:
            logger.addFilter(_LOG_REDACTION)
