"""Token boundaries from each token's UTF-8 bytes: shared by tokenizers that report bytes, not char offsets.

Its own module so that ``tokenization`` (tiktoken) and ``endpoint`` (a server's token pieces) both use it without
importing each other.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def boundaries_from_byte_lengths(text: str, byte_lengths: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """``Tokenizer.boundaries`` from the UTF-8 byte length of each token of ``text`` (tokens cover it exactly)."""
    byte_ends = np.cumsum(np.asarray(byte_lengths, dtype=np.int64), dtype=np.int64)
    byte_starts = np.concatenate([[0], byte_ends[:-1]]).astype(np.int64)
    data = np.frombuffer(text.encode('utf-8'), dtype=np.uint8)
    if len(byte_lengths) and byte_ends[-1] != len(data):
        raise ValueError(f'the tokens cover {int(byte_ends[-1])} bytes of a {len(data)}-byte text')
    # Char index of every byte: count of UTF-8 lead bytes up to it; a token starting on a continuation byte
    # starts inside a character and is no place to cut.
    is_lead = (data & 0xC0) != 0x80
    char_of_byte = np.concatenate([np.cumsum(is_lead) - 1, [len(text)]])
    lead_or_end = np.concatenate([is_lead, [True]])
    clean = lead_or_end[byte_starts]
    chars = char_of_byte[byte_starts[clean]]
    tokens = np.nonzero(clean)[0]
    return np.append(chars, len(text)).astype(np.int64), np.append(tokens, len(byte_lengths)).astype(np.int64)
