"""The one error type users see for bad configuration or input data."""

from __future__ import annotations


class NiahConfigError(Exception):
    """A parameter, corpus file or tokenizer is unusable.

    ``param`` names what is wrong (an ``extra_params`` key, ``local_path``, a corpus file, ...), so callers and
    tests can tell errors apart without parsing the message. Not a ValueError on purpose: pydantic would wrap a
    ValueError raised inside a validator and lose the parameter name.
    """

    def __init__(self, param: str, message: str) -> None:
        super().__init__(f'{param}: {message}')
        self.param = param
        self.detail = message


def quoted(value: object, *, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters: hostile input can be huge, so an error message quotes its start."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + '...'


def exception_chain(exc: BaseException, *, limit: int | None = None) -> list[BaseException]:
    """``exc`` and what it was raised from or during (``__cause__``, else ``__context__``), outermost first, each once;
    at most ``limit`` links."""
    chain: list[BaseException] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and (limit is None or len(chain) < limit):
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain
