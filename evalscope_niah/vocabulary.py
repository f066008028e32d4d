"""The package's closed vocabularies, each declared once: parameters, records and reports import them from here."""

from __future__ import annotations

from typing import Literal, get_args

from .errors import NiahConfigError

# The names the benchmark is registered under in EvalScope: the built-in's (taken over) and our public one. Also the
# keys of the keyed form of dataset_args ({'needle_haystack': {...}}).
BENCHMARK_NAMES: tuple[str, ...] = ('needle_haystack', 'niah')

Language = Literal['en', 'zh']
LANGUAGES: tuple[str, ...] = get_args(Language)

# How the effective context length is judged: an absolute accuracy, or a share of the shortest length's accuracy.
EffectiveLengthMode = Literal['absolute', 'relative']
EFFECTIVE_LENGTH_MODES: tuple[str, ...] = get_args(EffectiveLengthMode)

# What the data says of a length of the grid (and of the effective length it bounds): it passes, it fails, or it
# cannot be told (no scored sample, or too few: the unscored ones could still tip it). A server outage is never a
# finding about the model, so errors make a length 'unknown', never 'fail'. reporting/stats.py decides it for the
# results; the adaptive planner (making/adaptive_plan.py) uses the same words.
LengthStatus = Literal['pass', 'fail', 'unknown']
LENGTH_STATUSES: tuple[str, ...] = get_args(LengthStatus)

# What became of a sample's judge call: graded, called and failed (the rule score stands in), or never asked.
JudgeStatus = Literal['ok', 'failed', 'not_called']
JUDGE_STATUSES: tuple[str, ...] = get_args(JudgeStatus)

# Why a reply ran out of room: the answer budget (max_tokens) or the model's context window.
BudgetReason = Literal['token limit', 'context window']

# Why a finished reply has no final answer to score: only reasoning (reasoning_content, or <think> blocks with nothing
# after them), or only a tool call. Such a reply is flagged and left out of accuracy, never scored 0.
NoAnswerReason = Literal['reasoning_only', 'tool_call_only']
NO_ANSWER_REASONS: tuple[str, ...] = get_args(NoAnswerReason)

# What decided a sample's accuracy: the LLM judge, the rule score by design, or the rule score standing in for a
# judge that failed qualification (reports label the last one, so a rule number is never read as a judge's).
ScoringSource = Literal['judge', 'rule', 'rule_fallback']
SCORING_SOURCES: tuple[str, ...] = get_args(ScoringSource)

# 'replicas': the prefix order with the prefix groups taking turns (ordering.prefix_friendly_order, interleave).
RequestOrder = Literal['prefix', 'grid', 'replicas']
# How the grid is swept: every sample, or rounds chosen from the scores so far (params/sweep.py).
SweepMode = Literal['grid', 'adaptive']

# The needle-absent control's reported value: 1.0 when the reply stated the needle's fact anyway. The control task
# writes it and every run's summaries (the guess rate) read it, so the name lives here, below both.
GUESSED = 'guessed'

# tokenizer_path 'server': lengths counted by the model server's own tokenizer. The results then name that tokenizer
# 'server:<served model>' (serving.endpoint writes it; reporting's labels and served-token units read it).
SERVER_TOKENIZER = 'server'
SERVED_TOKENIZER_PREFIX = f'{SERVER_TOKENIZER}:'


def served_tokenizer_name(model: str) -> str:
    """The name of the tokenizer a model server counts with: ``'server:<model>'``."""
    return SERVED_TOKENIZER_PREFIX + model


def check_language(language: str, *, param: str = 'language') -> None:
    """Refuse a language outside LANGUAGES with one ``NiahConfigError`` naming ``param`` and what is allowed; the one
    check of a language, for parameters, corpus data, rules and the judge check alike (return None when known)."""
    if language not in LANGUAGES:
        raise NiahConfigError(param, f'{language!r} is not one of {", ".join(LANGUAGES)}')
