"""Rule-based scores for needle-in-a-haystack answers.

Pure Python and deterministic, so they run without a judge model and can be checked against it:

* ``needle_recall``: share of the needle's *fact* words found in the answer (the main rule score).
* ``levenshtein_score`` / ``keyword_score``: OpenCompass CDME-style string similarity, kept for comparability.
* ``multi_retrieval_scores``: recall/precision/F1 of several numeric needle values (multi-value retrieval).
* ``absent_control_score``: the needle-absent control cell, where the right answer is an abstention.
* ``score_single`` / ``score_multi`` / ``score_reasoning`` / ``score_control``: one entry point per task, each
  returning a ``RuleVerdict`` (score, ``certain``, an explanation and flags). ``certain`` False hands the answer to a
  judge (negation or hedge near the fact, paraphrase, other language, pasted text); its score never passes.
"""

from __future__ import annotations

import collections
import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from .vocabulary import LANGUAGES

__all__ = [
    'CERTAIN_PASS',
    'LANGUAGES',
    'RULE_PASS_THRESHOLD',
    'UNCERTAIN_SCORE_CAP',
    'ControlScore',
    'MultiRetrievalScores',
    'Paste',
    'PromptText',
    'RuleScores',
    'RuleVerdict',
    'absent_control_score',
    'chain_candidates',
    'keyword_score',
    'levenshtein_score',
    'multi_retrieval_scores',
    'needle_recall',
    'paste_evidence',
    'reasoning_answer_score',
    'rule_is_certain',
    'rule_scores',
    'score_control',
    'score_multi',
    'score_reasoning',
    'score_single',
    'single_needle_score',
    'strip_reasoning',
]


# A score at or above this counts as "found the needle" when comparing rule scores with judge verdicts.
RULE_PASS_THRESHOLD = 0.5
# Outside (_UNCERTAIN_LOW, CERTAIN_PASS) the rule score is trusted; in between the judge decides. A reply cut by
# the token limit whose recall reaches CERTAIN_PASS already holds the needle's facts (the adapter scores it).
_UNCERTAIN_LOW = 0.1
CERTAIN_PASS = 0.9

# --- reasoning blocks --------------------------------------------------------------------------------------------

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


def needle_recall(
    answer: str, *, needles: Sequence[str], question: str, language: str, penalise_length: bool = True
) -> float:
    """Share of the needles' fact units that the answer contains, in [0, 1].

    Fact units are the needle's content words (English: lowercase word tokens minus stopwords; Chinese: character
    bigrams, see ``_zh_fact_units``) minus whatever the question already says, so echoing the question earns
    nothing. Recall is over the union of all needles' fact units. Answers longer than
    ``max(3 × needle length, needle length + 40)`` units (words for English, characters for Chinese) are scaled by
    ``allowed / answer length``, so pasting the context back does not earn full marks; ``penalise_length`` False
    leaves that to the caller (the verdicts measure a paste by evidence, see ``paste_evidence``).
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
    penalty = _length_penalty(len(answer_tokens), needle_len) if penalise_length else 1.0
    return found / len(facts) * penalty


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


def rule_is_certain(recall: float) -> bool:
    """True when the recall is clear enough that the ``llm_recall`` strategy can skip the judge."""
    return recall >= CERTAIN_PASS or recall <= _UNCERTAIN_LOW


# --- multi-value retrieval ---------------------------------------------------------------------------------------

_DIGIT_RUN = re.compile(r'[0-9]+')
# One character between digit groups that may be a thousands separator: '4,821,937', '4 821 937', "4'821'937".
_GROUP_SEPARATORS = frozenset(",. '_\u00a0\u2009\u202f")


@dataclass(frozen=True)
class MultiRetrievalScores:
    recall: float  # share of the needle values found in the answer
    precision: float  # share of the candidate numbers that are needle values, times ``length_factor``
    f1: float
    found: tuple[str, ...]  # needle values found, in needle order
    wrong: tuple[str, ...] = ()  # candidate numbers that are not needle values (distractors included), sorted
    distractors_named: tuple[str, ...] = ()  # the distractor values among ``wrong``
    length_factor: float = 1.0  # <= 1: the share of the answer not pasted from the prompt (see ``paste_evidence``)
    explanation: str = field(default='', compare=False)

    @property
    def score(self) -> float:
        """recall x precision: stricter than F1 on number dumps (F1 of a dump of 1 value and 3 distractors is 0.4,
        this is 0.25), and 1.0 only for every value and nothing else."""
        return self.recall * self.precision


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


def _digit_values(values: Sequence[str], param: str) -> tuple[str, ...]:
    if isinstance(values, str):
        raise TypeError(f'{param} must be a sequence of strings, not a string')
    cleaned = tuple(dict.fromkeys(unicodedata.normalize('NFKC', v).strip() for v in values))
    bad = [v for v in cleaned if not _DIGIT_RUN.fullmatch(v)]
    if bad:
        raise ValueError(f'{param} must be digit strings, got {bad!r}')
    return cleaned


def multi_retrieval_scores(
    answer: str,
    *,
    values: Sequence[str],
    distractor_values: Sequence[str] = (),
    reference: str | None = None,
    needles: Sequence[str] = (),
    question: str = '',
    language: str = 'en',
    prompt: PromptText | None = None,
) -> MultiRetrievalScores:
    """Recall, precision and F1 of the needle values (digit strings) that the final answer states.

    Candidates are the distinct numbers in the answer (reasoning stripped, full-width digits folded) that have the
    length of some needle or distractor value, so counts such as '3 numbers' are ignored. Precision is over those
    candidates: a distractor value (the same kind of fact for another key, placed in the haystack) or any other
    number of that length is wrong, so enumerating every number seen is not rewarded. A number glued into a longer
    digit run ('48219371234567') does not count. An answer that pastes the prompt (``paste_evidence``: verbatim
    runs of the haystack beyond the needles and question) has its precision scaled by the share of it that is not
    pasted (a pasted context states every value and no other); without ``prompt`` only the last-resort length
    bound scales it. ``reference`` defaults to the values joined by ', '.
    """
    wanted = _digit_values(values, 'values')
    if not wanted:
        raise ValueError('values must not be empty')
    distractors = frozenset(_digit_values(distractor_values, 'distractor_values')) - set(wanted)
    reference = ', '.join(wanted) if reference is None else reference

    final = unicodedata.normalize('NFKC', strip_reasoning(answer))
    lengths = frozenset(len(v) for v in (*wanted, *distractors))
    candidates = _number_candidates(final, lengths)
    found = tuple(v for v in wanted if v in candidates)
    wrong = tuple(sorted(candidates - set(wanted)))
    named = tuple(v for v in wrong if v in distractors)
    paste = paste_evidence(
        final, allowed=(*needles, question, reference, *wanted), prompt=prompt, language=language, reference=reference
    )
    factor = paste.factor
    recall = len(found) / len(wanted)
    precision = len(found) / len(candidates) * factor if candidates else 0.0
    f1 = 2 * precision * recall / (precision + recall) if found else 0.0
    parts = [f'{len(found)} of {len(wanted)} values stated']
    if wrong:
        parts.append(f'{len(wrong)} wrong number(s) ({len(named)} distractor value(s) of other keys)')
    if factor < 1.0:
        parts.append(f'{paste.describe(language)} (precision x {factor:.2f})')
    if not candidates:
        parts.append("no number of the values' length in the answer")
    return MultiRetrievalScores(
        recall=recall,
        precision=precision,
        f1=f1,
        found=found,
        wrong=wrong,
        distractors_named=named,
        length_factor=factor,
        explanation='; '.join(parts),
    )


# --- needle-absent control ---------------------------------------------------------------------------------------

_DOC_NOUN = r'(?:documents?|texts?|essays?|passages?|context|articles?|materials?|excerpts?|sources?|story|book)'
# Every pattern is a literal-led alternation with at most one or two bounded '\w+\s+' hops, so matching is linear.
_EN_ABSTAIN = re.compile(
    '|'.join(
        (
            # "does not mention", "doesn't explicitly say", "did not seem to provide", "doesn't appear to mention"
            r"\b(?:does|do|did)(?:\s+not|n't)\s+(?:\w+\s+){0,2}?"
            r'(?:mention|say|contain|state|provide|include|specify|discuss|indicate|give|reference|address|reveal'
            r'|describe|talk|tell|have|hold|cover)\b',
            # "is not mentioned", "isn't explicitly stated", "was not found", "cannot be determined"
            r"(?:\bnot|\bcannot|n't)\s+(?:\w+\s+)?"
            r'(?:mentioned|stated|provided|found|specified|given|included|discussed|described|addressed|indicated'
            r'|determined|answered|known|inferred|covered|available|present|contained|possible)\b',
            rf"(?:\bnot|n't)\s+(?:in|part\s+of|from)\s+the\s+(?:\w+\s+)?{_DOC_NOUN}\b",
            # "no information", "no specific mention", "no details", "no idea", "no answer"
            r'\bno\s+(?:\w+\s+)?(?:information|info|mention|details?|data|reference|indication|record|evidence|idea'
            r'|answer|clue|way\s+to\s+(?:know|tell|determine))\b',
            r'\bmakes?\s+no\s+(?:\w+\s+)?mention\b',
            r"\b(?:cannot|can't|can\s+not|could\s+not|couldn't|unable\s+to|not\s+able\s+to)\s+(?:\w+\s+)?"
            r'(?:find|determine|answer|locate|identify|tell|say|know|provide|confirm|help|see|assist)\b',
            # "there is no ..." except the assertive "there is no doubt/question that ..."
            r"\bthere\s+(?:is|are|was|were|'s)\s+(?:no|nothing)\b(?!\s+(?:doubt|question)\b)",
            rf'\bnowhere\s+in\s+the\s+(?:\w+\s+)?{_DOC_NOUN}\b',
            rf'\bnone\s+of\s+the\s+(?:\w+\s+)?{_DOC_NOUN}',
            r"\bi\s+(?:do\s+not|don't|dont)\s+know\b",
            r"\b(?:i'm|i\s+am)\s+not\s+(?:sure|certain)\b",
            r'\b(?:insufficient|not\s+enough)\s+(?:information|context|data|details)\b',
            r'\b(?:says|said|say)\s+nothing\b',
            r'\bsilent\s+(?:on|about)\b',
            r'\b(?:absent|missing)\s+from\b',
            r'\b(?:unknown|unanswerable|undetermined|unspecified|unclear)\b',
            r'\bdoes\s+not\s+appear\b|\bdoesn\'t\s+appear\b',
            r'^\W{0,3}(?:none|n/?a|no\s+answer)\W{0,3}$',
        )
    ),
    re.IGNORECASE,
)
_ZH_ABSTAIN = re.compile(
    '|'.join(
        (
            r'(?:没有|没|未曾|未能|未|并未|并没有|没能)(?:明确|具体|直接|详细)?'
            r'(?:提到|提及|涉及|说明|给出|找到|记载|描述|指出|透露|表明|显示|包含|写到|讲到|说到|说|写|讲|交代|注明|写明|出现)',
            r'(?:没有|无|并无|缺乏|缺少)(?:任何)?(?:相关|有关|这方面|此类|该)的?(?:信息|内容|资料|记录|描述|说明|线索)?',
            r'没有关于|没有答案|没有线索|只字未提|查无',
            r'(?:文中|文章中?|文本中?|文档中?|原文中?|材料中?|上文中?|全文|资料中?)并?(?:没有|未|无)',
            r'(?:无法|不能|难以|没法)(?:回答|确定|找到|得知|判断|获知|知道|获取|确认|给出|提供|得出|推断|找出)',
            r'不知道|不清楚|找不到|查不到|没找到|未找到|不得而知|无从|未知|不确定|信息不足|不详',
        )
    )
)
# Words that turn what follows an abstention into a guess ("not stated, but probably ...").
_EN_GUESS_CUE = re.compile(
    r'\b(?:probably|likely|perhaps|maybe|possibly|presumably|i\s+(?:think|guess|believe|would\s+say|suspect)'
    r"|my\s+(?:best\s+)?guess|(?:might|may|could|would)\s+be|it'?s?\s+(?:likely|probably)|typically|usually"
    r'|commonly|generally)\b',
    re.IGNORECASE,
)
_ZH_GUESS_CUE = re.compile(r'可能|也许|大概|或许|推测|猜|估计|应该是|一般|通常|想必')


@dataclass(frozen=True)
class ControlScore:
    abstained: bool  # the answer says the document does not contain the information
    guessed: bool  # the answer states the needle's fact (or a paraphrase of it), or guesses after abstaining
    score: float  # 1.0 iff abstained and not guessed, else 0.0
    explanation: str = field(default='', compare=False)


# Scanned prefix of an answer; a longer one is no clean abstention (or plain answer) anyway.
_MAX_SCAN_CHARS = 20_000
# Occurrences of a key examined for cues and lists: each costs a scan of its sentence, so a reply repeating the key
# thousands of times must not cost thousands of scans.
_MAX_SPANS = 20


def _abstention(final: str) -> re.Match[str] | None:
    # Both languages' phrases whatever the prompt language: models often reply in English to a Chinese prompt.
    text = unicodedata.normalize('NFKC', final[:_MAX_SCAN_CHARS]).replace('\u2019', "'")
    matches = [m for m in (_EN_ABSTAIN.search(text), _ZH_ABSTAIN.search(text)) if m]
    return min(matches, key=lambda m: m.start()) if matches else None


def _abstains(final: str) -> bool:
    return _abstention(final) is not None


def _states(final: str, fact: str, *, language: str) -> bool:
    """True when ``fact`` occurs in the answer, ignoring case and whitespace.

    English compares with whitespace runs collapsed and requires word edges, so '42' is not found in '2042';
    Chinese has no word edges, so all whitespace is removed and any substring counts.
    """
    text, key = _normalise(final[:_MAX_SCAN_CHARS]), _normalise(fact)
    if language == 'zh':
        key = _WHITESPACE.sub('', key)
        return bool(key) and key in _WHITESPACE.sub('', text)
    key = _WHITESPACE.sub(' ', key).strip()
    if not key:
        return False
    pattern = r'(?<![^\W_])' + re.escape(key).replace(r'\ ', r'\s+') + r'(?![^\W_])'
    return re.search(pattern, text) is not None


def _key_share(final: str, key: str) -> float:
    """Share of the key's content units in the answer: English word stems minus stopwords, CJK character bigrams
    (unigram for a one-character run) plus other words. Measures paraphrase, never decides a pass alone."""
    text = final[:_MAX_SCAN_CHARS]
    if _CJK_CHAR.search(key):
        units = _zh_fact_units(key, _ZH_FUNCTION_CHARS, frozenset())
        tokens = _zh_units(text)
        norm = ''.join(tokens)
        words = {u for u in tokens if not _CJK_CHAR.fullmatch(u)}
        found = sum(1 for u in units if _zh_present(u, norm, words))
    else:
        units = {_stem(w) for w in _en_words(key) if w not in _EN_STOPWORDS} or {_stem(w) for w in _en_words(key)}
        stems = {_stem(w) for w in _en_words(text)}
        found = sum(1 for u in units if u in stems)
    return found / len(units) if units else 0.0


# Share of a key's content units that makes an answer a paraphrase of it (a guess, in the control cell).
_PARAPHRASE_SHARE = 0.4


def absent_control_score(answer: str, *, language: str, needle_answers: Sequence[str]) -> ControlScore:
    """Score a reply for the needle-absent control cell, where the right answer is that the document does not say.

    ``abstained``: the final answer (reasoning stripped) has an abstention phrase ("does not mention", "no
    information", "I'm not sure", "无法回答", "未提及", ...; both languages' phrases count in either subset).
    ``guessed``: it states one of ``needle_answers`` anyway (verbatim, or at least 40 % of its content words /
    character bigrams: a paraphrase), or a guessing word ("probably", "my guess", "可能", ...) follows the
    abstention. The score is 1.0 only for a clean abstention.
    """
    _check_language(language)
    if isinstance(needle_answers, str):
        raise TypeError('needle_answers must be a sequence of strings, not a string')
    final = strip_reasoning(answer)
    abstention = _abstention(final)
    reasons = []
    stated = [fact for fact in needle_answers if _states(final, fact, language=language)]
    if stated:
        reasons.append(f'states the fact {stated[0]!r}')
    else:
        shares = [(share, fact) for fact in needle_answers if (share := _key_share(final, fact)) >= _PARAPHRASE_SHARE]
        if shares:
            share, fact = max(shares)
            reasons.append(f'paraphrases the fact {fact!r} ({share:.0%} of its content)')
    if abstention is not None:
        rest = final[abstention.end() : _MAX_SCAN_CHARS]
        cue = _EN_GUESS_CUE.search(rest) or _ZH_GUESS_CUE.search(rest)
        if cue:
            reasons.append(f'guesses after abstaining ({cue.group()!r})')
    guessed = bool(reasons)
    if abstention is None:
        reasons.insert(0, 'no abstention phrase')
    else:
        reasons.insert(0, f'abstains ({abstention.group()!r})')
    return ControlScore(
        abstained=abstention is not None,
        guessed=guessed,
        score=1.0 if abstention is not None and not guessed else 0.0,
        explanation='; '.join(reasons),
    )


# --- verdicts with reasons: the four task entry points -------------------------------------------------------------


@dataclass(frozen=True)
class RuleVerdict:
    """A rule score with the reason for it, like an inspect_ai ``Score`` (value + explanation).

    ``certain`` False means only a judge can decide (paraphrase, other language, a negation or hedge near the
    fact, a pasted context); ``score`` is then what a rule-only run records, never a pass (<= 0.3).
    ``flags`` name what the rules saw ('exact', 'negation', 'retraction', 'hedge', 'list', 'long',
    'other_language', 'paraphrase', 'missing', ...).
    """

    score: float
    certain: bool
    explanation: str
    flags: tuple[str, ...] = ()


# Highest rule-only score of an answer the rules cannot confirm.
UNCERTAIN_SCORE_CAP = 0.3

# Cue words near the fact that make a stated fact doubtful. Literal alternations only (linear matching).
_EN_CUES: dict[str, re.Pattern[str]] = {
    'negation': re.compile(
        r"\b(?:not|never|no|none|neither|nor|nothing|isn't|wasn't|aren't|weren't|doesn't|didn't|don't|won't"
        r"|cannot|can't|couldn't|wouldn't|shouldn't|hardly|wrong|incorrect|false|untrue)\b",
        re.IGNORECASE,
    ),
    'retraction': re.compile(
        r'\b(?:wait|actually|correction|scratch\s+that|i\s+mean|on\s+second\s+thought|rather|instead|sorry'
        r'|i\s+was\s+wrong|i\s+misspoke|mistake|oops|wrong|incorrect|not\s+(?:right|correct|true))\b',
        re.IGNORECASE,
    ),
    'hedge': re.compile(
        r'\b(?:maybe|perhaps|possibly|probably|might|could|may|likely|unlikely|either|or|guess|unsure'
        r'|uncertain|not\s+sure|i\s+think|i\s+believe|seems?|appears?|candidates?|options?)\b',
        re.IGNORECASE,
    ),
}
_ZH_CUES: dict[str, re.Pattern[str]] = {
    'negation': re.compile(r'不是|并非|并不|没有|不对|错误|不正确|并无|绝非|而非|不属于'),
    'retraction': re.compile(r'其实|更正|纠正|说错|错了|不对|不正确|等等|不过|改正|应为|而是|实际上'),
    'hedge': re.compile(r'或者|或是|还是|可能|也许|或许|大概|似乎|好像|不确定|不一定|说不定|猜|估计|之一'),
}
# Characters around each occurrence of the fact in which a cue counts (English / Chinese).
_CUE_WINDOW = {'en': (60, 80), 'zh': (20, 30)}
_LIST_SEPARATORS = re.compile(r'\s*(?:[,，、;；/|]|\bor\b|\band\b|或者|或|还是|和|与|及)\s*', re.IGNORECASE)
_SENTENCE_END = re.compile(r'[.!?。！？\n]')


def _cue_hits(window: str, excluded: str) -> list[tuple[str, str]]:
    """(kind, cue) pairs found in ``window``, leaving out cue words that the needle or question use themselves.

    ``excluded`` comes from ``_excluded_cue_text``: Chinese cues are looked up as substrings, English ones as whole
    words (the needle's 'door' does not excuse an 'or')."""
    hits = []
    for cues in (_EN_CUES, _ZH_CUES):
        for kind, pattern in cues.items():
            for match in pattern.finditer(window):
                cue = match.group()
                probe = cue if _CJK_CHAR.match(cue) else f' {" ".join(_en_words(cue))} '
                if probe not in excluded:
                    hits.append((kind, cue))
    return hits


def _excluded_cue_text(*texts: str) -> str:
    # Word tokens between single spaces (for whole-word English look-ups) followed by the raw normalised text.
    normalised = ' '.join(_normalise(text) for text in texts)
    return f' {" ".join(_en_words(normalised))} \n{normalised}'


def _en_key_spans(text: str, key: str) -> list[tuple[int, int]]:
    """Spans of ``text`` where the key's words occur in order with nothing but spaces/punctuation between them.

    Words compare after case folding and the light stemming (saffron/Saffron, sandwiches/sandwich)."""
    # CJK characters are single tokens, so a Latin or digit key is found inside Chinese text ('答案是Jack').
    key_words = [_stem(w) for w in _ZH_UNIT.findall(key)]
    if not key_words:
        return []
    words = [(m.start(), m.end(), _stem(m.group())) for m in _ZH_UNIT.finditer(text)]
    spans = []
    k = len(key_words)
    for i in range(len(words) - k + 1):
        if all(words[i + j][2] == key_words[j] for j in range(k)):
            spans.append((words[i][0], words[i + k - 1][1]))
    return spans


_ZH_KEEP = re.compile(f'[{_CJK}]|[^\\W_]')


def _zh_key_spans(text: str, key: str) -> list[tuple[int, int]]:
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


def _key_spans(text: str, key: str) -> list[tuple[int, int]]:
    return _zh_key_spans(text, key) if _CJK_CHAR.search(key) else _en_key_spans(text, key)


def _cue_near(text: str, spans: Sequence[tuple[int, int]], *, language: str, excluded: str) -> list[tuple[str, str]]:
    before, after = _CUE_WINDOW[language]
    hits: list[tuple[str, str]] = []
    for start, end in spans[:_MAX_SPANS]:
        # Negation and hedging are about the key only inside its own sentence ('X. You can't tell ...' is a right
        # answer that rambles on); a retraction reaches back across the sentence end ('X. No wait, that is wrong').
        # The key itself is cut out of the window: its own words are not cues.
        left = max([start - before, *(m.end() for m in _SENTENCE_END.finditer(text, max(0, start - before), start))])
        stop = _SENTENCE_END.search(text, end, end + after)
        right = stop.start() if stop else end + after
        hits.extend(_cue_hits(text[max(0, left) : start] + ' | ' + text[end:right], excluded))
        following = _cue_hits(text[right : end + after], excluded) if right < end + after else []
        hits.extend(hit for hit in following if hit[0] == 'retraction')
    return hits


def _is_list_item(text: str, spans: Sequence[tuple[int, int]], *, language: str) -> bool:
    """True when the key is one short item among other short items ('saffron, teal or crimson', '藏青色、墨绿色')."""
    limit = 3 if language == 'en' else 6
    for start, end in spans[:_MAX_SPANS]:
        left = max((m.end() for m in _SENTENCE_END.finditer(text, 0, start)), default=0)
        right_end = _SENTENCE_END.search(text, end)
        sentence = text[left : right_end.start() if right_end else len(text)]
        items = [item for item in _LIST_SEPARATORS.split(sentence) if item and item.strip()]
        if len(items) < 3:
            continue
        short = [item for item in items if _item_size(item, language) <= limit]
        if len(short) >= 3 and len(short) >= len(items) - 1:
            return True
    return False


def _item_size(item: str, language: str) -> int:
    if language == 'zh' and _CJK_CHAR.search(item):
        return len(_CJK_CHAR.findall(item))
    return len(_en_words(item))


def _cjk_share(text: str) -> float:
    letters = [c for c in text[:_MAX_SCAN_CHARS] if c.isalpha()]
    if not letters:
        return 0.0
    return sum(1 for c in letters if _CJK_CHAR.match(c)) / len(letters)


def _other_language(final: str, *, language: str) -> bool:
    """A zh-subset answer with no CJK at all, or an en-subset answer written mostly in CJK."""
    if language == 'zh':
        return _CJK_CHAR.search(final[:_MAX_SCAN_CHARS]) is None and any(c.isalpha() for c in final[:200])
    return _cjk_share(final) > 0.3


def _answer_size(text: str, language: str) -> int:
    return len(_zh_units(text)) if language == 'zh' else len(_en_words(text))


# --- pasted context: decided by evidence, not by length -------------------------------------------------------------


@dataclass(frozen=True)
class PromptText:
    """What the model was shown, where a pasted answer comes from.

    ``shown`` is the whole prompt (system prompt and user message: template, haystack, needles, question);
    ``template`` the run's system prompt and user template, which an answer may echo as freely as the question.
    """

    shown: str
    template: tuple[str, ...] = ()


# Verbatim runs are found as word n-grams (English words, single CJK characters): 8 units in a row that also occur in
# the prompt are copied, not written (a model's own sentence shares 8 words in a row with an essay by chance rarely).
PASTE_NGRAM = 8
# Units copied from the prompt beyond the needles, question and template that make an answer a paste: about two
# sentences. A right answer quotes the needle (allowed) and explains in its own words; one quoted sentence of the
# surrounding text (~20 words, ~40 characters) stays under this.
PASTE_MIN_UNITS = {'en': 40, 'zh': 80}
# The last resort, used only where the prompt is not known (a custom scorer, a review without its prompt): an answer
# this long is no answer whatever it holds. Far above verbose right answers: the longest graded-right answers in
# tests/data/real_answers are ~130 words, answers that quote the needle and explain it 60-200 words.
LAST_RESORT_UNITS = {'en': 400, 'zh': 800}


@dataclass(frozen=True)
class Paste:
    """How much of an answer is pasted context (``pasted_units`` of ``units``), or that it is too long to be an
    answer when there was no prompt to measure against (``too_long``)."""

    units: int
    pasted_units: int = 0
    too_long: bool = False
    allowed_units: int = 0  # the last resort's allowance, when ``too_long``

    @property
    def pasted(self) -> bool:
        return self.pasted_units >= 1 and not self.too_long

    @property
    def factor(self) -> float:
        """<= 1: the share of the answer that is not pasted (or the allowance / length for the last resort)."""
        if self.too_long:
            return self.allowed_units / self.units
        return 1.0 - self.pasted_units / self.units if self.pasted else 1.0

    def describe(self, language: str) -> str:
        unit = 'words' if language == 'en' else 'characters'
        if self.too_long:
            return f'{self.units} {unit} long, over the last-resort bound of {self.allowed_units} (no prompt known)'
        return f'{self.pasted_units} of its {self.units} {unit} copied verbatim from the prompt beyond the needle'


def _paste_units(text: str) -> list[str]:
    return _ZH_UNIT.findall(_normalise(text))


def _grams(units: Sequence[str]) -> list[int]:
    return [hash(tuple(units[i : i + PASTE_NGRAM])) for i in range(len(units) - PASTE_NGRAM + 1)]


def _covered(starts: Sequence[int], size: int) -> set[int]:
    return {position for start in starts for position in range(start, min(size, start + PASTE_NGRAM))}


def paste_evidence(
    final: str, *, allowed: Sequence[str], prompt: PromptText | None, language: str, reference: str = ''
) -> Paste:
    """How much of ``final`` is copied from the prompt beyond the ``allowed`` texts (needles, question, reference,
    answer keys) and the prompt's template.

    An answer unit counts as pasted when it lies in a run of ``PASTE_NGRAM`` units that occurs in the prompt and not
    in an allowed text; the answer is a paste when at least ``PASTE_MIN_UNITS`` units are. Time is linear in the
    prompt and memory bounded by the answer (its first ``_MAX_SCAN_CHARS`` characters): the answer's n-grams are
    hashed into a set, and the prompt is streamed past them once, only when enough of the answer could be pasted.
    Without a prompt only ``LAST_RESORT_UNITS`` (or 3 x the reference, if longer) decides.
    """
    units = _paste_units(final[:_MAX_SCAN_CHARS])
    size = max(1, len(units))
    if prompt is None or not prompt.shown:
        allowed_units = max(LAST_RESORT_UNITS[language], 3 * _answer_size(reference, language))
        total = _answer_size(final, language)
        if total > allowed_units:
            return Paste(units=total, too_long=True, allowed_units=allowed_units)
        return Paste(units=size)
    minimum = PASTE_MIN_UNITS[language]
    if len(units) < minimum:
        return Paste(units=size)
    allowed_grams = {gram for text in (*allowed, *prompt.template) for gram in _grams(_paste_units(text))}
    grams = _grams(units)
    own = [start for start, gram in enumerate(grams) if gram not in allowed_grams]
    if len(_covered(own, len(units))) < minimum:
        return Paste(units=size)  # too little of it is outside the needle and question to be a paste
    wanted = {grams[start] for start in own}
    firsts = {units[start] for start in own}
    found: set[int] = set()
    window: collections.deque[str] = collections.deque(maxlen=PASTE_NGRAM)
    for match in _ZH_UNIT.finditer(_normalise(prompt.shown)):
        window.append(match.group())
        if len(window) == PASTE_NGRAM and window[0] in firsts:
            gram = hash(tuple(window))
            if gram in wanted:
                found.add(gram)
                if len(found) == len(wanted):
                    break
    pasted = _covered([start for start in own if grams[start] in found], len(units))
    pasted -= _covered([start for start, gram in enumerate(grams) if gram in allowed_grams], len(units))
    return Paste(units=size, pasted_units=len(pasted) if len(pasted) >= minimum else 0)


_NUMBER_WORDS = re.compile(
    r'\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen'
    r'|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million)\b'
    r'|[零〇一二两三四五六七八九十百千万亿]{2,}',
    re.IGNORECASE,
)


def _cue_verdict(hits: list[tuple[str, str]], what: str) -> RuleVerdict:
    kinds = tuple(dict.fromkeys(kind for kind, _ in hits))
    shown = ', '.join(repr(cue) for _, cue in hits[:3])
    return RuleVerdict(
        score=UNCERTAIN_SCORE_CAP,
        certain=False,
        explanation=f'{what}, but {"/".join(kinds)} cue(s) near it ({shown}): a judge decides',
        flags=kinds,
    )


def single_needle_score(  # long because the verdict is one ordered ladder of checks, each with its reason
    answer: str,
    *,
    needles: Sequence[str],
    question: str,
    language: str,
    answer_keys: Sequence[str] = (),
    reference: str | None = None,
    prompt: PromptText | None = None,
) -> RuleVerdict:
    """Rule verdict for a single-needle (or bank) answer: the key fact must be stated, plainly.

    With ``answer_keys`` (the short answer inside the needle) the final answer (reasoning stripped) must contain a
    key entire: English as the same words in order (case, punctuation and plural -s aside), Chinese as the whole
    entity string (whitespace and punctuation aside), never by a share of bigrams. Then:

    * a negation, retraction or hedge cue within 60/80 (English) or 20/30 (Chinese) characters before/after the key
      (cue words the needle or question use themselves do not count), or the key being one item of a short list,
      makes the verdict uncertain with score 0.3;
    * an answer that pastes the prompt (``paste_evidence``: verbatim runs of the haystack beyond the needle,
      question and template; without ``prompt``, only the last-resort length bound) is uncertain, score <= 0.3;
    * otherwise 1.0, certain, however long the answer: a preamble, the quoted needle, an explanation and a closing
      remark around the key are how instruction-tuned models answer.

    Without the key: an answer in the other language (no CJK in a zh subset, mostly CJK in an en subset) or one
    holding at least 25 % of the key's content units (a paraphrase or a partial answer) or spelling a number key
    out in words is uncertain with score <= 0.3; anything else is a certain 0.
    Without ``answer_keys`` (a custom needle with no short answer) the needle recall decides as before: certain
    outside (0.1, 0.9), always uncertain when a cue is near the needle's words.
    """
    _check_language(language)
    if isinstance(answer_keys, str):
        raise TypeError('answer_keys must be a sequence of strings, not a string')
    final = strip_reasoning(answer)
    if not final:
        return RuleVerdict(0.0, True, 'no final answer (empty, or reasoning never closed)', ('empty',))
    reference = reference if reference is not None else '\n'.join(needles)
    excluded = _excluded_cue_text(*needles, question)
    text = _normalise(final[:_MAX_SCAN_CHARS])
    keys = [key for key in answer_keys if key.strip()]
    paste = paste_evidence(
        final, allowed=(*needles, question, reference, *keys), prompt=prompt, language=language, reference=reference
    )
    factor = paste.factor

    if not keys:
        recall = needle_recall(final, needles=needles, question=question, language=language, penalise_length=False)
        recall *= factor
        if recall > _UNCERTAIN_LOW:
            hits = _cue_hits(text, excluded) if _answer_size(final, language) <= 80 else []
            if hits:
                return _cue_verdict(hits, f'needle recall {recall:.2f}')
        certain = rule_is_certain(recall)
        return RuleVerdict(
            recall if certain else min(recall, UNCERTAIN_SCORE_CAP),
            certain,
            f'no short answer known; needle recall {recall:.2f}' + ('' if certain else ': a judge decides'),
            ('recall',),
        )

    spans = [span for key in keys for span in _key_spans(text, _normalise(key))]
    if spans:
        hits = _cue_near(text, spans, language=language, excluded=excluded)
        if hits:
            return _cue_verdict(hits, 'states the key')
        abstention = _abstention(final)
        if abstention is not None and abstention.start() < min(start for start, _ in spans):
            # "The document does not say ... the only sentence about it is <needle>. However ...": whether that
            # quotes the answer or doubts it is for a judge (published graders split on exactly these).
            return RuleVerdict(
                UNCERTAIN_SCORE_CAP,
                False,
                f'states the key after saying the document does not answer ({abstention.group()!r}): a judge decides',
                ('abstains',),
            )
        if _is_list_item(text, spans, language=language):
            return RuleVerdict(
                UNCERTAIN_SCORE_CAP * 0.5, False, 'the key is one item of a list of candidates', ('list',)
            )
        if paste.pasted or paste.too_long:
            return RuleVerdict(
                UNCERTAIN_SCORE_CAP * factor,
                False,
                f'states the key, but {paste.describe(language)}: pasted text, not an answer',
                ('paste',) if paste.pasted else ('long',),
            )
        return RuleVerdict(1.0, True, 'states the key plainly', ('exact',))

    if _other_language(final, language=language):
        return RuleVerdict(
            0.0, False, f'key not found and the answer is not in {language!r}: a judge decides', ('other_language',)
        )
    share = max(_key_share(final, key) for key in keys)
    if share >= 0.25:
        return RuleVerdict(
            UNCERTAIN_SCORE_CAP * share * factor,
            False,
            f'key not stated verbatim; {share:.0%} of its content present (paraphrase or partial): a judge decides',
            ('paraphrase',),
        )
    if any(_DIGIT_RUN.search(key) for key in keys) and _NUMBER_WORDS.search(final[:_MAX_SCAN_CHARS]):
        return RuleVerdict(0.0, False, 'number key not in digits; the answer spells a number out', ('number_words',))
    return RuleVerdict(0.0, True, 'the key is not in the answer', ('missing',))


# --- reasoning chains --------------------------------------------------------------------------------------------

_EN_NAME = re.compile(r"\b[A-Z][\w']*(?:\s+[A-Z][\w']*)*")
_NON_CJK_RUN = re.compile(r"[A-Za-z][A-Za-z' ]*[A-Za-z]|[A-Za-z]")
_QUOTED = re.compile(r'[“「『"]([^”」』"]{1,20})[”」』"]')
_ZH_ROLE = re.compile('[人员家师匠者长]')
_ZH_EDGE_CHARS = '的是了在把被叫作为名一个位上里'
# Capitalised words that start a sentence or a name's description rather than name a candidate.
_NOT_NAMES = frozenset(
    # A word block reads better than a 33-item literal.
    'the of a an in on at to last this that these those it its his her he she they their who what which when '  # noqa: SIM905
    'where why how every all one first only'.split()
)


def _en_names(text: str) -> list[str]:
    names = []
    for match in _EN_NAME.finditer(text):
        words = match.group().split()
        while words and words[0].casefold() in _NOT_NAMES:
            words = words[1:]
        if words:
            names.append(' '.join(words).removesuffix("'s"))
    return names


def _common_substrings(a: str, b: str, *, minimum: int) -> set[str]:
    """Maximal common substrings of at least ``minimum`` characters (inputs capped at 300 characters)."""
    a, b = a[:300], b[:300]
    previous = [0] * (len(b) + 1)
    found: set[str] = set()
    for i in range(1, len(a) + 1):
        current = [0] * (len(b) + 1)
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                current[j] = previous[j - 1] + 1
        for j in range(1, len(b) + 1):
            length = current[j]
            # Maximal: cannot be extended to the right (the next diagonal cell does not continue it).
            if length >= minimum and not (i < len(a) and j < len(b) and a[i] == b[j]):
                found.add(a[i - length : i])
        previous = current
    return found


def chain_candidates(needles: Sequence[str], *, keyword: str, language: str) -> tuple[str, ...]:
    """The entities a reasoning chain names, i.e. the answers a model might confuse with the keyword.

    English: the capitalised names in the links ('La Giostra', 'Corvin Halse'), without leading 'The'/'Of'/...
    Chinese: Latin-letter names, quoted names (“萤火号”) and the bridge terms shared by two links (each link names
    the entity that the next one describes: 鹤汀岛, 养蜂人柯远山), trimmed of function characters. The keyword is
    always first.
    """
    _check_language(language)
    found: dict[str, None] = {keyword: None}
    for needle in needles:
        for name in _en_names(needle) if language == 'en' else _NON_CJK_RUN.findall(needle):
            found[name.strip()] = None
        if language == 'zh':
            for quoted in _QUOTED.findall(needle):
                found[quoted] = None
    if language == 'zh':
        for a, b in itertools.combinations(needles, 2):
            for common in _common_substrings(a, b, minimum=2):
                trimmed = common.strip(_ZH_EDGE_CHARS + '，。、：；“”')
                if len(trimmed) >= 2 and all(_CJK_CHAR.match(c) for c in trimmed):
                    found[trimmed] = None
                    # '养蜂人柯远山' is also named bare: '柯远山'.
                    role = _ZH_ROLE.search(trimmed)
                    if role and len(trimmed) - role.end() >= 2:
                        found[trimmed[role.end() :]] = None
    return tuple(name for name in found if name)


def _candidate_spans(text: str, candidate: str) -> list[tuple[int, int]]:
    if _CJK_CHAR.search(candidate):
        return _zh_key_spans(text, candidate)
    pattern = r'(?<![^\W_])' + re.escape(_normalise(candidate)).replace(r'\ ', r'\s+') + r'(?![^\W_])'
    return [m.span() for m in re.finditer(pattern, text)]


# What may stand between two names of a list: separators, 'and'/'or', '和'/'或', brackets, whitespace.
# Markdown emphasis and an article count as separators too: '_The bathroom_ / _The bedroom_' is a list of names.
_LIST_GAP = re.compile(
    r'(?:[\s,，、;；/|()（）\[\]&+*_-]|\band\b|\bor\b|(?<![a-z])the(?![a-z])|和|或者?|与|及)*', re.IGNORECASE
)


def _en_guessed_names(original: str) -> list[str]:
    """Capitalised names in an English answer, except a single word opening a sentence ('Yes', 'Definitely')."""
    names = []
    for match in _EN_NAME.finditer(original[:_MAX_SCAN_CHARS]):
        # A word opening a sentence or a line ('Context:' after a blank line) is capitalised for that, not a name.
        before = original[: match.start()].rstrip(' \t')
        opening = not before.strip() or before[-1] in '.!?:;"\'(\n'
        if opening and ' ' not in match.group():
            continue
        names.extend(_en_names(match.group()))
    return names


def _listed_neighbour(
    text: str,
    spans: Sequence[tuple[int, int]],
    *,
    keyword: str,
    candidates: Sequence[str],
    language: str,
    original: str,
) -> str | None:
    """The first other name that sits right next to the keyword with only list separators between them
    ('Jack La Giostra', '柯远山、唢呐', 'Jack and Pim'), or None. 'Corvin Halse likes the oboe best' names two
    candidates but asserts one: words stand between them."""
    pool = list(candidates)
    if language == 'en':
        # Capitalised names that are not candidates count too: a list of guessed names is still a list.
        pool += _en_guessed_names(original)
    names: list[tuple[int, int, str]] = []
    for name in dict.fromkeys(pool):
        if _normalise(name) != _normalise(keyword):
            names += [(*span, name) for span in _candidate_spans(text, name)[:_MAX_SPANS]]
    names = [name for name in names if not any(name[0] < end and start < name[1] for start, end in spans)]
    for start, end in spans[:_MAX_SPANS]:
        for name_start, name_end, name in names:
            gap = text[end:name_start] if name_start >= end else text[name_end:start]
            if len(gap) <= 12 and _LIST_GAP.fullmatch(gap):
                return name
    return None


def reasoning_answer_score(
    answer: str,
    *,
    keyword: str,
    candidates: Sequence[str],
    language: str,
    reference: str | None = None,
    needles: Sequence[str] = (),
    question: str = '',
    prompt: PromptText | None = None,
) -> RuleVerdict:
    """Rule verdict for a reasoning-chain answer: it must assert exactly one candidate, the keyword, plainly.

    Fails (score <= 0.3) when the keyword is missing, when a negation/retraction/hedge cue is near it (uncertain:
    'it is not Jack'), when it is one of a list of names ('Jack, Pim or Osgood'; or two or more candidates with
    almost nothing else said), or when it pastes the prompt (``paste_evidence``: the links and question may be
    quoted, the haystack around them not; without ``prompt`` only the last-resort length bound). An
    explanation that walks the chain ('Jack makes it: the best restaurant is La Giostra, ...') passes: its other
    candidates come with their roles. A keyword-less answer in the other language is uncertain. ``candidates``
    come from ``chain_candidates``; CDME's ``keyword_score`` stays a separate, reported metric.
    """
    _check_language(language)
    if isinstance(candidates, str):
        raise TypeError('candidates must be a sequence of strings, not a string')
    final = strip_reasoning(answer)
    if not final:
        return RuleVerdict(0.0, True, 'no final answer (empty, or reasoning never closed)', ('empty',))
    text = _normalise(final[:_MAX_SCAN_CHARS])
    spans = _key_spans(text, _normalise(keyword))
    if not spans:
        if _other_language(final, language=language):
            return RuleVerdict(
                0.0, False, 'keyword not found; the answer is in the other language', ('other_language',)
            )
        return RuleVerdict(0.0, True, f'the keyword {keyword!r} is not in the answer', ('missing',))
    reference = reference if reference is not None else keyword
    paste = paste_evidence(
        final, allowed=(*needles, question, reference, keyword), prompt=prompt, language=language, reference=reference
    )
    if paste.pasted or paste.too_long:
        return RuleVerdict(
            UNCERTAIN_SCORE_CAP * paste.factor,
            True,
            f'{paste.describe(language)}: pasted text, not an answer',
            ('paste',) if paste.pasted else ('long',),
        )
    hits = _cue_near(text, spans, language=language, excluded=_excluded_cue_text(reference, *candidates))
    if hits:
        return _cue_verdict(hits, 'names the keyword')
    if _is_list_item(text, spans, language=language):
        return RuleVerdict(0.1, True, 'the keyword is one item of a list of names', ('list',))
    neighbour = _listed_neighbour(
        text, spans, keyword=keyword, candidates=candidates, language=language, original=final
    )
    if neighbour:
        return RuleVerdict(
            0.1, True, f'the keyword is listed next to another name ({neighbour!r}) with nothing to pick one', ('list',)
        )
    return RuleVerdict(1.0, True, 'asserts the keyword, one candidate, plainly', ('exact',))


# --- the four entry points the task types call ---------------------------------------------------------------------


def score_single(
    answer: str,
    *,
    needles: Sequence[str],
    question: str,
    reference: str,
    answer_keys: Sequence[str],
    language: str,
    prompt: PromptText | None = None,
) -> RuleVerdict:
    """Task 'single' (and bank needles): see ``single_needle_score``."""
    return single_needle_score(
        answer,
        needles=needles,
        question=question,
        language=language,
        answer_keys=answer_keys,
        reference=reference,
        prompt=prompt,
    )


def score_multi(
    answer: str,
    *,
    needles: Sequence[str] = (),
    question: str = '',
    reference: str,
    answer_keys: Sequence[str],
    language: str,
    distractor_values: Sequence[str] = (),
    prompt: PromptText | None = None,
) -> RuleVerdict:
    """Task 'multi_retrieval': ``answer_keys`` are the values; score = recall x precision (see
    ``MultiRetrievalScores.score``). Uncertain only when the answer has no digits of the values' length but spells
    numbers out (words or Chinese numerals), which a judge can read."""
    _check_language(language)
    scores = multi_retrieval_scores(
        answer,
        values=answer_keys,
        distractor_values=distractor_values,
        reference=reference,
        needles=needles,
        question=question,
        language=language,
        prompt=prompt,
    )
    final = strip_reasoning(answer)
    if not scores.found and not scores.wrong and _NUMBER_WORDS.search(final[:_MAX_SCAN_CHARS]):
        return RuleVerdict(0.0, False, scores.explanation + '; numbers spelt out: a judge decides', ('number_words',))
    flags = ('exact',) if scores.score == 1.0 else ('distractor',) if scores.distractors_named else ()
    if scores.length_factor < 1.0:
        flags += ('paste',) if prompt is not None else ('long',)
    return RuleVerdict(scores.score, True, scores.explanation, flags)


def score_reasoning(
    answer: str,
    *,
    needles: Sequence[str],
    question: str = '',
    reference: str,
    answer_keys: Sequence[str],
    language: str,
    prompt: PromptText | None = None,
) -> RuleVerdict:
    """Task 'reasoning': ``answer_keys[0]`` is the keyword; candidates come from the links (``chain_candidates``)."""
    if isinstance(answer_keys, str) or not answer_keys:
        raise ValueError('answer_keys must hold the chain keyword')
    keyword = answer_keys[0]
    candidates = chain_candidates(needles, keyword=keyword, language=language)
    return reasoning_answer_score(
        answer,
        keyword=keyword,
        candidates=candidates,
        language=language,
        reference=reference,
        needles=needles,
        question=question,
        prompt=prompt,
    )


def score_control(
    answer: str,
    *,
    needles: Sequence[str] = (),
    question: str = '',
    reference: str = '',
    answer_keys: Sequence[str],
    language: str,
    prompt: PromptText | None = None,
) -> RuleVerdict:
    """The needle-absent control: 1.0 for a clean abstention (see ``absent_control_score``), always certain."""
    control = absent_control_score(answer, language=language, needle_answers=answer_keys)
    flags = tuple(flag for flag, on in (('abstained', control.abstained), ('guessed', control.guessed)) if on)
    return RuleVerdict(control.score, True, control.explanation, flags)
