"""Text as the rules see it: normalisation, word and CJK units, a needle's fact units, where a key occurs."""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from ..languages import CJK, CJK_CHAR, EN_SENTENCE_MARKS, ZH_SENTENCE_MARKS
from ..vocabulary import check_language
from .bounds import MAX_SCAN_CHARS

# Small on purpose: only words that carry no retrievable fact. Includes contraction tails ("it's" -> "it", "s")
# and "one" ("X is one of the ingredients" is the usual multi-needle phrasing).
EN_STOPWORDS = frozenset(
    """
    a an the and or but nor so yet if then than that this these those there here
    is am are was were be been being do does did done doing have has had having
    i me my mine we us our you your he him his she her it its they them their
    what which who whom whose when where why how
    of in on at to for from by with about into onto over under as up down out off
    not no yes all any some each every both either neither also too very just only one ones
    can could will would shall should may might must
    s t d ll re ve m
    """.split()  # noqa: SIM905 - a word block reads better than a 110-item literal
)

# Chinese function characters that say nothing about the fact itself ("的", "是", ...).
ZH_FUNCTION_CHARS = frozenset('的是了就也都着吗呢吧啊之和与在')

EN_WORD = re.compile(r'[^\W_]+')
# Chinese text: every CJK character is a unit; runs of other letters/digits ("GPT4", "2023") form one unit.
ZH_UNIT = re.compile(f'[{CJK}]|[^\\W_{CJK}]+')


# A sentence end in an answer: any strong mark of either language (answers mix them) or a line break, whitespace or
# not after it (models write '4821937.It is').
ANSWER_SENTENCE_END = re.compile(f'[{re.escape(EN_SENTENCE_MARKS)}{ZH_SENTENCE_MARKS}\\n]')


def normalise(text: str) -> str:
    """Called on an answer (and on what it is compared with) before any span or share is looked up: the text as the
    rules compare it, full-width characters folded to ASCII (NFKC) and case folded (``casefold``); indices into the
    result are what ``key_spans`` and ``cue_near`` use."""
    # NFKC folds full-width digits/letters ("２０２３") to ASCII so both sides compare equal.
    return unicodedata.normalize('NFKC', text).casefold()


@dataclass(frozen=True)
class ReadAnswer:
    """An answer as the rule ladders read it."""

    final: str  # the final answer (reasoning stripped by the caller), stripped of surrounding whitespace
    text: str  # its first MAX_SCAN_CHARS, normalised: where the ladders look for the keys and the cues


def read_answer(answer: str, *, language: str, keys: Sequence[str], keys_name: str) -> ReadAnswer | None:
    """The opening both rule ladders share (``single_needle.py``, ``candidates.py``): the language must be one the
    rules know, ``keys`` (named ``keys_name`` in the error) a sequence of strings, not one string (whose characters
    would each be a key); None when there is no final answer (``RuleScore.no_final_answer``)."""
    check_language(language)
    if isinstance(keys, str):
        raise TypeError(f'{keys_name} must be a sequence of strings, not a string')
    final = answer.strip()
    return ReadAnswer(final, normalise(final[:MAX_SCAN_CHARS])) if final else None


def stem(word: str) -> str:
    """Very light English stemming so "sandwiches"/"sandwich" and "cities"/"city" match.

    Applied to both sides, so the odd collision ("news"/"new") only matters if both forms occur.
    """
    if len(word) > 3 and word.endswith('s') and not word.endswith(('ss', 'us', 'is')):
        word = word[:-1]
    if len(word) > 3 and word.endswith('e'):
        word = word[:-1]
    if len(word) > 3 and word.endswith('y'):
        word = word[:-1] + 'i'
    return word


def en_words(text: str) -> list[str]:
    return EN_WORD.findall(normalise(text))


def en_facts(needle: str, question_stems: frozenset[str]) -> set[str]:
    content = [w for w in en_words(needle) if w not in EN_STOPWORDS]
    facts = {stem(w) for w in content} - question_stems
    if not facts:
        # The needle only restates the question (or is all stopwords): score on its own words instead of nothing.
        facts = {stem(w) for w in content} or {stem(w) for w in en_words(needle)}
    return facts


def zh_units(text: str) -> list[str]:
    return ZH_UNIT.findall(normalise(text))


def zh_fact_units(needle: str, excluded_chars: frozenset[str], excluded_words: frozenset[str]) -> set[str]:
    """Character bigrams of the needle's CJK runs left after removing excluded characters, plus non-CJK words.

    Bigrams instead of single characters: a wrong answer shares many single characters with the needle by chance
    ("三月二十一日" contains every character of "三月十二日"), but few bigrams. Removing a character splits the run,
    so no bigram spans a removed character; a run of one character counts as a unigram.
    """
    facts: set[str] = set()
    run: list[str] = []

    def flush() -> None:
        if len(run) == 1:
            facts.add(run[0])
        facts.update(a + b for a, b in itertools.pairwise(run))
        run.clear()

    for unit in zh_units(needle):
        if CJK_CHAR.fullmatch(unit):
            if unit in excluded_chars:
                flush()
            else:
                run.append(unit)
            continue
        flush()
        if unit not in excluded_words and unit not in EN_STOPWORDS:
            facts.add(unit)
    flush()
    return facts


def zh_facts(needle: str, question: str) -> set[str]:
    q_units = set(zh_units(question))
    q_chars = frozenset(u for u in q_units if CJK_CHAR.fullmatch(u))
    q_words = frozenset(q_units - q_chars)
    facts = zh_fact_units(needle, q_chars | ZH_FUNCTION_CHARS, q_words)
    if not facts:
        facts = zh_fact_units(needle, ZH_FUNCTION_CHARS, frozenset()) or zh_fact_units(needle, frozenset(), frozenset())
    return facts


def zh_present(fact: str, answer_norm: str, answer_words: set[str]) -> bool:
    if CJK_CHAR.match(fact):
        return fact in answer_norm
    return fact in answer_words


WHITESPACE = re.compile(r'\s+')


def en_key_spans(text: str, key: str) -> list[tuple[int, int]]:
    """Spans of ``text`` where the key's words occur in order with nothing but spaces/punctuation between them.

    Words compare after case folding and the light stemming (saffron/Saffron, sandwiches/sandwich)."""
    # CJK characters are single tokens, so a Latin or digit key is found inside Chinese text ('答案是Jack').
    key_words = [stem(w) for w in ZH_UNIT.findall(key)]
    if not key_words:
        return []
    words = [(m.start(), m.end(), stem(m.group())) for m in ZH_UNIT.finditer(text)]
    spans = []
    k = len(key_words)
    for i in range(len(words) - k + 1):
        if all(words[i + j][2] == key_words[j] for j in range(k)):
            spans.append((words[i][0], words[i + k - 1][1]))
    return spans


_ZH_KEEP = re.compile(f'[{CJK}]|[^\\W_]')


def zh_key_spans(text: str, key: str) -> list[tuple[int, int]]:
    """Spans of ``text`` holding the whole key, ignoring whitespace and punctuation on both sides (an entity must
    appear entire: 上海人工智能研究院 does not hold 上海人工智能实验室)."""
    kept = [(m.start(), m.group()) for m in _ZH_KEEP.finditer(text)]
    squeezed = ''.join(char for _, char in kept)
    needle = ''.join(_ZH_KEEP.findall(key))
    if not needle:
        return []
    spans = []
    start = squeezed.find(needle)
    while start != -1:
        spans.append((kept[start][0], kept[start + len(needle) - 1][0] + 1))
        start = squeezed.find(needle, start + 1)
    return spans


def key_spans(text: str, key: str) -> list[tuple[int, int]]:
    """Called by a rule to find the key in the answer: the (start, end) spans of ``text`` where ``key`` occurs, both
    already ``normalise``d (a key in another case or width is not found otherwise): whole words in English, the whole
    string in Chinese, whitespace and punctuation between its characters ignored; [] when absent."""
    return zh_key_spans(text, key) if CJK_CHAR.search(key) else en_key_spans(text, key)


def item_size(item: str, language: str) -> int:
    if language == 'zh' and CJK_CHAR.search(item):
        return len(CJK_CHAR.findall(item))
    return len(en_words(item))


def cjk_share(text: str) -> float:
    letters = [c for c in text[:MAX_SCAN_CHARS] if c.isalpha()]
    if not letters:
        return 0.0
    return sum(1 for c in letters if CJK_CHAR.match(c)) / len(letters)


def answer_size(text: str, language: str) -> int:
    return len(zh_units(text)) if language == 'zh' else len(en_words(text))


def key_share(final: str, key: str) -> float:
    """Share of the key's content units in the answer: English word stems minus stopwords, CJK character bigrams
    (unigram for a one-character run) plus other words. Measures paraphrase, never decides a pass alone."""
    text = final[:MAX_SCAN_CHARS]
    if CJK_CHAR.search(key):
        units = zh_fact_units(key, ZH_FUNCTION_CHARS, frozenset())
        tokens = zh_units(text)
        norm = ''.join(tokens)
        words = {u for u in tokens if not CJK_CHAR.fullmatch(u)}
        found = sum(1 for u in units if zh_present(u, norm, words))
    else:
        units = {stem(w) for w in en_words(key) if w not in EN_STOPWORDS} or {stem(w) for w in en_words(key)}
        stems = {stem(w) for w in en_words(text)}
        found = sum(1 for u in units if u in stems)
    return found / len(units) if units else 0.0
