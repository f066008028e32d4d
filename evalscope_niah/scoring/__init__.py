"""Task-neutral rule scoring: pure Python and deterministic, so it runs without a judge and can be checked against one.

One small module per job: ``bounds`` (every pass/fail/uncertain bound, each with why), ``text`` (normalisation,
units, key spans), ``cues`` (negation, retraction, hedge, list, abstention, other language, number words, a pasted
prompt decided by evidence), ``recall`` (needle recall), ``candidates`` (the one-candidate ladder), ``cdme``
(OpenCompass CDME's Levenshtein and keyword scores), ``reasoning_tags`` (the one reasoning-block stripper) and
``result`` (``RuleScore``, the one result type), ``single_needle`` (the single-needle ladder, twin of
``candidates``). Each task's own rule ladder lives in its folder (``tasks/<name>/rules.py``) and is built from these;
a task author imports them from ``tasks.kit``, the one import path for authors (this face serves the other layers).
"""

from __future__ import annotations

from ..vocabulary import LANGUAGES
from .bounds import CERTAIN_PASS, RULE_PASS_THRESHOLD, UNCERTAIN_SCORE_CAP
from .candidates import one_candidate_score
from .cdme import keyword_score, levenshtein_score
from .paste import Paste, PromptText, paste_evidence
from .reasoning_tags import strip_reasoning
from .recall import needle_recall, rule_is_certain
from .result import RuleScore

__all__ = [
    'CERTAIN_PASS',
    'LANGUAGES',
    'RULE_PASS_THRESHOLD',
    'UNCERTAIN_SCORE_CAP',
    'Paste',
    'PromptText',
    'RuleScore',
    'keyword_score',
    'levenshtein_score',
    'needle_recall',
    'one_candidate_score',
    'paste_evidence',
    'rule_is_certain',
    'strip_reasoning',
]
