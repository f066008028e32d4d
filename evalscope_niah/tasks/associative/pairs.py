"""Associative needles: the question reaches the needle only through one hop of common knowledge.

Literal retrieval is saturated because the question repeats the needle's words. Following the idea of NoLiMa
(Modarressi et al., 2025), a needle here states a fact about an invented character ("{name} lives right next to the
Semper Opera House") and the question asks for that character through a link the reader must know ("Which character
has been to Dresden?"). Every pair in ``pairs.json`` was written for this project, in English and in
Chinese (Chinese pairs use Chinese landmarks, works and dishes, not translations of the English ones).

``overlap`` enforces the rule that makes a pair associative: once the name is masked, needle and question share no
content word (English) or character bigram (Chinese). ``check_corpus`` finds names, hop targets and needle key terms
that a haystack already contains: a name there would give a second answer, a target there gives a literal match the
question was meant not to have.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import random
import re
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ...errors import NiahConfigError
from ...vocabulary import LANGUAGES, Language
from ..kit import check_language

PAIRS_FILE = Path(__file__).with_name('pairs.json')
NAME_PLACEHOLDER = '{name}'

# The kinds of one-hop link the shipped pairs use; a pair of another kind is a data bug.
HOP_KINDS: tuple[str, ...] = (
    'landmark-city',  # Semper Opera House -> Dresden
    'work-author',  # Moby-Dick -> Melville
    'artwork-museum',  # The Night Watch -> Rijksmuseum
    'dish-region',  # feijoada -> Brazil
    'institution-field',  # CERN -> particle physics
    'place-craft',  # Jingdezhen -> porcelain
    'species-habitat',  # kakapo -> New Zealand
    'language-country',  # Tagalog -> the Philippines
    'currency-country',  # rupiah -> Indonesia
    'festival-place',  # Oktoberfest -> Munich
    'art-form-region',  # Huangmei opera -> Anhui
)

# Function words a needle and its question may share: they carry no meaning a literal search could match on.
ENGLISH_STOP_WORDS: frozenset[str] = frozenset((
    'a', 'an', 'the', 'of', 'to', 'in', 'on', 'at', 'for', 'from', 'with', 'by', 'and', 'or', 'but', 'as', 'is', 'are',
    'was', 'were', 'be', 'been', 'being', 'has', 'have', 'had', 'do', 'does', 'did', 'which', 'who', 'whom', 'whose',
    'what', 'that', 'this', 'these', 'those', 'it', 'its', 'he', 'she', 'his', 'her', 'they', 'them', 'their', 'one',
    'ever', 'once', 'there', 'here', 'not', 'no', 'so', 'very', 'just', 'never', 'also', 'any', 'some',
))  # fmt: skip
# Chinese function bigrams (measure words, question words, copulas) a needle and its question may share.
CHINESE_FUNCTION_BIGRAMS: frozenset[str] = frozenset((
    '一个', '一位', '什么', '哪个', '哪位', '这个', '那个', '的是', '是一', '了一', '有一', '就是', '也是', '不是',
    '已经', '曾经',
))  # fmt: skip

# Two English content words count as the same when equal, when both start with the same 5 letters (stems:
# "painting" / "painter"), or when a shorter word of 4+ letters starts the longer one (inflections: "cook" / "cooks").
STEM_LENGTH = 5
MIN_PREFIX_LENGTH = 4

MAX_PICK_COUNT = 10_000
# A haystack corpus is at most tens of megabytes; far beyond that is a wrong file, not a corpus.
MAX_CORPUS_CHARS = 200_000_000

_ENGLISH_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_CJK_RUN = re.compile(r'[\u3400-\u9fff\uf900-\ufaff]+')
_WORD = re.compile(r'[^\W_]+')
# Every ASCII byte that is not a letter or digit becomes a space; bytes of non-ASCII characters are kept.
_ASCII_NON_WORD_TO_SPACE = bytes(byte if byte >= 128 or chr(byte).isalnum() else 32 for byte in range(256))


@dataclasses.dataclass(frozen=True)
class AssociativePair:
    """One needle about ``{name}`` and the question that reaches it through ``hop``.

    ``target`` is what the question names (Dresden) and ``target_forms`` the spellings to look for in a corpus;
    ``needle_terms`` are the needle's key terms (Semper Opera); ``distractor`` shares the question's words but names
    nobody (NoLiMa-Hard's literal distractor).
    """

    id: str
    language: Language
    kind: str
    needle: str
    question: str
    hop: str
    target: str
    target_forms: tuple[str, ...]
    needle_terms: tuple[str, ...]
    distractor: str

    def needle_for(self, name: str) -> str:
        """The needle sentence about ``name``."""
        # str.replace, not str.format: a needle may hold other braces, a name may hold anything.
        return self.needle.replace(NAME_PLACEHOLDER, name)

    def search_terms(self) -> tuple[str, ...]:
        """Every term whose presence in a corpus makes this pair unusable there."""
        return (*self.target_forms, *self.needle_terms)


@dataclasses.dataclass(frozen=True)
class CorpusCheck:
    """What of the shipped names and pairs a corpus already contains.

    ``names_found``: names occurring in the corpus (each would be a second answer). ``pairs_found``: per pair id, the
    target forms or needle terms occurring in it (a literal search would find them).
    """

    language: Language
    names_found: tuple[str, ...]
    # Read-only: check_corpus caches and shares its result, so no caller may change it for the next one.
    pairs_found: Mapping[str, tuple[str, ...]]

    @property
    def clean(self) -> bool:
        """Nothing shipped occurs in the corpus."""
        return not self.names_found and not self.pairs_found

    def usable_names(self) -> tuple[str, ...]:
        return tuple(name for name in names(self.language) if name not in self.names_found)

    def usable_pairs(self) -> tuple[AssociativePair, ...]:
        return tuple(pair for pair in load_pairs(self.language) if pair.id not in self.pairs_found)

    def messages(self) -> list[str]:
        """One line per refused name or skipped pair, naming it and what was found."""
        lines = [f'name {name!r} occurs in the corpus; it is not used' for name in self.names_found]
        lines.extend(
            f'pair {pair_id!r} skipped: the corpus contains {", ".join(repr(term) for term in terms)}'
            for pair_id, terms in self.pairs_found.items()
        )
        return lines


# --- shipped data --------------------------------------------------------------------------------------------------


def load_pairs(language: Language) -> tuple[AssociativePair, ...]:
    """The shipped pairs of ``language``, in file order."""
    check_language(language)
    return _shipped()[0][language]


def names(language: Language) -> tuple[str, ...]:
    """The shipped character names of ``language``; none occurs in the shipped or the real corpora (tested)."""
    check_language(language)
    return _shipped()[1][language]


def literal_distractor(pair: AssociativePair, *, language: Language) -> str:
    """A sentence sharing the question's words (and target) that answers nothing: it names no character."""
    check_language(language)
    if pair.language != language:
        raise NiahConfigError('language', f'pair {pair.id!r} is {pair.language!r}, not {language!r}')
    return pair.distractor


@functools.cache
def _shipped() -> tuple[dict[str, tuple[AssociativePair, ...]], dict[str, tuple[str, ...]]]:
    raw = json.loads(PAIRS_FILE.read_text(encoding='utf-8'))
    pairs: dict[str, list[AssociativePair]] = {language: [] for language in LANGUAGES}
    seen: set[str] = set()
    for record in raw['pairs']:
        pair = _pair(record)
        # Shipped data: a broken entry is our bug, so fail loudly rather than produce an unanswerable sample.
        problem = _pair_problem(pair)
        if pair.id in seen:
            problem = 'duplicate id'
        if problem:
            raise RuntimeError(f'{PAIRS_FILE}: pair {pair.id!r}: {problem}')
        seen.add(pair.id)
        pairs[pair.language].append(pair)
    shipped_names = {language: tuple(raw['names'][language]) for language in LANGUAGES}
    for language, items in shipped_names.items():
        if len(set(items)) != len(items) or not all(isinstance(name, str) and name.strip() for name in items):
            raise RuntimeError(f'{PAIRS_FILE}: {language!r} names must be distinct non-empty strings')
    return {language: tuple(items) for language, items in pairs.items()}, shipped_names


def _pair(record: dict[str, Any]) -> AssociativePair:
    return AssociativePair(
        id=record['id'],
        language=record['language'],
        kind=record['kind'],
        needle=record['needle'],
        question=record['question'],
        hop=record['hop'],
        target=record['target'],
        target_forms=tuple(record['target_forms']),
        needle_terms=tuple(record['needle_terms']),
        distractor=record['distractor'],
    )


def _pair_problem(pair: AssociativePair) -> str | None:
    if pair.language not in LANGUAGES:
        return f'language {pair.language!r}'
    if pair.kind not in HOP_KINDS:
        return f'kind {pair.kind!r} is not one of {", ".join(HOP_KINDS)}'
    if pair.needle.count(NAME_PLACEHOLDER) != 1:
        return f'the needle must hold {NAME_PLACEHOLDER} exactly once'
    if NAME_PLACEHOLDER in pair.question or NAME_PLACEHOLDER in pair.distractor:
        return f'{NAME_PLACEHOLDER} belongs in the needle only'
    if not pair.target_forms or not pair.needle_terms:
        return 'target_forms and needle_terms must not be empty'
    # The question names the target, and so does the distractor: that is what makes the distractor literal.
    for field in ('question', 'distractor'):
        if not any(form.casefold() in getattr(pair, field).casefold() for form in pair.target_forms):
            return f'the {field} names none of the target forms'
    return None


# --- the lexical-overlap rule --------------------------------------------------------------------------------------


def overlap(pair: AssociativePair) -> set[str]:
    """What the needle (name masked) and the question share; empty for a truly associative pair.

    English: question words matching a needle word (case-folded, accents ignored, stop words aside, same 5-letter
    stem or inflection counts). Chinese: shared character bigrams, function bigrams aside.
    """
    return shared_terms(pair.needle.replace(NAME_PLACEHOLDER, ' '), pair.question, language=pair.language)


def shared_terms(first: str, second: str, *, language: Language) -> set[str]:
    """The terms of ``second`` that ``first`` shares by the overlap rule of ``language`` (see ``overlap``)."""
    check_language(language)
    if language == 'zh':
        return _bigrams(first) & _bigrams(second)
    first_words = _content_words(first)
    return {word for word in _content_words(second) if any(_same_word(word, other) for other in first_words)}


def _content_words(text: str) -> set[str]:
    # Accents stripped so that "Marquez" and "Márquez" are one word.
    plain = ''.join(c for c in unicodedata.normalize('NFKD', text.casefold()) if not unicodedata.combining(c))
    words = set()
    for word in _ENGLISH_WORD.findall(plain):
        word = re.sub(r"['’]s$", '', word)
        if word not in ENGLISH_STOP_WORDS:
            words.add(word)
    return words


def _same_word(first: str, second: str) -> bool:
    if first == second:
        return True
    if min(len(first), len(second)) >= STEM_LENGTH:
        return first[:STEM_LENGTH] == second[:STEM_LENGTH]
    shorter, longer = sorted((first, second), key=len)
    return len(shorter) >= MIN_PREFIX_LENGTH and longer.startswith(shorter)


def _bigrams(text: str) -> set[str]:
    # Bigrams inside runs of Chinese characters only: punctuation and a masked name break a run.
    grams = {run[i : i + 2] for run in _CJK_RUN.findall(text) for i in range(len(run) - 1)}
    return grams - CHINESE_FUNCTION_BIGRAMS


# --- corpus check --------------------------------------------------------------------------------------------------


def check_corpus(text: str, *, language: Language) -> CorpusCheck:
    """Which names and pairs of ``language`` a corpus already contains, in one pass over the text.

    English terms match case-insensitively as whole words ("Dresden" does not match "Dresdener"), the words of a
    phrase separated by any whitespace or ASCII punctuation ("Moby Dick" matches "Moby-Dick"); Chinese terms match as
    substrings with whitespace removed (a line break can split a word).
    About 1 s for 10 MB of English text and 0.2 s for 10 MB of Chinese on a loaded 2-core machine.
    """
    check_language(language)
    if not isinstance(text, str):
        raise NiahConfigError('corpus', f'must be text, not {type(text).__name__}')
    if len(text) > MAX_CORPUS_CHARS:
        raise NiahConfigError('corpus', f'{len(text):,} characters is over the limit of {MAX_CORPUS_CHARS:,}')
    return _check_corpus_cached(text, language)


@functools.lru_cache(maxsize=4)
def _check_corpus_cached(text: str, language: Language) -> CorpusCheck:
    # Cached because pick_pairs() checks the same corpus once per cell; Python caches a str's hash, so a hit is cheap.
    contains = _chinese_matcher(text) if language == 'zh' else _english_matcher(text)
    names_found = tuple(name for name in names(language) if contains(name))
    pairs_found = {}
    for pair in load_pairs(language):
        found = tuple(term for term in pair.search_terms() if contains(term))
        if found:
            pairs_found[pair.id] = found
    return CorpusCheck(language=language, names_found=names_found, pairs_found=MappingProxyType(pairs_found))


def _english_matcher(text: str) -> Callable[[str], bool]:
    # A str.find per term costs a full scan each (about 3 s for 160 terms over 10 MB, measured), and a regex
    # alternation of the terms as much; the set of the corpus's words costs one scan, then every lookup is O(1).
    # Bytes make that scan fast: lower() and translate() are C table lookups. Every ASCII byte that is not a letter or
    # digit becomes a space; bytes of non-ASCII characters stay, so such tokens are split again below.
    data = text.encode('utf-8', 'surrogatepass').lower().translate(_ASCII_NON_WORD_TO_SPACE)
    words: set[str] = set()
    for token in set(data.split()):
        if token.isascii():
            words.add(token.decode('ascii'))
        else:
            words.update(_WORD.findall(token.decode('utf-8', 'surrogatepass').casefold()))

    def contains(term: str) -> bool:
        term_words = _WORD.findall(term.casefold())
        if not term_words or not all(word in words for word in term_words):
            return False
        # A phrase whose words all occur somewhere: confirm them adjacent. The pattern starts with a literal, so the
        # regex engine scans for it at C speed (a case-insensitive pattern on the str took 0.5 s a phrase).
        pattern = re.compile(b' +'.join(re.escape(word.encode('utf-8')) for word in term_words))
        return any(
            _word_boundary_before(data, match.start()) and _word_boundary_after(data, match.end())
            for match in pattern.finditer(data)
        )

    return contains


def _word_boundary_before(data: bytes, start: int) -> bool:
    if start == 0 or data[start - 1] < 128:
        return start == 0 or data[start - 1] == 32  # ASCII letters and digits are the only ASCII bytes left
    # A non-ASCII character ends here: find its first byte (UTF-8 continuation bytes are 0b10xxxxxx).
    first = start - 1
    while first > 0 and start - first < 4 and data[first] & 0xC0 == 0x80:
        first -= 1
    return not data[first:start].decode('utf-8', 'replace').isalnum()


def _word_boundary_after(data: bytes, end: int) -> bool:
    if end == len(data) or data[end] < 128:
        return end == len(data) or data[end] == 32
    length = 2 if data[end] < 0xE0 else 3 if data[end] < 0xF0 else 4
    return not data[end : end + length].decode('utf-8', 'replace').isalnum()


def _chinese_matcher(text: str) -> Callable[[str], bool]:
    # One regex alternation of every term, longest first: Chinese terms start with rare characters, so the regex
    # engine's first-character filter skips almost every position (0.2 s for 17 MB, measured).
    squashed = ''.join(text.split())
    terms = {''.join(term.split()) for term in _chinese_terms()}
    pattern = re.compile('|'.join(re.escape(term) for term in sorted(terms, key=len, reverse=True)))
    matched: set[str] = set()
    for match in pattern.finditer(squashed):
        matched.add(match.group())
        # finditer resumes after a match, so re-try inside it for a term that starts there (overlapping terms).
        for position in range(match.start() + 1, match.end()):
            inner = pattern.match(squashed, position)
            if inner:
                matched.add(inner.group())

    def contains(term: str) -> bool:
        term = ''.join(term.split())
        # A term inside a longer matched term is present too ("故宫" inside "故宫博物院").
        return any(term in found for found in matched)

    return contains


@functools.cache
def _chinese_terms() -> tuple[str, ...]:
    return (*names('zh'), *(term for pair in load_pairs('zh') for term in pair.search_terms()))


# --- picking -------------------------------------------------------------------------------------------------------


def pick_pairs(
    *, language: Language, seed: int, count: int, cell: int = 0, corpus_text: str | None = None
) -> list[tuple[AssociativePair, str]]:
    """``count`` (pair, name) samples for one grid cell.

    The pairs follow one permutation of the set fixed by ``seed``; cell ``cell`` takes the ``count`` pairs starting
    at position ``cell * count``, wrapping around. So a cell's pairs differ (while ``count`` <= the set), and
    consecutive cells walk the whole set: ``len(set)`` cells of one sample cover every pair. Names are picked per
    sample, distinct within a cell while there are enough. With ``corpus_text``, names and pairs that the corpus
    contains (``check_corpus``) are left out.
    """
    check_language(language)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise NiahConfigError('seed', f'must be an integer, not {seed!r}')
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_PICK_COUNT:
        raise NiahConfigError('count', f'must be an integer between 1 and {MAX_PICK_COUNT}, got {count!r}')
    if isinstance(cell, bool) or not isinstance(cell, int) or cell < 0:
        raise NiahConfigError('cell', f'must be a non-negative integer, got {cell!r}')

    pairs = load_pairs(language)
    pool_names = names(language)
    if corpus_text is not None:
        check = check_corpus(corpus_text, language=language)
        pairs, pool_names = check.usable_pairs(), check.usable_names()
        if not pairs or not pool_names:
            what = 'pair' if not pairs else 'character name'
            raise NiahConfigError(
                'corpus',
                f'contains every shipped {language!r} {what}; none is left to pick: ' + '; '.join(check.messages()),
            )

    # String seeds are hashed with SHA-512 by random.seed: the same picks on every platform and PYTHONHASHSEED.
    order = list(pairs)
    random.Random(f'{seed}:{language}:associative-pairs').shuffle(order)
    start = cell * count
    chosen = [order[(start + offset) % len(order)] for offset in range(count)]

    name_rng = random.Random(f'{seed}:{language}:{cell}:associative-names')
    if count <= len(pool_names):
        picked_names = name_rng.sample(pool_names, count)
    else:
        picked_names = [name_rng.choice(pool_names) for _ in range(count)]
    return list(zip(chosen, picked_names, strict=True))
