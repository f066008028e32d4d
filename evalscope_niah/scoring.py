"""Rule-based scores for needle-in-a-haystack answers.

Pure Python and deterministic, so they run without a judge model and can be checked against it:

* ``needle_recall``: share of the needle's *fact* words found in the answer (the main rule score).
* ``levenshtein_score`` / ``keyword_score``: OpenCompass CDME-style string similarity, kept for comparability.
* ``multi_retrieval_scores``: recall/precision/F1 of several numeric needle values (multi-value retrieval).
* ``absent_control_score``: the needle-absent control cell, where the right answer is an abstention.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    'LANGUAGES',
    'RULE_PASS_THRESHOLD',
    'ControlScore',
    'MultiRetrievalScores',
    'RuleScores',
    'absent_control_score',
    'is_pass',
    'keyword_score',
    'levenshtein_score',
    'multi_retrieval_scores',
    'needle_recall',
    'rule_is_certain',
    'rule_scores',
    'strip_reasoning',
]

LANGUAGES: tuple[str, ...] = ('en', 'zh')

# A score at or above this counts as "found the needle" when comparing rule scores with judge verdicts.
RULE_PASS_THRESHOLD = 0.5
# Outside (_UNCERTAIN_LOW, _UNCERTAIN_HIGH) the rule score is trusted; in between the judge decides.
_UNCERTAIN_LOW = 0.1
_UNCERTAIN_HIGH = 0.9

# --- reasoning blocks --------------------------------------------------------------------------------------------

_THINK_BLOCK = re.compile(r'<\s*(think|thinking)\s*>.*?<\s*/\s*\1\s*>', re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r'<\s*(?:think|thinking)\s*>', re.IGNORECASE)
_THINK_CLOSE = re.compile(r'<\s*/\s*(?:think|thinking)\s*>', re.IGNORECASE)


def strip_reasoning(text: str) -> str:
    """Return only the final answer of a reasoning model's reply.

    ``<think>…</think>`` / ``<thinking>…</thinking>`` blocks are removed. A stray closing tag (chat templates that
    put the opening ``<think>`` into the prompt) keeps only the text after it. An opening tag that is never closed
    means the model ran out of tokens while thinking: everything from it on is dropped, so a reply that starts with
    an unclosed ``<think>`` has no final answer and yields ''.
    """
    text = _THINK_BLOCK.sub('', text)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    opened = _THINK_OPEN.search(text)
    if opened:
        text = text[: opened.start()]
    return text.strip()


# --- tokenisation ------------------------------------------------------------------------------------------------

# Small on purpose: only words that carry no retrievable fact. Includes contraction tails ("it's" -> "it", "s")
# and "one" ("X is one of the ingredients" is the usual multi-needle phrasing).
_EN_STOPWORDS = frozenset(
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
_ZH_FUNCTION_CHARS = frozenset('的是了就也都着吗呢吧啊之和与在')

_CJK = r'\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff'
_CJK_CHAR = re.compile(f'[{_CJK}]')
_EN_WORD = re.compile(r'[^\W_]+')
# Chinese text: every CJK character is a unit; runs of other letters/digits ("GPT4", "2023") form one unit.
_ZH_UNIT = re.compile(f'[{_CJK}]|[^\\W_{_CJK}]+')


def _normalise(text: str) -> str:
    # NFKC folds full-width digits/letters ("２０２３") to ASCII so both sides compare equal.
    return unicodedata.normalize('NFKC', text).casefold()


def _stem(word: str) -> str:
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


def _en_words(text: str) -> list[str]:
    return _EN_WORD.findall(_normalise(text))


def _en_facts(needle: str, question_stems: frozenset[str]) -> set[str]:
    content = [w for w in _en_words(needle) if w not in _EN_STOPWORDS]
    facts = {_stem(w) for w in content} - question_stems
    if not facts:
        # The needle only restates the question (or is all stopwords): score on its own words instead of nothing.
        facts = {_stem(w) for w in content} or {_stem(w) for w in _en_words(needle)}
    return facts


def _zh_units(text: str) -> list[str]:
    return _ZH_UNIT.findall(_normalise(text))


def _zh_fact_units(needle: str, excluded_chars: frozenset[str], excluded_words: frozenset[str]) -> set[str]:
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

    for unit in _zh_units(needle):
        if _CJK_CHAR.fullmatch(unit):
            if unit in excluded_chars:
                flush()
            else:
                run.append(unit)
            continue
        flush()
        if unit not in excluded_words and unit not in _EN_STOPWORDS:
            facts.add(unit)
    flush()
    return facts


def _zh_facts(needle: str, question: str) -> set[str]:
    q_units = set(_zh_units(question))
    q_chars = frozenset(u for u in q_units if _CJK_CHAR.fullmatch(u))
    q_words = frozenset(q_units - q_chars)
    facts = _zh_fact_units(needle, q_chars | _ZH_FUNCTION_CHARS, q_words)
    if not facts:
        facts = _zh_fact_units(needle, _ZH_FUNCTION_CHARS, frozenset()) or _zh_fact_units(
            needle, frozenset(), frozenset()
        )
    return facts


def _zh_present(fact: str, answer_norm: str, answer_words: set[str]) -> bool:
    if _CJK_CHAR.match(fact):
        return fact in answer_norm
    return fact in answer_words


def _check_language(language: str) -> None:
    if language not in LANGUAGES:
        raise ValueError(f'language must be one of {LANGUAGES!r}, got {language!r}')


def _length_penalty(answer_len: int, needle_len: int) -> float:
    """Factor <= 1 that scales recall down for answers much longer than the needle (pasted context)."""
    allowed = max(3 * needle_len, needle_len + 40)
    return 1.0 if answer_len <= allowed else allowed / answer_len


def needle_recall(answer: str, *, needles: Sequence[str], question: str, language: str) -> float:
    """Share of the needles' fact units that the answer contains, in [0, 1].

    Fact units are the needle's content words (English: lowercase word tokens minus stopwords; Chinese: character
    bigrams, see ``_zh_fact_units``) minus whatever the question already says, so echoing the question earns
    nothing. Recall is over the union of all needles' fact units. Answers longer than
    ``max(3 × needle length, needle length + 40)`` units (words for English, characters for Chinese) are scaled by
    ``allowed / answer length``, so pasting the context back does not earn full marks.
    """
    _check_language(language)
    if isinstance(needles, str):
        # A bare string would silently be read as one needle per character.
        raise TypeError('needles must be a sequence of strings, not a string')
    if not needles:
        raise ValueError('needles must not be empty')

    if language == 'en':
        q_stems = frozenset(_stem(w) for w in _en_words(question))
        facts: set[str] = set().union(*(_en_facts(n, q_stems) for n in needles))
        answer_tokens = _en_words(answer)
        answer_stems = {_stem(w) for w in answer_tokens}
        found = sum(1 for f in facts if f in answer_stems)
        needle_len = sum(len(_en_words(n)) for n in needles)
    else:
        facts = set().union(*(_zh_facts(n, question) for n in needles))
        answer_tokens = _zh_units(answer)
        answer_norm = ''.join(answer_tokens)  # drops whitespace/punctuation so bigrams match across them
        answer_words = {u for u in answer_tokens if not _CJK_CHAR.fullmatch(u)}
        found = sum(1 for f in facts if _zh_present(f, answer_norm, answer_words))
        needle_len = sum(len(_zh_units(n)) for n in needles)

    if not facts or not answer_tokens:
        return 0.0
    return found / len(facts) * _length_penalty(len(answer_tokens), needle_len)


# --- CDME-style string scores ------------------------------------------------------------------------------------

_WHITESPACE = re.compile(r'\s+')


def _edit_distance(a: str, b: str) -> int:
    """Levenshtein distance with two rows: O(len(a)·len(b)) time, O(min) memory."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def levenshtein_score(answer: str, reference: str) -> float:
    """OpenCompass CDME score: ``1 − edit_distance / max(len)`` over characters with all whitespace removed.

    Both empty → 1.0 (identical strings, as CDME's ``max_len == 0`` branch); an empty answer to a non-empty
    reference → 0.0. Answers longer than ``4 × len(reference) + 200`` are truncated before the quadratic edit
    distance (a pasted context would otherwise cost seconds per sample); the cut tail is then charged as deletions,
    so the result is a lower bound that is exact when the answer starts with the reference and is at most
    ``len(reference) / len(answer)`` (near 0) in any case.
    """
    a = _WHITESPACE.sub('', answer)
    r = _WHITESPACE.sub('', reference)
    longest = max(len(a), len(r))
    if longest == 0:
        return 1.0
    cap = 4 * len(r) + 200
    distance = _edit_distance(a[:cap], r) + max(0, len(a) - cap)
    return max(0.0, 1.0 - distance / longest)


def keyword_score(answer: str, *, keyword: str, reference: str) -> float:
    """CDME reasoning-needle score: 1.0 if the keyword occurs in the answer, else ``0.2 × levenshtein_score``.

    The keyword match ignores case and all whitespace. Unlike CDME's plain substring test, a keyword that starts or
    ends with a Latin letter or digit must not run on into another one there: 'Jackie' (the essays' corpus has one)
    does not answer 'Jack'. Callers strip reasoning first (see ``rule_scores``).
    """
    key = _WHITESPACE.sub('', keyword).casefold()
    if not key:
        raise ValueError('keyword must contain a non-whitespace character')
    pattern = r'\s*'.join(re.escape(character) for character in key)
    if _WORD_CHARACTER.match(key[0]):
        pattern = r'(?<![a-z0-9])' + pattern
    if _WORD_CHARACTER.match(key[-1]):
        pattern += r'(?![a-z0-9])'
    if re.search(pattern, answer.casefold()):
        return 1.0
    return 0.2 * levenshtein_score(answer, reference)


_WORD_CHARACTER = re.compile(r'[a-z0-9]')


# --- combined ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RuleScores:
    recall: float
    levenshtein: float


def rule_scores(answer: str, *, needles: Sequence[str], question: str, language: str) -> RuleScores:
    """Both rule scores on the final answer only (reasoning stripped); the Levenshtein reference is the needles
    joined by newlines."""
    final = strip_reasoning(answer)
    return RuleScores(
        recall=needle_recall(final, needles=needles, question=question, language=language),
        levenshtein=levenshtein_score(final, '\n'.join(needles)),
    )


def is_pass(score: float) -> bool:
    """Binarise a score in [0, 1] (rule or judge accuracy) for judge/rule agreement."""
    return score >= RULE_PASS_THRESHOLD


def rule_is_certain(recall: float) -> bool:
    """True when the recall is clear enough that the ``llm_recall`` strategy can skip the judge."""
    return recall >= _UNCERTAIN_HIGH or recall <= _UNCERTAIN_LOW


# --- multi-value retrieval ---------------------------------------------------------------------------------------

_DIGIT_RUN = re.compile(r'[0-9]+')
# One character between digit groups that may be a thousands separator: '4,821,937', '4 821 937', "4'821'937".
_GROUP_SEPARATORS = frozenset(",. '_\u00a0\u2009\u202f")


@dataclass(frozen=True)
class MultiRetrievalScores:
    recall: float  # share of the needle values found in the answer
    precision: float  # share of the distinct candidate values the answer gives that are needle values
    f1: float
    found: tuple[str, ...]  # needle values found, in needle order


def _digit_chains(text: str) -> list[list[re.Match[str]]]:
    """Maximal digit runs, grouped into chains of runs joined by exactly one separator character."""
    chains: list[list[re.Match[str]]] = []
    for run in _DIGIT_RUN.finditer(text):
        if chains:
            last = chains[-1][-1]
            gap = text[last.end() : run.start()]
            if len(gap) == 1 and gap in _GROUP_SEPARATORS:
                chains[-1].append(run)
                continue
        chains.append([run])
    return chains


def _is_grouped(text: str, chain: Sequence[re.Match[str]]) -> bool:
    """True when the chain reads as one number with thousands separators: '4,821,937', not '4821937,1234567'."""
    if len(chain) < 2 or not 1 <= len(chain[0].group()) <= 3:
        return False
    if any(len(run.group()) != 3 for run in chain[1:]):
        return False
    separators = {text[a.end() : b.start()] for a, b in itertools.pairwise(chain)}
    return len(separators) == 1


def _number_candidates(text: str, lengths: frozenset[int]) -> set[str]:
    """Distinct numbers in the text whose digit count is one of ``lengths``.

    A chain such as '4,821,937' is merged into '4821937' only when it is a well-formed grouping (first group of
    1-3 digits, then groups of exactly 3, one separator throughout) *and* the merged number has a wanted length;
    otherwise its runs count separately, so '4821937, 1234567' or '123 456' with 3-digit values stay two numbers.
    """
    candidates: set[str] = set()
    for chain in _digit_chains(text):
        merged = ''.join(run.group() for run in chain)
        if _is_grouped(text, chain) and len(merged) in lengths:
            candidates.add(merged)
            continue
        candidates.update(run.group() for run in chain if len(run.group()) in lengths)
    return candidates


def multi_retrieval_scores(answer: str, *, values: Sequence[str]) -> MultiRetrievalScores:
    """Recall, precision and F1 of the needle values (digit strings) that the final answer states.

    Candidates are the distinct numbers in the answer (reasoning stripped, full-width digits folded) that have the
    length of some needle value, so counts such as '3 numbers' are ignored. Precision is over those candidates:
    listing guessed numbers alongside the right ones lowers it, so enumerating every number seen is not rewarded.
    A number glued into a longer digit run ('48219371234567') does not count.
    """
    if isinstance(values, str):
        raise TypeError('values must be a sequence of strings, not a string')
    wanted = tuple(dict.fromkeys(unicodedata.normalize('NFKC', v).strip() for v in values))
    if not wanted:
        raise ValueError('values must not be empty')
    bad = [v for v in wanted if not _DIGIT_RUN.fullmatch(v)]
    if bad:
        raise ValueError(f'values must be digit strings, got {bad!r}')

    final = unicodedata.normalize('NFKC', strip_reasoning(answer))
    candidates = _number_candidates(final, frozenset(len(v) for v in wanted))
    found = tuple(v for v in wanted if v in candidates)
    recall = len(found) / len(wanted)
    precision = len(found) / len(candidates) if candidates else 0.0
    f1 = 2 * precision * recall / (precision + recall) if found else 0.0
    return MultiRetrievalScores(recall=recall, precision=precision, f1=f1, found=found)


# --- needle-absent control ---------------------------------------------------------------------------------------

_DOC_NOUN = r'(?:document|text|essays?|passages?|context|article|material|excerpts?|source)'
_EN_ABSTAIN = re.compile(
    '|'.join(
        (
            # "does not mention", "doesn't explicitly say", "did not seem to provide"
            r"\b(?:does|do|did)(?:\s+not|n't)\s+(?:\w+\s+){0,2}?"
            r'(?:mention|say|contain|state|provide|include|specify|discuss|indicate|give|reference|address|reveal'
            r'|describe|talk|tell)',
            # "is not mentioned", "isn't explicitly stated", "was not found"
            r"(?:\bnot|n't)\s+(?:\w+\s+)?"
            r'(?:mentioned|stated|provided|found|specified|given|included|discussed|described|addressed|indicated)\b',
            rf"(?:\bnot|n't)\s+(?:present|available|contained)\s+in\s+the\s+(?:\w+\s+)?{_DOC_NOUN}\b",
            # "no information", "no specific mention", "no details"
            r'\bno\s+(?:\w+\s+)?(?:information|mention|details?|data|reference|indication|record|evidence|idea)\b',
            r"\b(?:cannot|can't|can\s+not|could\s+not|couldn't|unable\s+to|not\s+able\s+to)\s+(?:\w+\s+)?"
            r'(?:find|determine|answer|locate|identify|tell|say|know|provide|confirm)\b',
            # "there is no ..." except the assertive "there is no doubt/question that ..."
            r"\bthere\s+(?:is|are|was|were|'s)\s+(?:no|nothing)\b(?!\s+(?:doubt|question)\b)",
            rf'\bnowhere\s+in\s+the\s+(?:\w+\s+)?{_DOC_NOUN}\b',
            rf'\bnone\s+of\s+the\s+(?:\w+\s+)?{_DOC_NOUN}',
            r"\bi\s+(?:do\s+not|don't)\s+know\b",
            r'\bunknown\b',
        )
    ),
    re.IGNORECASE,
)
_ZH_ABSTAIN = re.compile(
    '|'.join(
        (
            r'(?:没有|没|未曾|未能|未|并未|并没有|没能)(?:明确|具体|直接)?'
            r'(?:提到|提及|涉及|说明|给出|找到|记载|描述|指出|透露|表明|显示|包含|写到|讲到|说到|说)',
            r'(?:没有|无)(?:任何)?(?:相关|有关)的?(?:信息|内容|资料|记录|描述|说明)',
            r'没有关于',
            r'(?:文中|文章中?|文本中?|文档中?|原文中?|材料中?|上文中?|全文)并?(?:没有|未|无)',
            r'无法(?:回答|确定|找到|得知|判断|获知|知道|获取|确认|给出|提供)',
            r'不知道|不清楚|找不到|不得而知|无从得知|未知',
        )
    )
)


@dataclass(frozen=True)
class ControlScore:
    abstained: bool  # the answer says the document does not contain the information
    guessed: bool  # the answer states the needle's fact anyway (prior knowledge or invention)
    score: float  # 1.0 iff abstained and not guessed, else 0.0


def _abstains(final: str) -> bool:
    # Both languages' phrases whatever the prompt language: models often reply in English to a Chinese prompt.
    text = unicodedata.normalize('NFKC', final).replace('\u2019', "'")
    return bool(_EN_ABSTAIN.search(text) or _ZH_ABSTAIN.search(text))


def _states(final: str, fact: str, *, language: str) -> bool:
    """True when ``fact`` occurs in the answer, ignoring case and whitespace.

    English compares with whitespace runs collapsed and requires word edges, so '42' is not found in '2042';
    Chinese has no word edges, so all whitespace is removed and any substring counts.
    """
    text, key = _normalise(final), _normalise(fact)
    if language == 'zh':
        key = _WHITESPACE.sub('', key)
        return bool(key) and key in _WHITESPACE.sub('', text)
    key = _WHITESPACE.sub(' ', key).strip()
    if not key:
        return False
    pattern = r'(?<![^\W_])' + re.escape(key).replace(r'\ ', r'\s+') + r'(?![^\W_])'
    return re.search(pattern, text) is not None


def absent_control_score(answer: str, *, language: str, needle_answers: Sequence[str]) -> ControlScore:
    """Score a reply for the needle-absent control cell, where the right answer is that the document does not say.

    ``abstained``: the final answer (reasoning stripped) has an abstention phrase ("does not mention", "no
    information", "无法回答", ...). ``guessed``: it states one of ``needle_answers`` anyway, which also catches
    "The document does not mention it, but ..." hedges. The score is 1.0 only for a clean abstention.
    """
    _check_language(language)
    if isinstance(needle_answers, str):
        raise TypeError('needle_answers must be a sequence of strings, not a string')
    final = strip_reasoning(answer)
    abstained = _abstains(final)
    guessed = any(_states(final, fact, language=language) for fact in needle_answers)
    return ControlScore(abstained=abstained, guessed=guessed, score=1.0 if abstained and not guessed else 0.0)
