"""The key fact of a needle the user wrote: the part of the needle that answers the question, found without an
``answer`` (EvalScope's own parameters are ``needles`` and ``retrieval_question``; it has no answer).

The question restates the needle around what it asks for, so what the needle says beyond the question is the answer:
the needle's words the question shares are cut out, and of what is left the clause the question asks for is kept
('The best thing to do in San Francisco is eat a sandwich ...' asked 'What is the most fun thing to do in San
Francisco?' -> 'eat a sandwich and sit in Dolores Park on a sunny day'; ' Figs are one of the secret ingredients ...'
-> 'Figs'). A needle that shares nothing with the question (a needle without a matching question) has no key fact:
its rule falls back to needle recall, as before.

A derived key is only ever *looked for* in an answer: it never changes what the model is sent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ...languages import CJK_CHAR
from ...scoring.text import EN_STOPWORDS, stem
from ...vocabulary import Language
from ..kit import normalise

__all__ = ['derived_key', 'derived_keys']

# English words that mark an adjunct the question left out ('... in his office at Tressing College'): a run of
# leftover words they open is a place or time the question did not ask about, unless the question uses the word.
_EN_PREPOSITIONS = frozenset(
    'at in on from during since until before after near beside inside outside across through throughout along '  # noqa: SIM905
    'around behind beyond within without via per'.split()
)
# Words that qualify the fact without being it ('exactly 317', 'only on', 'ever to dock', 'always held').
_EN_QUALIFIERS = frozenset(
    'exactly only ever always never just about nearly almost precisely also still entirely all'.split()  # noqa: SIM905
)
# Words after which a name follows ('a retired mapmaker named Hesper Callowday'): the name is the fact.
_EN_NAMING = frozenset(['named', 'called', 'nicknamed', 'dubbed', 'titled', 'name'])
# Words that open a time adjunct inside a fact ('6:42 every day'): the fact ends before them.
_EN_TIME_ADJUNCT = frozenset(['every', 'each'])
_EN_COPULAS = frozenset(['is', 'are', 'was', 'were'])
# A word and its punctuation-joined tail stay one token: '6:42', '1,000', 'Abernathy-Skye', "Oskvik's".
_EN_TOKEN = re.compile(r"[^\W_]+(?:['’\-:.,/][^\W_]+)*")

# Chinese: characters that join or qualify rather than state ('就是', '只', '都', '把', '一只'); trimmed off the ends.
_ZH_EDGE = '的了着是就也都把被将在于为只仅总乃即而并又还才所之呢吗吧啊过给让向从到对共整要足'
# '是' after what is left of the restatement: the fact follows it.
_ZH_COPULA = re.compile(r'就是|便是|即是|乃是|是')
# One character and '的' at the start are the end of a modifier the question restated ('传说' + '中的星尘碎片').
_ZH_LEADING_DE = re.compile(r'^[^的]的(?=.)')
# Locatives after a place ('粮仓里', '布上'): the place is the fact.
_ZH_LOCATIVE = '里上中内'
# The interrogative of a Chinese question: what the needle's fact stands in for.
_ZH_INTERROGATIVE = re.compile(r'什么|哪里|哪儿|哪座|哪个|哪一天|哪一|哪|谁|多少|几|何时|何处|怎样|如何')
# A quantity question ('how many', '多少') asks for the number in the leftover, not the words around it.
_QUANTITY_QUESTION = re.compile(r'\bhow\s+(?:many|much)\b|多少|几', re.IGNORECASE)
_NUMBER = re.compile(r'[0-9０-９]+(?:[.,:][0-9]+)*|[零〇一二两三四五六七八九十百千万亿]{2,}')
# Naming markers: what follows is the name the question asks for ('一只名叫“团子”的猫头鹰').
_ZH_NAMING = re.compile(r'(?:取名为|取名叫|命名为|名叫|叫作|叫做|称为|名为|叫)')
_ZH_QUOTE = re.compile(r'[“”"「」『』‘’《》]')
# Measure words after a numeral ('一只', '一位', '一把', '一座'): a numeral and one of them open a noun phrase.
_ZH_NUMERAL_MEASURE = re.compile(r'^[一两几这那每某][只位把座张块个条头匹辆艘口棵盏本件颗]')
_ZH_PUNCT = re.compile(r'[\s，。！？；：、,.!?;:()（）\[\]【】]+')
# Shared runs shorter than this are coincidence, not a restatement (one character is shared by chance: 实 in 实习
# and 实验室).
_ZH_MIN_SHARED = 2


@dataclass(frozen=True)
class _Run:
    start: int
    end: int
    content: int  # words (English) or characters (Chinese) that carry the fact
    adjunct: bool = False  # opened by a word that marks an adjunct the question left out


def derived_keys(needles: Sequence[str], question: str, *, language: Language) -> tuple[str, ...]:
    """One key fact per needle that has one (in the needles' order, duplicates once); () when any needle has none
    (the rule then falls back to the needles' recall, as for a needle without a question that asks for it)."""
    keys = [derived_key(needle, question, language=language) for needle in needles]
    if not keys or any(key is None for key in keys):
        return ()
    return tuple(dict.fromkeys(key for key in keys if key is not None))


def derived_key(needle: str, question: str, *, language: Language) -> str | None:
    """The part of ``needle`` that answers ``question`` (a substring of the needle), or None when the needle does
    not restate the question at all. The language is the text's: a Chinese needle is read as Chinese whatever the
    subset."""
    needle = needle.strip()
    if not needle or not question.strip():
        return None
    if CJK_CHAR.search(needle):
        return _zh_key(needle, question)
    return _en_key(needle, question)


# --- English -------------------------------------------------------------------------------------------------------


def _en_stem(word: str) -> str:
    """``scoring.text.stem`` after cutting 'ed' / 'ing' ('named' and 'name', 'keeps' and 'keep' meet)."""
    word = normalise(word).replace('’', "'").removesuffix("'s")
    for suffix in ('ing', 'ed'):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return stem(word)


def _en_key(needle: str, question: str) -> str | None:
    asked = {_en_stem(word) for word in _EN_TOKEN.findall(question)}
    asked_words = {normalise(word) for word in _EN_TOKEN.findall(question)}
    tokens = list(_EN_TOKEN.finditer(needle))
    shared = [_en_content(match.group()) and _en_stem(match.group()) in asked for match in tokens]
    if not any(shared):
        return None  # the needle does not restate the question: not its answer
    # A copula parts subject from predicate: what the question leaves of the subject never joins the fact.
    shared = [found or normalise(match.group()) in _EN_COPULAS for found, match in zip(shared, tokens, strict=True)]
    runs: list[_Run] = []
    index = 0
    while index < len(tokens):
        if shared[index]:
            index += 1
            continue
        first = index
        while index < len(tokens) and not shared[index]:
            index += 1
        run = _en_trimmed(tokens, first, index, asked)
        if run is not None:
            opener = normalise(tokens[first].group())
            adjunct = opener in _EN_PREPOSITIONS and opener not in asked_words and first > 0
            runs.append(_Run(run[0], run[1], run[2], adjunct))
    if not runs:
        return None
    facts = [(run, needle[tokens[run.start].start() : tokens[run.end - 1].end()]) for run in runs]
    # A quantity question asks for the leftover that holds a number; else the fact is what is not an adjunct, the
    # most words, the later.
    counted = _asks_number(question)
    run, fact = max(
        facts,
        key=lambda item: (
            counted and _NUMBER.search(item[1]) is not None,
            not item[0].adjunct,
            item[0].content,
            item[0].end,
        ),
    )
    number = _NUMBER.search(fact) if counted else None
    return number.group() if number is not None else fact


def _en_content(word: str) -> bool:
    word = normalise(word)
    return word not in EN_STOPWORDS and word not in _EN_QUALIFIERS


def _en_trimmed(tokens: list[re.Match[str]], first: int, stop: int, asked: set[str]) -> tuple[int, int, int] | None:
    """The run ``tokens[first:stop]`` without function words (and words the question uses) at its ends."""

    def edge(word: str) -> bool:
        return not _en_content(word) or _en_stem(word) in asked

    for index in range(stop - 2, first - 1, -1):  # the name after the last naming word, when one follows it
        if normalise(tokens[index].group()) in _EN_NAMING:
            first = index + 1
            break
    while first < stop and (edge(tokens[first].group()) or normalise(tokens[first].group()) in _EN_PREPOSITIONS):
        first += 1
    for index in range(first + 1, stop):
        if normalise(tokens[index].group()) in _EN_TIME_ADJUNCT:
            stop = index
            break
    while stop > first and edge(tokens[stop - 1].group()):
        stop -= 1
    if first == stop:
        return None
    content = sum(_en_content(tokens[i].group()) for i in range(first, stop))
    return first, stop, content


# --- Chinese -------------------------------------------------------------------------------------------------------


def _zh_key(needle: str, question: str) -> str | None:
    shared = _zh_shared(needle, question)
    if not any(shared):
        return None
    left, right = _zh_sides(question)
    pieces: list[tuple[int, int, str]] = []  # (anchors, position, fact)
    index = 0
    while index < len(needle):
        if shared[index] or _ZH_PUNCT.fullmatch(needle[index]):
            index += 1
            continue
        first = index
        while index < len(needle) and not shared[index] and not _ZH_PUNCT.fullmatch(needle[index]):
            index += 1
        piece = _zh_trimmed(needle[first:index], asks_number=_asks_number(question))
        if piece:
            pieces.append((_zh_anchors(needle, first, index, piece, left, right), first, piece))
    if not pieces:
        return None
    # The piece where the question's interrogative stands (the needle around it is what the question says around
    # it), then the longest, then the later (a Chinese statement puts what it says last).
    return max(pieces, key=lambda item: (item[0], len(item[2]), item[1]))[2]


def _zh_sides(question: str) -> tuple[str, str]:
    """The question before and after its interrogative ('小明最喜欢的实习地点是' / '？'); the whole question on both
    sides when it has none."""
    found = _ZH_INTERROGATIVE.search(question)
    if found is None:
        return question, question
    return question[: found.start()], question[found.end() :]


def _zh_anchors(needle: str, start: int, end: int, piece: str, left: str, right: str) -> int:
    """How many sides of the needle's leftover ``needle[start:end]`` (``piece`` once trimmed) the question places its
    interrogative between: the two characters before it stand in the question before the interrogative, the ones
    after it (or the sentence end, when the question goes on with none of the needle's words) after it. The trimmed
    piece's own neighbours count too ('蓝麻布' + '上' against '什么上面')."""
    inner = needle.find(piece, start, end)
    starts = {start, inner} if inner >= 0 else {start}
    ends = {end, inner + len(piece)} if inner >= 0 else {end}
    anchors = int(any(_ZH_PUNCT.sub('', needle[max(0, at - 2) : at]) in left for at in starts if at >= 2))
    for at in ends:
        after = _ZH_PUNCT.sub('', needle[at : at + 2])
        if (after and (after in right or right.startswith(after[0]))) or (
            not after and not any(char in needle for char in _ZH_PUNCT.sub('', right))
        ):
            return anchors + 1
    return anchors


def _zh_shared(needle: str, question: str) -> list[bool]:
    """Per needle character: inside a run of at least ``_ZH_MIN_SHARED`` characters that the question holds too."""
    shared = [False] * len(needle)
    for start in range(len(needle)):
        length = _ZH_MIN_SHARED
        while start + length <= len(needle) and needle[start : start + length] in question:
            length += 1
        if length > _ZH_MIN_SHARED:
            for position in range(start, start + length - 1):
                shared[position] = True
    return shared


def _zh_trimmed(piece: str, *, asks_number: bool) -> str:
    """A leftover piece as the fact it states: the number a quantity question asks for, the name after a naming
    marker, with the numeral and measure word and the joining characters off its ends."""
    number = _NUMBER.search(piece) if asks_number else None
    if number is not None:
        return number.group()
    named = _ZH_NAMING.search(piece)
    if named is not None and named.end() < len(piece):
        piece = piece[named.end() :].split('的', 1)[0]
    piece = piece.lstrip(_ZH_EDGE)
    copula = _ZH_COPULA.search(piece)
    if copula is not None and copula.start() <= 2 and copula.end() < len(piece):
        piece = piece[copula.end() :]  # what is left of the restatement before '是' ('点就是' of '地点就是')
    piece = _ZH_QUOTE.sub('', piece)
    while True:
        before = piece
        piece = _ZH_NUMERAL_MEASURE.sub('', _ZH_LEADING_DE.sub('', piece))
        piece = piece.lstrip(_ZH_EDGE).rstrip(_ZH_EDGE + _ZH_LOCATIVE)
        if piece == before:
            return piece


def _asks_number(question: str) -> bool:
    return _QUANTITY_QUESTION.search(question) is not None
