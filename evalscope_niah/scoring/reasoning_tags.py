"""THE reasoning-block stripper: the final answer of a reasoning model's reply, for the rules and for the judge.

Every reply is stripped once, where it enters scoring (the adapter for the model's reply, the verdict parser for a
judge's); the rules and the task types take the final answer as given.
"""

from __future__ import annotations

import re

__all__ = ['strip_reasoning']


# One pattern for both tag kinds so a single left-to-right pass finds every tag; group 1 is '/' on a closing tag.
_THINK_TAG = re.compile(r'<\s*(/?)\s*(think|thinking)\s*>', re.IGNORECASE)
_THINK_OPEN = re.compile(r'<\s*(?:think|thinking)\s*>', re.IGNORECASE)
_THINK_CLOSE = re.compile(r'<\s*/\s*(?:think|thinking)\s*>', re.IGNORECASE)


def _remove_think_blocks(text: str) -> str:
    """Remove ``<think>…</think>`` blocks, each closed by the next closing tag of the same name.

    Same result as ``re.sub(r'<(think|thinking)>.*?</\\1>', '', text)`` but linear: that regex rescans to the end
    of the text for every unclosed opening tag, so a reply of 40,000 '<think>' took 50 s.
    """
    tags = [(m.start(), m.end(), bool(m.group(1)), m.group(2).casefold()) for m in _THINK_TAG.finditer(text)]
    if not tags:
        return text
    # For each tag index, the index of the next closing tag of each name at or after it (scanned backwards once).
    next_close: list[dict[str, int]] = [{}] * (len(tags) + 1)
    for index in range(len(tags) - 1, -1, -1):
        following = next_close[index + 1]
        _, _, closing, name = tags[index]
        next_close[index] = {**following, name: index} if closing else following
    pieces: list[str] = []
    position = 0
    index = 0
    while index < len(tags):
        start, _, closing, name = tags[index]
        if closing or start < position:
            index += 1
            continue
        close = next_close[index + 1].get(name)
        if close is None:
            index += 1  # an unclosed opening tag starts no block; a later tag may
            continue
        pieces.append(text[position:start])
        position = tags[close][1]
        index = close + 1
    pieces.append(text[position:])
    return ''.join(pieces)


def strip_reasoning(text: str) -> str:
    """Return only the final answer of a reasoning model's reply (linear time in the reply's length).

    ``<think>…</think>`` / ``<thinking>…</thinking>`` blocks are removed. A stray closing tag (chat templates that
    put the opening ``<think>`` into the prompt) keeps only the text after it. An opening tag that is never closed
    means the model ran out of tokens while thinking: everything from it on is dropped, so a reply that starts with
    an unclosed ``<think>`` has no final answer and yields ''.
    """
    text = _remove_think_blocks(text)
    last_close = None
    for last_close in _THINK_CLOSE.finditer(text):  # noqa: B007 - only the last one matters
        pass
    if last_close is not None:
        text = text[last_close.end() :]
    opened = _THINK_OPEN.search(text)
    if opened:
        text = text[: opened.start()]
    return text.strip()
