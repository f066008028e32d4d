"""A simulated model for the test server: it finds the needle (as :func:`needle_finder`) with a probability that
falls with the prompt's length beyond a limit and dips at middle depths, and otherwise answers that it cannot tell.
Deterministic: the roll is a hash of the seed and the prompt, so the same prompt always gets the same answer."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass

from .responders import message_text, needle_finder
from .wire import approx_tokens

__all__ = ['SimulatedModel']

WRONG_ANSWER = 'I cannot tell from the document.'


@dataclass(frozen=True)
class SimulatedModel:
    """``top`` accuracy up to ``limit`` prompt tokens (the server's approximate count), falling linearly to ``floor``
    over ``fall`` tokens beyond it; middle depths lose up to ``dip`` of it."""

    limit: int
    fall: int
    top: float = 1.0
    floor: float = 0.0
    dip: float = 0.0
    seed: int = 0

    def probability(self, tokens: int, depth: float) -> float:
        beyond = max(0.0, (tokens - self.limit) / self.fall)
        base = self.top - (self.top - self.floor) * min(1.0, beyond)
        return base * (1.0 - self.dip * math.exp(-(((depth - 0.5) / 0.2) ** 2)))

    def __call__(self, messages: list[dict]) -> str:
        text = '\n'.join(message_text(m) for m in messages if isinstance(m, Mapping))
        found = needle_finder(messages)
        at = text.find(found) if found else -1
        depth = at / len(text) if at >= 0 and text else 0.5
        digest = hashlib.sha256(f'{self.seed}\0{text}'.encode()).digest()
        roll = int.from_bytes(digest[:8], 'big') / 2**64
        return found if roll < self.probability(approx_tokens(text), depth) else WRONG_ANSWER
