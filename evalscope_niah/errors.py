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
