"""Per-sample report records (`SampleResult`) and their serialisation (`to_dict` / `from_dict`, one JSON object per
results-file line). Shared by every task: a task's own values travel in `task_values`, declared by the task
(``Task.reported_values``), never as fields here. No evalscope import.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..serving.server_values import MAX_PLAUSIBLE_TOKENS
from ..vocabulary import (
    GUESSED,
    JUDGE_STATUSES,
    NO_ANSWER_REASONS,
    SCORING_SOURCES,
    JudgeStatus,
    NoAnswerReason,
    ScoringSource,
)

__all__ = ['GUESSED', 'LEGACY_TASK_VALUES', 'MAX_TEXT_CHARS', 'SampleResult', 'bounded_text']

# Task values that results files written before `task_values` existed hold at the top level of a row.
LEGACY_TASK_VALUES = (GUESSED, 'precision')

# Model output kept per sample (answer, reasoning), in characters including the cut marker: enough to see what
# the model said, bounded so a rambling reply cannot blow up the results file or the HTML heatmap.
MAX_TEXT_CHARS = 1000
_CUT_MARKER = ' […cut {} chars]'
# Optional fields written only when set, so files of runs without them stay byte-identical to older versions.
_OMIT_WHEN_NONE = (
    'answer',
    'reasoning',
    'judge_rating',
    'served_prompt_tokens',
    'served_completion_tokens',
    'scoring',
    'no_answer',
    'tokenizer',
)


def _check_unit_interval(name: str, value: float | None) -> None:
    # `not 0 <= x <= 1` is also True for NaN, so NaN is rejected here too.
    if value is not None and not 0.0 <= value <= 1.0:
        raise ValueError(f'{name} must be in [0, 1] or None, got {value!r}')


def _check_finite(name: str, value: float | None) -> None:
    if value is not None and not math.isfinite(value):
        raise ValueError(f'{name} must be finite or None, got {value!r}')


def _as_int(name: str, value: Any) -> int:
    # bool is an int subclass; a True context length is a bug, not a 1-token context.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f'{name} must be an int, got {value!r}')
    return value


def _as_float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f'{name} must be a number, got {value!r}')
    return float(value)


def _as_opt_float(name: str, value: Any) -> float | None:
    return None if value is None else _as_float(name, value)


def checked_cell(context_length: Any, depth_percent: Any) -> tuple[int, float | None]:
    """A cell's length and depth as a results row must hold them (an int from 1 to MAX_PLAUSIBLE_TOKENS; a depth
    from 0 to 100, or None for a control), else ValueError: the one check of every file that names cells (results
    and progress files), so NaN or a length of 10**300 is never drawn as a row."""
    length = _as_int('context_length', context_length)
    depth = _as_opt_float('depth_percent', depth_percent)
    if not 0 < length <= MAX_PLAUSIBLE_TOKENS:
        raise ValueError(f'context_length must be from 1 to {MAX_PLAUSIBLE_TOKENS}, got {length!r}')
    if depth is not None and not 0.0 <= depth <= 100.0:  # NaN fails this too
        raise ValueError(f'depth_percent must be in [0, 100], got {depth!r}')
    return length, depth


def _as_opt_str(name: str, value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f'{name} must be a string or None, got {value!r}')
    return value


def _as_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f'{name} must be a bool, got {value!r}')
    return value


def _as_opt_int(name: str, value: Any) -> int | None:
    return None if value is None else _as_int(name, value)


def bounded_text(text: str | None, *, limit: int = MAX_TEXT_CHARS) -> str | None:
    """`text` cut to at most `limit` characters, ending in a marker that says how much was cut; idempotent."""
    if text is None or len(text) <= limit:
        return text
    # The marker for cutting everything is the longest one this text can need, so the result always fits.
    keep = limit - len(_CUT_MARKER.format(len(text)))
    if keep < 0:
        raise ValueError(f'limit must leave room for the cut marker, got {limit!r}')
    return text[:keep] + _CUT_MARKER.format(len(text) - keep)


@dataclass(frozen=True)
class SampleResult:
    """One scored (or errored) NIAH sample.

    `accuracy` is the final score (judge, or rule fallback).  None means the model server errored: the sample is
    left out of every mean and counted in `errors` instead.  None with no `error` and `budget_exhausted` means the
    reply was cut by the token limit: left out of every mean too, counted in `budget_exhausted`, not in `errors`.
    None with no `error` and a `no_answer` reason means the reply finished with no final answer (only reasoning, or
    only a tool call): left out of every mean as well, counted in `no_answer`, not in `errors`.
    `judge_accuracy` is set exactly when the judge answered (`judge_status == 'ok'`).

    A `control` sample has no needle (the right answer is that the document does not say): its `depth_percent` is
    None, its `accuracy` is the abstention score (1.0 = abstained) and `guessed` says whether the reply stated the
    needle fact anyway (its `task_values[GUESSED]`).

    `task_values` are the values the sample's task reports beside the shared ones (``Task.reported_values``, e.g. a
    multi-needle reply's precision): each a finite number, averaged per cell by the statistics.

    What the model said, for reading next to the score: `answer` (its final answer, reasoning stripped) and
    `reasoning` (its reasoning block), each cut to `MAX_TEXT_CHARS` with a marker; `judge_rating` is the judge's
    raw rating (Kamradt's 1-10 rubric).  `served_prompt_tokens` / `served_completion_tokens` are the token counts
    the server reported; `scoring` says what decided `accuracy` ('judge', 'rule', or 'rule_fallback' when the
    judge could not be used); `no_answer` says why a finished reply had no final answer ('reasoning_only',
    'tool_call_only').  These are optional and left out of `to_dict` when None.

    Each field's comment is its meaning on the docs' results-files page, which is generated from them.
    """

    subset: str  # the subset the sample belongs to (a corpus and language: 'english', 'chinese', ...)
    context_length: int  # the prompt's planned length, in tokens of `tokenizer`
    depth_percent: float | None  # where the needle was placed, 0 (start) to 100 (end); None for a control sample
    # the final score, 0-1 (judge, or rule fallback); None when unscored: a server fault (error), a reply cut before
    # its answer (budget_exhausted) or one with no final answer (no_answer), each counted apart, never as a 0
    accuracy: float | None
    rule_recall: float | None  # the task's rule score, 0-1, always computed; None when there was no reply to score
    levenshtein: float | None  # similarity of the answer to the reference, 0-1 (a diagnostic, never the score)
    judge_accuracy: float | None  # the judge's verdict, 0-1; set exactly when judge_status is 'ok'
    judge_status: JudgeStatus  # the judge call: 'ok' (it answered), 'failed' (no usable verdict) or 'not_called'
    error: str | None = None  # the server fault that left the sample unscored (counted in errors, never as a 0)
    budget_exhausted: bool = False  # the reply was cut by max_tokens or the window: unscored, and no error
    control: bool = False  # a needle-absent control sample (the right answer is that the text does not say)
    answer: str | None = None  # the model's final answer, reasoning stripped, cut to 1,000 characters with a marker
    reasoning: str | None = None  # the model's reasoning block, cut the same way
    judge_rating: float | None = None  # the judge's raw rating (Kamradt's 1-10 rubric)
    served_prompt_tokens: int | None = None  # prompt tokens the server said it read (absent without usage)
    served_completion_tokens: int | None = None  # reply tokens the server said it wrote (absent without usage)
    scoring: ScoringSource | None = None  # what decided accuracy: 'judge', 'rule', or 'rule_fallback'
    no_answer: NoAnswerReason | None = None  # why a finished reply had no final answer: 'reasoning_only', ...
    # The values the sample's task reports beside the shared ones (Task.reported_values), e.g. a multi-needle
    # reply's precision: each a finite number, averaged per cell.
    task_values: Mapping[str, float] = field(default_factory=dict)
    # The tokenizer that counted context_length (SampleMeta.tokenizer: 'Qwen/Qwen3-0.6B', 'server:<model>', ...):
    # the unit of every length shown. None in files written before it was recorded.
    tokenizer: str | None = None
    # The key facts the rule looked for in the answer: given with the needle, or derived from the needles you wrote
    # and the question; each cut to 1,000 characters. Absent when the sample has none (the needle recall decided).
    answer_keys: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self._check_dimensions()
        for name, value in self.task_values.items():
            if not isinstance(name, str) or name in _FIELD_NAMES:
                raise ValueError(f'task value name {name!r} must be a string other than a field name')
            _check_finite(f'task value {name!r}', _as_float(f'task value {name!r}', value))
        _check_unit_interval('accuracy', self.accuracy)
        _check_unit_interval('rule_recall', self.rule_recall)
        _check_unit_interval('judge_accuracy', self.judge_accuracy)
        _check_finite('levenshtein', self.levenshtein)
        _check_finite('judge_rating', self.judge_rating)
        self._check_judge()
        # A server fault leaves nothing to score; a score next to an error would be silently averaged in.
        if self.error is not None and self.accuracy is not None:
            raise ValueError('a sample with an error must have accuracy=None')
        self._check_no_answer()
        for name in ('served_prompt_tokens', 'served_completion_tokens'):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= MAX_PLAUSIBLE_TOKENS:
                raise ValueError(f'{name} must be an int from 0 to {MAX_PLAUSIBLE_TOKENS} or None, got {value!r}')
        # Frozen, so the bound is applied through object.__setattr__; bounded_text is idempotent, so a record
        # read back from a file is unchanged.
        object.__setattr__(
            self, 'answer_keys', tuple(bounded_text(key) or '' for key in _answer_keys(self.answer_keys))
        )
        object.__setattr__(self, 'answer', bounded_text(self.answer))
        object.__setattr__(self, 'reasoning', bounded_text(self.reasoning))

    def _check_dimensions(self) -> None:
        checked_cell(self.context_length, self.depth_percent)
        # depth None is how a control is recognised downstream; the flag and the depth must never disagree.
        if self.control != (self.depth_percent is None):
            raise ValueError(
                f'depth_percent must be None exactly for control samples '
                f'(control={self.control!r}, depth_percent={self.depth_percent!r})'
            )

    def _check_judge(self) -> None:
        if self.judge_status not in JUDGE_STATUSES:
            raise ValueError(f'judge_status must be one of {sorted(JUDGE_STATUSES)}, got {self.judge_status!r}')
        # Agreement statistics trust that 'ok' <=> a judge score exists; enforce it at the source.
        if (self.judge_status == 'ok') != (self.judge_accuracy is not None):
            raise ValueError(
                f'judge_accuracy must be set exactly when judge_status is "ok" '
                f'(status={self.judge_status!r}, judge_accuracy={self.judge_accuracy!r})'
            )
        if self.scoring is not None and self.scoring not in SCORING_SOURCES:
            raise ValueError(f'scoring must be one of {sorted(SCORING_SOURCES)} or None, got {self.scoring!r}')
        if self.scoring == 'judge' and self.judge_status != 'ok':
            raise ValueError(f'scoring "judge" needs a judge verdict (judge_status "ok"), got {self.judge_status!r}')

    def _check_no_answer(self) -> None:
        if self.no_answer is None:
            return
        if self.no_answer not in NO_ANSWER_REASONS:
            raise ValueError(f'no_answer must be one of {sorted(NO_ANSWER_REASONS)} or None, got {self.no_answer!r}')
        # A reply without a final answer has nothing to score: a score beside the flag would be averaged in.
        if self.accuracy is not None or self.error is not None:
            raise ValueError('a sample flagged no_answer must have accuracy=None and no error')

    @property
    def errored(self) -> bool:
        """True when the sample has no final score because of a fault (not because its reply ran out of room or
        finished without a final answer)."""
        return self.accuracy is None and not self.budget_excluded and not self.no_answer_excluded

    @property
    def no_answer_excluded(self) -> bool:
        """True when the reply finished with no final answer (only reasoning, or only a tool call): no score."""
        return self.accuracy is None and self.error is None and self.no_answer is not None

    @property
    def budget_excluded(self) -> bool:
        """True when the reply was cut by the token limit or context window: no score, and no error either."""
        return self.accuracy is None and self.error is None and self.budget_exhausted

    def to_dict(self) -> dict[str, Any]:
        """All fields; the optional ones (`answer` ... `scoring`, `task_values`, `tokenizer`, `answer_keys`) only when
        set."""
        data = asdict(self)
        for name in _OMIT_WHEN_NONE:
            if data[name] is None:
                del data[name]
        data['task_values'] = dict(self.task_values)
        if not data['task_values']:
            del data['task_values']
        if self.answer_keys:
            data['answer_keys'] = list(self.answer_keys)
        else:
            del data['answer_keys']
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SampleResult:
        """Inverse of `to_dict`; missing optional keys take their defaults, unknown keys are an error.

        Rows written before control samples existed (no `control`) read as needle samples; rows written before
        answers were kept read with `answer` ... `scoring` None; rows written before task values had their own
        field carry them at the top level (`LEGACY_TASK_VALUES`).
        """
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known - set(LEGACY_TASK_VALUES)
        if unknown:
            raise ValueError(f'unknown SampleResult fields: {sorted(unknown)}')
        try:
            subset = data['subset']
            if not isinstance(subset, str):
                raise ValueError(f'subset must be a string, got {subset!r}')
            status = data['judge_status']
            if not isinstance(status, str):
                raise ValueError(f'judge_status must be a string, got {status!r}')
            return cls(
                subset=subset,
                context_length=_as_int('context_length', data['context_length']),
                depth_percent=_as_opt_float('depth_percent', data['depth_percent']),
                accuracy=_as_opt_float('accuracy', data['accuracy']),
                rule_recall=_as_opt_float('rule_recall', data['rule_recall']),
                levenshtein=_as_opt_float('levenshtein', data['levenshtein']),
                judge_accuracy=_as_opt_float('judge_accuracy', data['judge_accuracy']),
                judge_status=status,
                error=_as_opt_str('error', data.get('error')),
                budget_exhausted=_as_bool('budget_exhausted', data.get('budget_exhausted', False)),
                control=_as_bool('control', data.get('control', False)),
                answer=_as_opt_str('answer', data.get('answer')),
                reasoning=_as_opt_str('reasoning', data.get('reasoning')),
                judge_rating=_as_opt_float('judge_rating', data.get('judge_rating')),
                served_prompt_tokens=_as_opt_int('served_prompt_tokens', data.get('served_prompt_tokens')),
                served_completion_tokens=_as_opt_int('served_completion_tokens', data.get('served_completion_tokens')),
                scoring=_as_opt_str('scoring', data.get('scoring')),
                no_answer=_as_opt_str('no_answer', data.get('no_answer')),
                task_values=_task_values(data),
                tokenizer=_as_opt_str('tokenizer', data.get('tokenizer')),
                answer_keys=_answer_keys(data.get('answer_keys', [])),
            )
        except KeyError as exc:
            raise ValueError(f'missing SampleResult field: {exc.args[0]}') from None


def _answer_keys(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(key, str) for key in value):
        raise ValueError(f'answer_keys must be a list of strings, got {value!r}')
    return tuple(value)


def _task_values(data: Mapping[str, Any]) -> dict[str, float]:
    values = data.get('task_values', {})
    if not isinstance(values, Mapping):
        raise ValueError(f'task_values must be an object of numbers, got {values!r}')
    # A legacy `guessed` was a JSON boolean.
    legacy = {
        name: float(data[name]) if isinstance(data[name], bool) else data[name]
        for name in LEGACY_TASK_VALUES
        if data.get(name) is not None
    }
    return {name: _as_float(f'task value {name!r}', value) for name, value in {**legacy, **values}.items()}


_FIELD_NAMES = frozenset(item.name for item in fields(SampleResult))
