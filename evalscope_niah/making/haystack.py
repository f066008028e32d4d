"""Haystacks of exact token length with needles placed at sentence boundaries.

The prompt a model reads is ``prefix + haystack + suffix``, where prefix and suffix come from rendering the chat
template around the context. The haystack is a stretch of the corpus (repeated, with a blank line between copies,
when a length exceeds it) with needles spliced in.

Token counts are exact but cheap. BPE merges never cross pre-tokenizer boundaries, and pre-tokenization
resynchronises within a few words of any edit. So the count of the whole prompt is the corpus's cached token count
over the stretch, corrected inside a small window around every edit (the prompt prefix at the start, each needle,
each seam between corpus copies, the cut plus the prompt suffix at the end): each window is re-encoded on its own
and replaces the cached count of the same span. Windows are re-measured at twice the width; both must agree.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace

from ..errors import NiahConfigError
from ..languages import PROSE_SENTENCE_END, PROSE_SENTENCE_END_CHARACTERS
from .prompts import PromptSpec
from .repeated_corpus import COPY_SEPARATOR, RepeatedCorpus
from .tokenization import TokenCounter, Tokenizer

WINDOW_TOKENS = 32  # re-encoded on each side of an edit; doubled to check stability
SENTENCE_SEARCH_TOKENS = 160  # how far from the exact depth a sentence boundary may be used
END_MARGIN_TOKENS = 24  # needles stay this far before the cut, so moving the cut never crosses one
_SENTINEL = '\ue000NIAH-CONTEXT\ue000'


@dataclass(frozen=True)
class PromptFrame:
    """The rendered prompt around the context, and the token count of the prompt with an empty context."""

    prefix: str
    suffix: str
    empty_tokens: int


def prompt_frame(
    tokenizer: Tokenizer, prompt: PromptSpec, *, question: str, count: Callable[[str], int] | None = None
) -> PromptFrame:
    """Split the rendered prompt at the context, checking the template passes the context through unchanged."""
    rendered = tokenizer.render_chat(prompt.messages(context=_SENTINEL, question=question))
    if rendered.count(_SENTINEL) != 1:
        raise NiahConfigError('tokenizer_path', f'the chat template of {tokenizer.name!r} does not keep the context')
    prefix, suffix = rendered.split(_SENTINEL)
    probe = 'Probe text.\nSecond line.'
    if tokenizer.render_chat(prompt.messages(context=probe, question=question)) != prefix + probe + suffix:
        raise NiahConfigError('tokenizer_path', f'the chat template of {tokenizer.name!r} rewrites the context')
    return PromptFrame(prefix=prefix, suffix=suffix, empty_tokens=(count or tokenizer.count)(prefix + suffix))


@dataclass(frozen=True)
class Insertion:
    position: int  # virtual corpus offset the needle goes before
    text: str
    # At depth 100 (no end buffer) the needle ends the document: it follows the cut wherever the exact length puts it.
    at_end: bool = False


def _at_cut(insertions: Sequence[Insertion], cut: int) -> list[Insertion]:
    """The insertions with those that end the document moved to the cut ``cut``."""
    return [replace(item, position=cut) if item.at_end else item for item in insertions]


@dataclass(frozen=True)
class Haystack:
    context: str
    prompt_tokens: int
    haystack_tokens: int
    achieved_depth_percents: tuple[float, ...]
    insertions: tuple[Insertion, ...] = field(repr=False)
    start: int
    end: int
    # Every text spliced into [start, end) in corpus order, a control's padding included (``insertions`` holds the
    # needles only): what ``record_lines.context_json`` rebuilds the context from.
    spliced: tuple[Insertion, ...] = field(default=(), repr=False, compare=False)


@dataclass
class _Window:
    start: int
    end: int


class HaystackBuilder:
    """Builds exact-length haystacks for one (corpus, tokenizer, prompt, needles, question)."""

    def __init__(
        self,
        *,
        corpus: RepeatedCorpus,
        tokenizer: Tokenizer,
        frame: PromptFrame,
        needles: Sequence[str],
        language: str,
        counter: Callable[[str], int] | None = None,
        start_buffer: int = 0,
        end_buffer: int = 0,
        own_line: Collection[str] = (),
        needle_separator: str | None = None,
    ) -> None:
        self.corpus = corpus
        self.own_line = frozenset(needle.strip() for needle in own_line)
        # What follows a needle first (then the language's others): '\n' in a haystack of one sentence a line.
        self.separators = needle_separators(language, first=needle_separator)
        self.tokenizer = tokenizer
        self.frame = frame
        self.language = language
        self.needle_texts = [
            needle_text(needle, language, own_line=needle.strip() in self.own_line, separator=self.separators[0])
            for needle in needles
        ]
        self._count = counter or TokenCounter(tokenizer, persistent=False)
        self.needle_tokens = sum(self._count(text) for text in self.needle_texts)
        self.start_buffer = start_buffer
        self.end_buffer = end_buffer

    def minimum_length(self) -> int:
        """The shortest context length that still leaves room for the haystack around the needles."""
        return minimum_context_length(
            frame=self.frame,
            needle_tokens=self.needle_tokens,
            start_buffer=self.start_buffer,
            end_buffer=self.end_buffer,
        )

    def build(
        self,
        *,
        context_length: int,
        depth_percent: float,
        start_token: int = 0,
        needle_depths: Sequence[float] | None = None,
    ) -> Haystack:
        """A prompt of exactly ``context_length`` tokens. Needles go at ``depth_percent`` and spread toward the
        end after it, or each at its own depth when ``needle_depths`` gives one per needle."""
        self._check_request(context_length, needle_depths)
        corpus = self.corpus
        # A cut moves by whole characters, and one character (or a run of indentation) may be several tokens, so
        # the count can jump over the target. Then an invisible variant shifts it: another needle separator, the
        # next-nearest sentence boundary, or, last, starting the haystack a token or two later. The first variant
        # is the natural one and fits almost always. Without needles the variant is a second whitespace between
        # two sentences near the end, so the haystack still starts where the needle haystacks of its start do.
        padded = not self.needle_texts
        separators = _PADDINGS[self.language] if padded else self.separators
        variants = [(shift, rank, separator) for shift in range(4) for rank in range(2) for separator in separators]
        for shift, rank, separator in variants:
            start = corpus.position_of_token(start_token + shift)
            first_token = corpus.tokens_before(start)
            texts, depths = self._variant_texts(separator, depth_percent, needle_depths, padded=padded)
            budget = context_length - self.frame.empty_tokens - sum(self._count(text) for text in texts)
            end = corpus.position_of_token(first_token + budget)
            insertions = self._place_needles(
                texts, start, end, first_token, budget, depths, rank=rank, edges=not padded
            )
            fitted = self._fit(start, end, insertions, context_length)
            if fitted is not None:
                return self._haystack(start, *fitted, insertions, padded=padded)
        raise NiahConfigError(
            'context_lengths',
            f'could not build a prompt of exactly {context_length} tokens (subset language '
            f'{self.language!r}); try a length a few tokens away',
        )

    def _check_request(self, context_length: int, needle_depths: Sequence[float] | None) -> None:
        if context_length < self.minimum_length():
            raise NiahConfigError(
                'context_lengths',
                f'{context_length} tokens cannot hold the prompt template, question and needles '
                f'({self.frame.empty_tokens + self.needle_tokens} tokens) plus a haystack'
                + (' and the start/end buffers' if self.start_buffer or self.end_buffer else '')
                + f'; use at least {self.minimum_length()}',
            )
        if needle_depths is not None and len(needle_depths) != len(self.needle_texts):
            raise ValueError(f'needle_depths holds {len(needle_depths)} depths for {len(self.needle_texts)} needles')

    def _variant_texts(
        self, separator: str, depth_percent: float, needle_depths: Sequence[float] | None, *, padded: bool
    ) -> tuple[list[str], list[float]]:
        """What one variant inserts, and at which depths: the needles followed by ``separator``; without needles,
        the extra whitespace ``separator`` (if any) near the end."""
        if padded:
            return ([separator], [100.0]) if separator else ([], [])
        depths = list(needle_depths or spread_depths(depth_percent, len(self.needle_texts)))
        texts = [
            needle_text(
                needle,
                self.language,
                separator=separator,
                own_line=needle.strip() in self.own_line,
                ending=self._ends_document(depth),
            )
            for needle, depth in zip(self.needle_texts, depths, strict=True)
        ]
        return texts, depths

    def _haystack(self, start: int, end: int, total: int, insertions: Sequence[Insertion], *, padded: bool) -> Haystack:
        """The haystack of a cut that fits; a padding whitespace is not a needle, so it is not reported as one."""
        insertions = _at_cut(insertions, end)
        haystack_tokens = total - self.frame.empty_tokens
        needles = [] if padded else insertions
        return Haystack(
            context=self._assemble(start, end, insertions),
            prompt_tokens=total,
            haystack_tokens=haystack_tokens,
            achieved_depth_percents=self._achieved_depths(start, needles, haystack_tokens),
            insertions=tuple(needles),
            start=start,
            end=end,
            spliced=tuple(insertions),
        )

    def _fit(self, start: int, end: int, insertions: Sequence[Insertion], target: int) -> tuple[int, int] | None:
        """Move the cut until the whole prompt measures ``target`` tokens: by tokens, then bisecting characters.

        The count never decreases as the cut moves right, so bisection finds the cut if one exists.
        """
        corpus = self.corpus
        floor = max((item.position for item in insertions if not item.at_end), default=start)
        measured: dict[int, int] = {}

        def measure(cut: int) -> int:
            if cut not in measured:
                measured[cut] = self._measure(start, cut, _at_cut(insertions, cut))
            return measured[cut]

        for _ in range(6):
            total = measure(end)
            if total == target:
                return self._verified(start, end, insertions, target)
            moved = corpus.position_of_token(corpus.tokens_before(corpus.snap(end)) + target - total)
            if moved == end or moved <= floor:
                break
            end = moved
        low, high = end, end
        while measure(low) > target and low - 1 > floor:
            low = max(floor + 1, low - 16)
        while measure(high) < target:
            high += 16
        while high - low > 1:
            middle = (low + high) // 2
            if measure(middle) < target:
                low = middle
            else:
                high = middle
        for cut in (low, high):
            if cut > floor and measure(cut) == target:
                return self._verified(start, cut, insertions, target)
        return None

    def _verified(self, start: int, end: int, insertions: Sequence[Insertion], target: int) -> tuple[int, int] | None:
        # Windows of twice the width must agree; if not, pre-tokenization had not resynchronised: count robustly.
        insertions = _at_cut(insertions, end)
        if self._measure_with(start, end, insertions, 2 * WINDOW_TOKENS) == target:
            return end, target
        return (end, target) if self._measure(start, end, insertions, robust=True) == target else None

    # ---- needle placement ------------------------------------------------------------------------------------

    def _starts_document(self, depth: float) -> bool:
        """Depth 0 puts the needle first: no haystack text before it (with a start buffer, depth 0 is after it)."""
        return depth <= 0 and not self.start_buffer

    def _ends_document(self, depth: float) -> bool:
        """Depth 100 puts the needle last, as the built-in, Kamradt's tester and inspect_evals do: no haystack text
        after it (with an end buffer, depth 100 is before it)."""
        return depth >= 100 and not self.end_buffer

    def _place_needles(
        self,
        texts: Sequence[str],
        start: int,
        end: int,
        first_token: int,
        budget: int,
        depths: Sequence[float],
        *,
        rank: int,
        edges: bool = True,
    ) -> list[Insertion]:
        corpus = self.corpus
        # Depth 0..100 maps onto the haystack between the start and end buffers (inspect_evals' semantics).
        usable = max(0, budget - self.start_buffer - self.end_buffer)
        tail = max(END_MARGIN_TOKENS, self.end_buffer)
        latest = corpus.snap(corpus.position_of_token(max(first_token, corpus.tokens_before(end) - tail)))
        earliest = corpus.position_of_token(first_token + self.start_buffer) if self.start_buffer else start
        latest = max(earliest, latest)
        insertions = []
        for text, depth in zip(texts, depths, strict=True):
            if edges and self._ends_document(depth):  # placed at the cut, which _fit moves (see _at_cut)
                insertions.append(Insertion(position=end, text=text, at_end=True))
                continue
            if edges and self._starts_document(depth):
                position = start
            else:
                target = corpus.position_of_token(first_token + self.start_buffer + round(usable * depth / 100))
                target = min(max(target, earliest), latest)
                position = self._sentence_boundary(
                    target, earliest, latest, rank=rank, earliest_is_start=earliest == start
                )
            if list(depths) == sorted(depths) and insertions:
                # Needles at rising depths keep their order even when two targets snap to crossing boundaries.
                position = max(position, insertions[-1].position)
            insertions.append(Insertion(position=position, text=text))
        # The text is assembled in corpus order (shuffled reasoning links come at falling depths); ties keep order.
        return sorted(insertions, key=lambda item: item.position)

    def _sentence_boundary(
        self, target: int, earliest: int, latest: int, *, rank: int = 0, earliest_is_start: bool = True
    ) -> int:
        """The sentence start nearest to ``target`` (``rank``: the next-nearest ones) within the search window and
        [earliest, latest]; else the nearest word start."""
        corpus = self.corpus
        token = corpus.tokens_before(corpus.snap(target))
        low = max(earliest, corpus.position_of_token(max(0, token - SENTENCE_SEARCH_TOKENS)))
        high = min(latest, corpus.position_of_token(token + SENTENCE_SEARCH_TOKENS))
        if high <= low:
            return min(max(target, earliest), latest)
        window = corpus.slice(low, high)
        candidates = [low + match.end() for match in PROSE_SENTENCE_END[self.language].finditer(window)]
        candidates = [position for position in candidates if position <= high]
        if low == earliest and earliest_is_start:
            candidates.append(earliest)
        if not candidates and self.language == 'en':
            candidates = [low + match.end() for match in re.finditer(r'\s+', window)]
        if not candidates:
            return target
        ranked = sorted(set(candidates), key=lambda position: (abs(position - target), position))
        return ranked[min(rank, len(ranked) - 1)]

    # ---- measuring -------------------------------------------------------------------------------------------

    def _measure(self, start: int, end: int, insertions: Sequence[Insertion], *, robust: bool = False) -> int:
        if not robust:
            return self._measure_with(start, end, insertions, WINDOW_TOKENS)
        width = WINDOW_TOKENS
        narrow, wide = (self._measure_with(start, end, insertions, w) for w in (width, 2 * width))
        while narrow != wide and width < 2048:
            width *= 2
            narrow, wide = wide, self._measure_with(start, end, insertions, 2 * width)
        return wide if narrow == wide else self._count(self._render(start, end, insertions))

    def _measure_with(self, start: int, end: int, insertions: Sequence[Insertion], width: int) -> int:
        corpus = self.corpus
        edits = [(start, start), *((item.position, item.position) for item in insertions)]
        edits += [(seam, seam + len(COPY_SEPARATOR)) for seam in corpus.seams(start, end)]
        edits.append((end, end))
        windows: list[_Window] = []
        for low, high in sorted(edits):
            window = _Window(
                start=max(start, corpus.position_of_token(max(0, corpus.tokens_before(corpus.snap(low)) - width))),
                end=min(end, corpus.position_of_token(corpus.tokens_before(corpus.snap(high)) + width + 1)),
            )
            if low == start:
                window.start = start
            if high == end:
                window.end = end
            if windows and window.start <= windows[-1].end:
                windows[-1].end = max(windows[-1].end, window.end)
            else:
                windows.append(window)
        total = corpus.tokens_before(windows[-1].start) - corpus.tokens_before(start)
        for window in windows[:-1]:
            total -= corpus.tokens_before(window.end) - corpus.tokens_before(window.start)
        for window in windows:
            total += self._count(self._render(window.start, window.end, insertions, whole=(start, end)))
        return total

    def _render(
        self, low: int, high: int, insertions: Sequence[Insertion], *, whole: tuple[int, int] | None = None
    ) -> str:
        """Corpus text [low, high) with the needles inside it, plus the prompt prefix/suffix at the ends."""
        start, end = whole or (low, high)
        pieces = [self.frame.prefix] if low == start else []
        cursor = low
        for item in insertions:
            if low <= item.position <= high and not (item.position == high and high != end):
                pieces += [self.corpus.slice(cursor, item.position), item.text]
                cursor = item.position
        pieces.append(self.corpus.slice(cursor, high))
        if high == end:
            pieces.append(self.frame.suffix)
        return ''.join(pieces)

    def _assemble(self, start: int, end: int, insertions: Sequence[Insertion]) -> str:
        rendered = self._render(start, end, insertions)
        return rendered[len(self.frame.prefix) : len(rendered) - len(self.frame.suffix)]

    def _achieved_depths(self, start: int, insertions: Sequence[Insertion], haystack_tokens: int) -> tuple[float, ...]:
        corpus = self.corpus
        depths = []
        needles_before = 0
        ending = [self._count(item.text) for item in insertions if item.at_end]
        for item in insertions:
            if item.at_end:  # exactly what follows is known: this needle and those after it
                depths.append(round(100 * max(0, haystack_tokens - sum(ending)) / max(1, haystack_tokens), 2))
                ending.pop(0)
                continue
            before = corpus.tokens_before(corpus.snap(item.position)) - corpus.tokens_before(start) + needles_before
            depths.append(round(100 * min(before, haystack_tokens) / max(1, haystack_tokens), 2))
            needles_before += self._count(item.text)
        return tuple(depths)


def spread_depths(depth: float, count: int) -> list[float]:
    # Later needles spread toward the end, as the built-in does.
    step = (100 - depth) / count if count else 0
    return [depth + number * step for number in range(count)]


def next_sentence_start(text: str, position: int, language: str) -> int:
    """The first sentence start at or after ``position`` (0 stays 0); ``position`` itself when none follows."""
    if position <= 0:
        return 0
    # Step back over the end of a sentence that ``position`` may sit in or just after, so its start is found too.
    back = position
    while back > 0 and (text[back - 1].isspace() or text[back - 1] in PROSE_SENTENCE_END_CHARACTERS):
        back -= 1
    for match in PROSE_SENTENCE_END[language].finditer(text, back):
        if match.end() >= position:
            return match.end() if match.end() < len(text) else position
    return position


# Needles go at a sentence start: English needs a space before the next sentence, Chinese none. The others are
# fall-backs for when no cut gives the exact length (see HaystackBuilder.build).
# Tried in order, the natural one first. A model whose tokenizer spends 2-3 tokens on a CJK character (SmolLM2)
# moves the count by that much per character cut; the one-token separators at the end let it land exactly.
_NEEDLE_SEPARATORS = {'en': (' ', '\n', '  '), 'zh': ('', ' ', '\u3000', '\n', '  ', ' \n')}
# Without needles: nothing, else one extra whitespace at a sentence boundary (see HaystackBuilder.build).
_PADDINGS = {'en': ('', ' ', '\n'), 'zh': ('', ' ', '\u3000', '\n', '  ')}


def needle_separators(language: str, *, first: str | None = None) -> tuple[str, ...]:
    """The separators a needle may be followed by: ``first`` (when given) and its variants that keep its shape (a
    line break stays a line break) tried before the language's own."""
    own = _NEEDLE_SEPARATORS[language]
    if first is None:
        return own
    return tuple(dict.fromkeys((first, ' ' + first, first + first, *own)))


def needle_text(
    needle: str, language: str, *, own_line: bool = False, separator: str | None = None, ending: bool = False
) -> str:
    """A needle as inserted: stripped, then followed by what separates it from the next sentence (``separator``,
    else the natural one). ``own_line``: written as CDME's '\\n...\\n' needles are, it stands on a line of its own
    (a fall-back separator still follows it, to shift the count). ``ending``: it ends the document, after a cut
    that may fall inside a sentence, so it starts a line of its own and nothing follows it but a fall-back."""
    natural = _NEEDLE_SEPARATORS[language][0]
    separator = natural if separator is None else separator
    if own_line or ending:
        return f'\n{needle.strip()}' + ('\n' if own_line else '') + ('' if separator == natural else separator)
    return needle.strip() + separator


def minimum_context_length(*, frame: PromptFrame, needle_tokens: int, start_buffer: int, end_buffer: int) -> int:
    """The shortest prompt that leaves room for a haystack around needles of ``needle_tokens`` tokens."""
    return frame.empty_tokens + needle_tokens + 2 * WINDOW_TOKENS + start_buffer + end_buffer


def has_sentence_boundary(text: str, language: str) -> bool:
    """True when needles can go at a sentence start somewhere in the corpus (one regex search).

    The copy separator is appended because a haystack repeats the corpus: a final '.' then ends a sentence too
    (appended to the last few characters only: a copy of a 50 MB corpus costs 100 MB).
    """
    pattern = PROSE_SENTENCE_END[language]
    return pattern.search(text) is not None or pattern.search(text[-16:] + COPY_SEPARATOR) is not None


def find_needle_in_corpus(text: str, needles: Sequence[str]) -> str | None:
    """A needle whose text already occurs in the corpus (whitespace-insensitive), which would void the test.

    Searched as the needle's words joined by ``\\s+``, not in a whitespace-squashed copy of the corpus: re.sub
    over a 50 MB corpus peaked at 800 MB. (Each ``\\s+`` is followed by a non-space literal, so no backtracking.)
    """
    for needle in needles:
        words = needle.split()
        if words and re.search(r'\s+'.join(map(re.escape, words)), text):
            return needle
    return None
