"""The cues that make a stated key doubtful or an answer no answer: negation, retraction, hedge, a list of
alternatives, an abstention, the other language and numbers in words (a pasted prompt is decided by evidence, in
`paste.py`).

Every pattern is a literal-led alternation with bounded hops, so matching is linear in the answer.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from ..languages import CJK_CHAR
from .bounds import (
    CUE_WINDOW,
    LIST_ITEM_UNITS,
    MAX_SCAN_CHARS,
    MAX_SPANS,
    OTHER_LANGUAGE_CJK_SHARE,
    UNCERTAIN_SCORE_CAP,
)
from .result import RuleScore
from .text import ANSWER_SENTENCE_END, cjk_share, en_words, item_size, normalise

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

# A negation whose object is everything but the stated fact ('none of the other variables', 'no other', 'nothing
# else', '其他变量都没有') excludes the rest and so affirms the fact: these are not cues. 'none of them' and 'it is not
# X' are still negations. Literal-led, at most a few bounded hops.
_OTHERS_EXCLUDED = re.compile(
    r'\b(?:none|neither|not\s+one|no\s+one|nobody|nothing|not\s+any|no|not)\s+(?:of\s+)?(?:the\s+|its\s+|their\s+)?'
    r'(?:others?|rest|remaining|else)\b'
    r'|\b(?:nothing|no\s*one|nobody|none|nowhere)\s+else\b'
    r'|(?:其他|其它|其余|别的|另外的)[^。！？；\n]{0,12}?(?:都|均|皆|全)?(?:不是|没有|并非|并不|不属于|不)',
    re.IGNORECASE,
)

_LIST_SEPARATORS = re.compile(r'\s*(?:[,，、;；/|]|\bor\b|\band\b|或者|或|还是|和|与|及)\s*', re.IGNORECASE)


def cue_hits(window: str, excluded: str) -> list[tuple[str, str]]:
    """(kind, cue) pairs found in ``window``, leaving out cue words that the needle or question use themselves.

    ``excluded`` comes from ``excluded_cue_text``: Chinese cues are looked up as substrings, English ones as whole
    words (the needle's 'door' does not excuse an 'or')."""
    hits = []
    window = without_others_excluded(window)
    for cues in (_EN_CUES, _ZH_CUES):
        for kind, pattern in cues.items():
            for match in pattern.finditer(window):
                cue = match.group()
                probe = cue if CJK_CHAR.match(cue) else f' {" ".join(en_words(cue))} '
                if probe not in excluded:
                    hits.append((kind, cue))
    return hits


def without_others_excluded(text: str) -> str:
    """``text`` with each phrase that excludes everything but the stated fact ('none of the other variables is')
    blanked to spaces, every position kept."""
    return _OTHERS_EXCLUDED.sub(lambda match: ' ' * len(match.group()), text)


def excluded_cue_text(*texts: str) -> str:
    """Called once per answer a rule scores, before ``cue_near``: the cue words the sample's own ``texts`` (needles,
    question) use, which are therefore no cue when an answer repeats them; pass the result as ``cue_near``'s
    ``excluded``."""
    # Word tokens between single spaces (for whole-word English look-ups) followed by the raw normalised text.
    normalised = ' '.join(normalise(text) for text in texts)
    return f' {" ".join(en_words(normalised))} \n{normalised}'


def cue_near(text: str, spans: Sequence[tuple[int, int]], *, language: str, excluded: str) -> list[tuple[str, str]]:
    """Called by a rule once it found the key in the answer: the (kind, cue) pairs of negation, hedge and retraction
    cues near the key's ``spans`` in ``text`` (the normalised answer the spans index, as ``key_spans`` gives them;
    the first ``MAX_SPANS`` only), within the key's sentence and ``CUE_WINDOW[language]`` characters, retractions
    after it too; [] when none. ``excluded`` is ``excluded_cue_text`` of the needles and question."""
    before, after = CUE_WINDOW[language]
    text = without_others_excluded(text)  # whole, before any window cuts a phrase in two
    hits: list[tuple[str, str]] = []
    for start, end in spans[:MAX_SPANS]:
        # Negation and hedging are about the key only inside its own sentence ('X. You can't tell ...' is a right
        # answer that rambles on); a retraction reaches back across the sentence end ('X. No wait, that is wrong').
        # The key itself is cut out of the window: its own words are not cues.
        ends = ANSWER_SENTENCE_END.finditer(text, max(0, start - before), start)
        left = max([start - before, *(m.end() for m in ends)])
        stop = ANSWER_SENTENCE_END.search(text, end, end + after)
        right = stop.start() if stop else end + after
        hits.extend(cue_hits(text[max(0, left) : start] + ' | ' + text[end:right], excluded))
        following = cue_hits(text[right : end + after], excluded) if right < end + after else []
        hits.extend(hit for hit in following if hit[0] == 'retraction')
    return hits


def negated_values(
    text: str, values: Sequence[str], *, needles: Sequence[str], question: str, language: str
) -> list[str]:
    """Called by a rule that found ``values`` stated in ``text`` (the answer as it searched it): the negation cues in
    the sentence of any of them ('it is not 4821937'), the needles' and question's own cue words aside; [] when
    none. Every occurrence within ``MAX_SCAN_CHARS`` counts, the first ``MAX_SPANS`` of them are read."""
    spans = sorted(match.span() for value in values for match in re.finditer(re.escape(value), text[:MAX_SCAN_CHARS]))
    hits = cue_near(text, spans[:MAX_SPANS], language=language, excluded=excluded_cue_text(*needles, question))
    return [cue for kind, cue in hits if kind == 'negation']


def is_list_item(text: str, spans: Sequence[tuple[int, int]], *, language: str) -> bool:
    """True when the key is one short item among other short items ('saffron, teal or crimson', '藏青色、墨绿色')."""
    limit = LIST_ITEM_UNITS[language]
    for start, end in spans[:MAX_SPANS]:
        left = max((m.end() for m in ANSWER_SENTENCE_END.finditer(text, 0, start)), default=0)
        right_end = ANSWER_SENTENCE_END.search(text, end)
        sentence = text[left : right_end.start() if right_end else len(text)]
        items = [item for item in _LIST_SEPARATORS.split(sentence) if item and item.strip()]
        if len(items) < 3:
            continue
        short = [item for item in items if item_size(item, language) <= limit]
        if len(short) >= 3 and len(short) >= len(items) - 1:
            return True
    return False


def other_language(final: str, *, language: str) -> bool:
    """A zh-subset answer with no CJK at all, or an en-subset answer written mostly in CJK."""
    if language == 'zh':
        return CJK_CHAR.search(final[:MAX_SCAN_CHARS]) is None and any(c.isalpha() for c in final[:200])
    return cjk_share(final) > OTHER_LANGUAGE_CJK_SHARE


NUMBER_WORDS = re.compile(
    r'\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen'
    r'|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million)\b'
    r'|[零〇一二两三四五六七八九十百千万亿]{2,}',
    re.IGNORECASE,
)


def cue_verdict(hits: list[tuple[str, str]], what: str) -> RuleScore:
    """Called by a rule when ``cue_near`` found cues: the uncertain ``RuleScore`` (capped at
    ``UNCERTAIN_SCORE_CAP``, flagged with the cue kinds, left to a judge) for an answer that ``what`` (says what it
    stated, e.g. 'the key is stated') but with those ``hits`` near it."""
    kinds = tuple(dict.fromkeys(kind for kind, _ in hits))
    shown = ', '.join(repr(cue) for _, cue in hits[:3])
    return RuleScore.verdict(
        score=UNCERTAIN_SCORE_CAP,
        certain=False,
        explanation=f'{what}, but {"/".join(kinds)} cue(s) near it ({shown}): a judge decides',
        flags=kinds,
    )


# --- abstention ------------------------------------------------------------------------------------------------

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


def find_abstention(final: str) -> re.Match[str] | None:
    """Called by a rule on the final answer (reasoning stripped; raw text, it is normalised here): the first phrase,
    in either language, saying the document does not answer ('the text does not mention', '文中没有提到'), or None."""
    # Both languages' phrases whatever the prompt language: models often reply in English to a Chinese prompt.
    text = unicodedata.normalize('NFKC', final[:MAX_SCAN_CHARS]).replace('\u2019', "'")
    matches = [m for m in (_EN_ABSTAIN.search(text), _ZH_ABSTAIN.search(text)) if m]
    return min(matches, key=lambda m: m.start()) if matches else None
