"""The reasoning task's rules: the candidates a chain names, and the one-candidate ladder on its keyword."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from ...languages import CJK_CHAR
from ...scoring.candidates import en_names
from ..kit import PromptText, RuleScore, check_language, one_candidate_score

__all__ = ['chain_answer_score', 'chain_candidates']

_NON_CJK_RUN = re.compile(r"[A-Za-z][A-Za-z' ]*[A-Za-z]|[A-Za-z]")
_QUOTED = re.compile(r'[“「『"]([^”」』"]{1,20})[”」』"]')
_ZH_ROLE = re.compile('[人员家师匠者长]')
_ZH_EDGE_CHARS = '的是了在把被叫作为名一个位上里'


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
    check_language(language)
    found: dict[str, None] = {keyword: None}
    for needle in needles:
        for name in en_names(needle) if language == 'en' else _NON_CJK_RUN.findall(needle):
            found[name.strip()] = None
        if language == 'zh':
            for quoted in _QUOTED.findall(needle):
                found[quoted] = None
    if language == 'zh':
        for a, b in itertools.combinations(needles, 2):
            for common in _common_substrings(a, b, minimum=2):
                trimmed = common.strip(_ZH_EDGE_CHARS + '，。、：；“”')
                if len(trimmed) >= 2 and all(CJK_CHAR.match(c) for c in trimmed):
                    found[trimmed] = None
                    # '养蜂人柯远山' is also named bare: '柯远山'.
                    role = _ZH_ROLE.search(trimmed)
                    if role and len(trimmed) - role.end() >= 2:
                        found[trimmed[role.end() :]] = None
    return tuple(name for name in found if name)


def chain_answer_score(
    answer: str,
    *,
    needles: Sequence[str],
    keyword: str,
    reference: str,
    language: str,
    question: str = '',
    prompt: PromptText | None = None,
) -> RuleScore:
    """A reasoning-chain answer: the one-candidate ladder on the keyword, the candidates read from the links."""
    candidates = chain_candidates(needles, keyword=keyword, language=language)
    return one_candidate_score(
        answer,
        keyword=keyword,
        candidates=candidates,
        language=language,
        reference=reference,
        needles=needles,
        question=question,
        prompt=prompt,
    )
