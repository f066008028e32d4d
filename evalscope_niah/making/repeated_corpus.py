"""The corpus as an endless text: copies joined by a blank line, addressed by virtual character offsets, with the
cached token counts of its clean boundaries (see haystack.py for how the counts are corrected around each edit)."""

from __future__ import annotations

from .tokenization import TokenIndex

COPY_SEPARATOR = '\n\n'


class RepeatedCorpus:
    """The corpus as an endless text: copies joined by ``COPY_SEPARATOR``, addressed by virtual char offsets."""

    def __init__(self, text: str, index: TokenIndex) -> None:
        self.complete = index.covered_chars >= len(text)
        self.text = text if self.complete else text[: index.covered_chars]
        self.index = index
        self.period = len(self.text) + len(COPY_SEPARATOR)
        self.copy_tokens = index.total_tokens

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
