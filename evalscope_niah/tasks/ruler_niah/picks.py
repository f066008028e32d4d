"""RULER's keys, values, needles and generated haystacks, picked from a seeded random source.

Keys and values are picked as RULER picks them: a word is an adjective-noun pair of ``words.py``, a number has seven
digits (1000000-9999999), a uuid is a version-4 UUID of 128 random bits. A needle reads as RULER's needle template;
the noise haystack repeats RULER's noise sentences line after line; the needle haystack is lines of needles about
other keys (RULER's multikey_2/3)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable

from .words import ADJECTIVES, NOUNS

# RULER's needle and noise line (the benchmark's format: a model is compared on the same sentences).
NEEDLE_TEMPLATE = 'One of the special magic {type_needle_v} for {key} is: {value}.'
NOISE_LINE = 'The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.'
# RULER's insertion depths for an essay haystack: 40 evenly spaced percents, rounded, picked without replacement.
RULER_DEPTHS = tuple(round(index * 100 / 39) for index in range(40))
# Tried before giving up on a key that is not yet in the haystack: collisions are rare (17k words, 9M numbers).
_MAX_TRIES = 1000


def _word(rng: random.Random) -> str:
    return f'{rng.choice(ADJECTIVES)}-{rng.choice(NOUNS)}'


def _number(rng: random.Random) -> str:
    return str(rng.randint(1_000_000, 9_999_999))


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


PICK: dict[str, Callable[[random.Random], str]] = {'words': _word, 'numbers': _number, 'uuids': _uuid}


def pick_distinct(kind: str, count: int, rng: random.Random, *, avoid: Callable[[str], bool]) -> list[str]:
    """``count`` distinct picks of ``kind`` for which ``avoid`` is false (a key already in the haystack would make
    the question ambiguous)."""
    found: list[str] = []
    for _ in range(_MAX_TRIES * count):
        if len(found) == count:
            break
        item = PICK[kind](rng)
        if item not in found and not avoid(item):
            found.append(item)
    if len(found) < count:
        raise RuntimeError(f'could not pick {count} distinct {kind} absent from the haystack')
    return found


def needle(type_needle_v: str, key: str, value: str) -> str:
    return NEEDLE_TEMPLATE.format(type_needle_v=type_needle_v, key=key, value=value)


def noise_haystack(lines: int) -> str:
    """RULER's noise haystack: its noise line repeated, one per line."""
    return '\n'.join([NOISE_LINE] * lines)


def needle_haystack(lines: int, *, type_needle_k: str, type_needle_v: str, seed: int) -> str:
    """RULER's needle haystack: lines of needles of the same form about random other keys."""
    rng = random.Random(seed)
    pick_key, pick_value = PICK[type_needle_k], PICK[type_needle_v]
    return '\n'.join(needle(type_needle_v, pick_key(rng), pick_value(rng)) for _ in range(lines))


def query_text(keys: list[str]) -> str:
    """RULER's list of asked keys: 'a', 'a, and b', 'a, b, and c'."""
    return ', '.join(keys[:-1]) + ', and ' + keys[-1] if len(keys) > 1 else keys[0]


def question(type_needle_v: str, keys: list[str], *, values_asked: int) -> str:
    """RULER's question, singular when one value is asked (its template's 'are all' -> 'is', 'numbers' ->
    'number')."""
    if values_asked == 1:
        return f'What is the special magic {type_needle_v[:-1]} for {keys[0]} mentioned in the provided text?'
    return f'What are all the special magic {type_needle_v} for {query_text(keys)} mentioned in the provided text?'
