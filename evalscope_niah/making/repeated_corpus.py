"""The corpus as an endless text: copies joined by a blank line, addressed by virtual character offsets, with the
cached token counts of its clean boundaries (see haystack.py for how the counts are corrected around each edit)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import NiahConfigError
from ..escaping import json_text
from .tokenization import TokenIndex

if TYPE_CHECKING:
    from ..params.subsets import ResolvedSubset

COPY_SEPARATOR = '\n\n'
# Characters per block of the corpus kept JSON-escaped (see RepeatedCorpus.json_body): a slice joins its whole
# blocks and escapes only the partial ones at its ends.
_JSON_BLOCK = 4096


def json_body(text: str) -> bytes:
    """``text`` as it appears inside a JSON string written by ``escaping.json_text``, UTF-8 encoded. Both escapings
    work character by character, so the body of a concatenation is the concatenation of the bodies."""
    return json_text(text)[1:-1].encode('utf-8')


class RepeatedCorpus:
    """The corpus as an endless text: copies joined by ``COPY_SEPARATOR``, addressed by virtual char offsets."""

    def __init__(self, text: str, index: TokenIndex) -> None:
        self.complete = index.covered_chars >= len(text)
        self.text = text if self.complete else text[: index.covered_chars]
        self.index = index
        self.period = len(self.text) + len(COPY_SEPARATOR)
        self.copy_tokens = index.total_tokens
        # Block number -> json_body of that block of self.text, filled as preview asks: at most the indexed prefix,
        # escaped (about its size again), for as long as the sampler lives.
        self._json_blocks: dict[int, bytes] = {}

    def _split(self, position: int) -> tuple[int, int]:
        if not self.complete:
            return 0, position
        copy, offset = divmod(position, self.period)
        return copy, min(offset, len(self.text))

    def slice(self, start: int, end: int) -> str:
        if not self.complete or end <= len(self.text):
            if end > len(self.text) and not self.complete:
                raise AssertionError('slice beyond the tokenized prefix')
            return self.text[start:end]
        pieces = []
        while start < end:
            copy, offset = divmod(start, self.period)
            stop = min(end, (copy + 1) * self.period)
            # Sliced from the text and the separator apart: joining them first would copy the whole corpus.
            length = stop - start
            pieces.append(self.text[offset : offset + length])
            if offset + length > len(self.text):
                pieces.append(COPY_SEPARATOR[max(0, offset - len(self.text)) : offset + length - len(self.text)])
            start = stop
        return ''.join(pieces)

    def json_body(self, start: int, end: int) -> bytes:
        """``json_body(self.slice(start, end))``, from blocks of the corpus escaped once: prompts of a grid are cut
        from the same stretch of corpus, so `preview` escapes the corpus once instead of every prompt whole."""
        if not self.complete and end > len(self.text):
            raise AssertionError('slice beyond the tokenized prefix')
        pieces: list[bytes] = []
        while start < end:
            copy, offset = divmod(start, self.period) if self.complete else (0, start)
            stop = min(end, (copy + 1) * self.period) if self.complete else end
            length = stop - start
            pieces += self._text_json(offset, min(offset + length, len(self.text)))
            if offset + length > len(self.text):
                separator = COPY_SEPARATOR[max(0, offset - len(self.text)) : offset + length - len(self.text)]
                pieces.append(json_body(separator))
            start = stop
        return b''.join(pieces)

    def _text_json(self, start: int, end: int) -> list[bytes]:
        first, last = -(-start // _JSON_BLOCK), end // _JSON_BLOCK  # the whole blocks inside [start, end)
        if first >= last:
            return [json_body(self.text[start:end])]
        pieces = [json_body(self.text[start : first * _JSON_BLOCK])]
        for block in range(first, last):
            escaped = self._json_blocks.get(block)
            if escaped is None:
                escaped = json_body(self.text[block * _JSON_BLOCK : (block + 1) * _JSON_BLOCK])
                self._json_blocks[block] = escaped
            pieces.append(escaped)
        pieces.append(json_body(self.text[last * _JSON_BLOCK : end]))
        return pieces

    def tokens_before(self, position: int) -> int:
        """Cached tokens before a clean boundary (separators count zero: their windows add them)."""
        copy, offset = self._split(position)
        return copy * self.copy_tokens + self.index.tokens_before(offset)

    def snap(self, position: int) -> int:
        copy, offset = self._split(position)
        return copy * self.period + self.index.boundary_at_or_before(offset)

    def position_of_token(self, token: int) -> int:
        if not self.complete and token > self.copy_tokens:
            raise AssertionError('token beyond the tokenized prefix')
        copy, within = divmod(token, self.copy_tokens) if self.complete else (0, token)
        return copy * self.period + self.index.char_of_token(within)

    def seams(self, start: int, end: int) -> list[int]:
        """Start offsets of the separators between copies inside [start, end)."""
        if not self.complete:
            return []
        first = start // self.period
        return [
            copy * self.period + len(self.text)
            for copy in range(first, end // self.period + 1)
            if start < copy * self.period + len(self.text) < end
        ]


def check_corpus_repeats(
    *, subset: ResolvedSubset, corpus_tokens: int, max_context_length: int, max_corpus_repeats: int
) -> None:
    """Refuse a longest context length that needs the corpus repeated more than ``max_corpus_repeats`` times.

    ``corpus_tokens`` may be a lower bound (a prefix indexed far enough for the longest length): the check only
    fails when the whole corpus is shorter than the longest length divided by the cap.
    """
    if corpus_tokens * max_corpus_repeats >= max_context_length:
        return
    times = max_context_length / max(corpus_tokens, 1)
    raise NiahConfigError(
        'max_corpus_repeats',
        f'context length {max_context_length:,} would repeat corpus file {subset.corpus_file!r} of subset '
        f'{subset.name!r} ({corpus_tokens:,} tokens) {times:,.1f} times, more than max_corpus_repeats='
        f'{max_corpus_repeats}; use a longer corpus, shorter context lengths, or raise max_corpus_repeats',
    )
