"""A pasted prompt, decided by evidence, not by length: how much of an answer copies what the model was shown
(`PromptText`) beyond the texts it may echo (the question, the needles, the template), counted in n-grams of words
or Chinese characters.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from dataclasses import dataclass

from .bounds import LAST_RESORT_UNITS, MAX_SCAN_CHARS, PASTE_MIN_UNITS, PASTE_NGRAM, UNCERTAIN_SCORE_CAP
from .result import RuleScore
from .text import ZH_UNIT, answer_size, normalise


@dataclass(frozen=True)
class PromptText:
    """What the model was shown, where a pasted answer comes from.

    ``shown`` is the whole prompt (system prompt and user message: template, haystack, needles, question);
    ``template`` the run's system prompt and user template, which an answer may echo as freely as the question.
    """

    shown: str
    template: tuple[str, ...] = ()


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

    @property
    def found(self) -> bool:
        """The answer is pasted context, or too long to be one: no ladder takes it as a stated answer."""
        return self.pasted or self.too_long

    def verdict(self, language: str, *, certain: bool, lead: str = '') -> RuleScore:
        """Both ladders' verdict on an answer that is ``found``: at most the uncertain cap, scaled by the share of it
        that is not pasted. ``certain`` and ``lead`` (what the ladder saw before the paste) are each ladder's own."""
        return RuleScore.verdict(
            UNCERTAIN_SCORE_CAP * self.factor,
            certain,
            f'{lead}{self.describe(language)}: pasted text, not an answer',
            ('paste',) if self.pasted else ('long',),
        )

    def describe(self, language: str) -> str:
        unit = 'words' if language == 'en' else 'characters'
        if self.too_long:
            return f'{self.units} {unit} long, over the last-resort bound of {self.allowed_units} (no prompt known)'
        return f'{self.pasted_units} of its {self.units} {unit} copied verbatim from the prompt beyond the needle'


def _paste_units(text: str) -> list[str]:
    return ZH_UNIT.findall(normalise(text))


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
    prompt and memory bounded by the answer (its first ``MAX_SCAN_CHARS`` characters): the answer's n-grams are
    hashed into a set, and the prompt is streamed past them once, only when enough of the answer could be pasted.
    Without a prompt only ``LAST_RESORT_UNITS`` (or 3 x the reference, if longer) decides.
    """
    units = _paste_units(final[:MAX_SCAN_CHARS])
    size = max(1, len(units))
    if prompt is None or not prompt.shown:
        allowed_units = max(LAST_RESORT_UNITS[language], 3 * answer_size(reference, language))
        total = answer_size(final, language)
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
    for match in ZH_UNIT.finditer(normalise(prompt.shown)):
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
