"""What sample generation needs from a tokenizer (:class:`Tokenizer`), apart from any way of loading one: the loaders
(``tokenization``), the server's tokenize API (``serving.endpoint``) and the on-disk caches (``token_cache``) meet
here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # annotations only: a warm run builds its samples without importing numpy
    import numpy as np

__all__ = ['Message', 'Tokenizer']

Message = dict[str, str]


class Tokenizer(Protocol):
    """What sample generation needs from a tokenizer."""

    name: str
    fingerprint: str  # changes whenever token ids could change: keys the on-disk cache

    def encode(self, text: str) -> list[int]:
        """Token ids, never with special tokens (BOS/EOS) added."""

    def count(self, text: str) -> int:
        """Number of tokens of ``text`` as a model server would count the rendered prompt."""

    def boundaries(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(char offsets, token indices) of every token that starts on a character boundary, plus the end."""

    def boundaries_many(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """``boundaries`` of each text (a tokenizer may encode them in parallel or in one request)."""

    def render_chat(self, messages: Sequence[Message]) -> str:
        """The prompt text the model reads: the chat template with the generation prompt, or plain text."""
