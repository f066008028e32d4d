"""The reasoning task's linked needles (OpenCompass CDME's multi-hop needles), shipped in ``chains.json``.

Every fact is invented, so a model can only answer from the haystack, never from what it learnt in training.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

from ...vocabulary import LANGUAGES, Language
from ..kit import check_language

CHAINS_FILE = Path(__file__).with_name('chains.json')


@dataclasses.dataclass(frozen=True)
class Chain:
    """Links that answer ``question`` only together; ``answer`` is a keyword from the last link."""

    id: str
    language: Language
    needles: tuple[str, ...]
    question: str
    answer: str
    reference: str


def reasoning_chains(language: Language) -> tuple[Chain, ...]:
    """The shipped chains of ``language``, in file order."""
    check_language(language)
    return _all_chains()[language]


def pick_chain(language: Language, *, index: int) -> Chain:
    """Chain ``index`` of ``language``, wrapping around so any sample number picks one."""
    chains = reasoning_chains(language)
    return chains[index % len(chains)]


@functools.cache
def _all_chains() -> dict[str, tuple[Chain, ...]]:
    raw = json.loads(CHAINS_FILE.read_text(encoding='utf-8'))
    chains: dict[str, list[Chain]] = {language: [] for language in LANGUAGES}
    for record in raw:
        chain = Chain(
            id=record['id'],
            language=record['language'],
            needles=tuple(record['needles']),
            question=record['question'],
            answer=record['answer'],
            reference=record['reference'],
        )
        # Shipped data: a broken entry is our bug, so fail loudly rather than produce an unanswerable sample.
        if not 3 <= len(chain.needles) <= 4 or chain.answer not in chain.needles[-1]:
            raise RuntimeError(f'{CHAINS_FILE}: chain {chain.id!r} is malformed')
        chains[chain.language].append(chain)
    return {language: tuple(items) for language, items in chains.items()}
