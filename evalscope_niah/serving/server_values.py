"""What a model server says about itself or a reply is untrusted input: checked here, where it enters a run.

A broken or hostile server can report a token count or a context window as a negative, a string, a bool, NaN or
10**15. Token counts of a reply are only recorded, never needed to score it: an implausible one is dropped from the
record (one warning per field and run) and the sample is scored as usual. A context window decides which lengths
may be sent: one that cannot be trusted stops the run before any model request.
"""

from __future__ import annotations

import threading
from typing import Any

from ..errors import NiahConfigError
from ..escaping import inert_logger

logger = inert_logger(__name__)

# Ten times the largest context window any served model offers today (10M tokens): above it a count is a lie, and
# kept it would dominate every served/planned ratio and median it enters.
MAX_PLAUSIBLE_TOKENS = 100_000_000
# A hostile value may be megabytes long: messages show this much of its repr.
SHOWN_CHARS = 80


def shown(value: Any) -> str:
    """``repr(value)`` cut to SHOWN_CHARS characters (with '...' when cut): safe to put in a message."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + '...'


def plausible_tokens(value: Any, *, minimum: int = 0) -> int | None:
    """``value`` when it is an int (not a bool) from ``minimum`` to MAX_PLAUSIBLE_TOKENS, else None."""
    if isinstance(value, int) and not isinstance(value, bool) and minimum <= value <= MAX_PLAUSIBLE_TOKENS:
        return value
    return None


class ServerValues:
    """The token counts one run takes from one server: implausible ones dropped, each field warned about once.

    Thread-safe: EvalScope scores samples in worker threads.
    """

    def __init__(self, server: str) -> None:
        self.server = server
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    def tokens(self, field: str, value: Any) -> int | None:
        """``value`` when plausible (see ``plausible_tokens``); None (with one warning per field) otherwise."""
        if value is None or plausible_tokens(value) is not None:
            return value
        with self._lock:
            first = field not in self._warned
            self._warned.add(field)
        if first:
            logger.warning(
                'needle_haystack: %s reported %s = %s, not a token count (an int from 0 to %d); dropped from the '
                'results (this field is not warned about again in this run)',
                self.server,
                field,
                shown(value),
                MAX_PLAUSIBLE_TOKENS,
            )
        return None


def trusted_window(value: Any, *, source: str) -> int | None:
    """A context window the server reported at ``source`` (None: it said nothing). A value that is there but is
    no plausible window (an int from 1 to MAX_PLAUSIBLE_TOKENS) raises: the lengths cannot be checked against it,
    and a run sent past a wrong window wastes every request on context-overflow errors."""
    if value is None:
        return None
    window = plausible_tokens(value, minimum=1)
    if window is None:
        raise NiahConfigError(
            'api_url',
            f'{source} gives the context window as {shown(value)}, not a token count (an int from 1 to '
            f'{MAX_PLAUSIBLE_TOKENS}), so no length can be checked against it; nothing was sent to the model. Fix '
            "the server's window setting (vLLM --max-model-len, llama.cpp --ctx-size), or run against another",
        )
    return window
