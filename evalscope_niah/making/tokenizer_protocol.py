"""What sample generation needs from a tokenizer (:class:`Tokenizer`), apart from any way of loading one: the loaders
(``tokenization``), the server's tokenize API (``serving.endpoint``) and the on-disk caches (``token_cache``) meet
here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

__all__ = ['Boundaries', 'Message', 'Tokenizer']

Message = dict[str, str]
# (char offsets, token indices): any sequences of ints. The fast tokenizer gives ``array.array`` (building samples
# never imports numpy: its import was a tenth of a cold run), others may give numpy arrays.
Boundaries = tuple[Sequence[int], Sequence[int]]


class Tokenizer(Protocol):
    """What sample generation needs from a tokenizer."""

    name: str
    fingerprint: str  # changes whenever token ids could change: keys the on-disk cache

    def encode(self, text: str) -> list[int]:
        """Token ids, never with special tokens (BOS/EOS) added."""

    def count(self, text: str) -> int:
        """Number of tokens of ``text`` as a model server would count the rendered prompt."""

    def boundaries(self, text: str) -> Boundaries:
        """(char offsets, token indices) of every token that starts on a character boundary, plus the end."""

    def boundaries_many(self, texts: Sequence[str]) -> list[Boundaries]:
        """``boundaries`` of each text (a tokenizer may encode them in parallel or in one request)."""

    def render_chat(self, messages: Sequence[Message]) -> str:
        """The prompt text the model reads: the chat template with the generation prompt, or plain text."""
