"""The needle-absent control's rule: the right answer is that the document does not say."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...scoring.bounds import CONTROL_PARAPHRASE_SHARE
from ...scoring.text import WHITESPACE
from ...vocabulary import GUESSED
from ..kit import MAX_SCAN_CHARS, RuleScore, check_language, find_abstention, key_share, normalise

__all__ = ['absent_control_score']

# Words that turn what follows an abstention into a guess ("not stated, but probably ...").
_EN_GUESS_CUE = re.compile(
    r'\b(?:probably|likely|perhaps|maybe|possibly|presumably|i\s+(?:think|guess|believe|would\s+say|suspect)'
    r"|my\s+(?:best\s+)?guess|(?:might|may|could|would)\s+be|it'?s?\s+(?:likely|probably)|typically|usually"
    r'|commonly|generally)\b',
    re.IGNORECASE,
)
_ZH_GUESS_CUE = re.compile(r'可能|也许|大概|或许|推测|猜|估计|应该是|一般|通常|想必')


def _states(final: str, fact: str, *, language: str) -> bool:
    """True when ``fact`` occurs in the answer, ignoring case and whitespace.

    English compares with whitespace runs collapsed and requires word edges, so '42' is not found in '2042';
    Chinese has no word edges, so all whitespace is removed and any substring counts.
    """
    text, key = normalise(final[:MAX_SCAN_CHARS]), normalise(fact)
    if language == 'zh':
        key = WHITESPACE.sub('', key)
        return bool(key) and key in WHITESPACE.sub('', text)
    key = WHITESPACE.sub(' ', key).strip()
    if not key:
        return False
    pattern = r'(?<![^\W_])' + re.escape(key).replace(r'\ ', r'\s+') + r'(?![^\W_])'
    return re.search(pattern, text) is not None


def absent_control_score(answer: str, *, language: str, needle_answers: Sequence[str]) -> RuleScore:
    """Score a reply for the needle-absent control cell, where the right answer is that the document does not say.

    ``abstained``: the final answer (reasoning stripped) has an abstention phrase ("does not mention", "no
    information", "I'm not sure", "无法回答", "未提及", ...; both languages' phrases count in either subset).
    ``guessed``: it states one of ``needle_answers`` anyway (verbatim, or at least 40 % of its content words /
    character bigrams: a paraphrase), or a guessing word ("probably", "my guess", "可能", ...) follows the
    abstention. Always certain; ``acc`` is 1.0 only for a clean abstention, ``abstained`` and ``guessed`` (0/1) are
    reported beside it.
    """
    check_language(language)
    if isinstance(needle_answers, str):
        raise TypeError('needle_answers must be a sequence of strings, not a string')
    final = answer.strip()
    abstention = find_abstention(final)
    reasons = []
    stated = [fact for fact in needle_answers if _states(final, fact, language=language)]
    if stated:
        reasons.append(f'states the fact {stated[0]!r}')
    else:
        shares = [
            (share, fact) for fact in needle_answers if (share := key_share(final, fact)) >= CONTROL_PARAPHRASE_SHARE
        ]
        if shares:
            share, fact = max(shares)
            reasons.append(f'paraphrases the fact {fact!r} ({share:.0%} of its content)')
    if abstention is not None:
        rest = final[abstention.end() : MAX_SCAN_CHARS]
        cue = _EN_GUESS_CUE.search(rest) or _ZH_GUESS_CUE.search(rest)
        if cue:
            reasons.append(f'guesses after abstaining ({cue.group()!r})')
    guessed = bool(reasons)
    if abstention is None:
        reasons.insert(0, 'no abstention phrase')
    else:
        reasons.insert(0, f'abstains ({abstention.group()!r})')
    abstained = abstention is not None
    flags = tuple(flag for flag, on in (('abstained', abstained), ('guessed', guessed)) if on)
    return RuleScore(
        values={
            'acc': 1.0 if abstained and not guessed else 0.0,
            'abstained': float(abstained),
            GUESSED: float(guessed),
        },
        explanation='; '.join(reasons),
        flags=flags,
    )
