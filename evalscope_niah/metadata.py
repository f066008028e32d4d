"""The typed metadata every sample carries through EvalScope: planned before the haystack, measured after it.

EvalScope stores sample metadata as a JSON object (in predictions, reviews and its cache), so the record crosses
that boundary as ``to_dict()`` and comes back through ``from_dict()``; nothing else reads it by string keys.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ['GridCell', 'SampleMeta']


@dataclass(frozen=True)
class GridCell:
    """One sample's coordinates. ``depth_percent`` None marks the needle-absent control cell of a length.

    ``repeat`` selects the haystack's starting point in the corpus; ``pick`` which of the needles a task picks per
    cell (a needle bank's) the sample asks.
    """

    subset: str
    context_length: int
    depth_percent: float | None
    repeat: int = 0
    pick: int = 0

    @property
    def control(self) -> bool:
        return self.depth_percent is None

    def describe(self) -> str:
        where = 'the needle-absent control' if self.depth_percent is None else f'depth {self.depth_percent}%'
        return f'(length {self.context_length}, {where}, repeat {self.repeat}, pick {self.pick})'


_TUPLE_FIELDS = ('needles', 'answer_keys', 'achieved_depth_percents')
# Task data that metadata written before `task_data` existed (an older cache) holds at the top level or in `extra`.
_LEGACY_TASK_DATA = ('distractor_values', 'candidates')
_LEGACY_JUDGE_HINT = ('judge_context', 'judge_hint')  # (key in the old `extra`, key in task_data)


@dataclass(frozen=True)
class SampleMeta:
    """What scoring, reports and the request order need of one sample.

    The first block is known when the sample is planned; the second is filled in when its haystack is built (just
    before the request), and stays None for a sample never sent.
    """

    subset: str
    # The language of the needles, question and key as their text is written (samples.plan detects it): rules and
    # the judge check read it. The haystack's language is the subset's; the two differ for an English needle in the
    # chinese subset.
    language: str
    task: str
    context_length: int
    depth_percent: float | None
    repeat: int
    pick: int
    needles: tuple[str, ...]
    question: str
    reference_answer: str
    answer_keys: tuple[str, ...]
    start_token: int
    divergence_token: int
    # The task's own data about the sample (its SampleData as JSON): read back typed by the task, carried here as is.
    task_data: Mapping[str, Any] = field(default_factory=dict)
    # Measured when the haystack is built.
    prompt_tokens: int | None = None
    haystack_tokens: int | None = None
    achieved_depth_percent: float | None = None
    achieved_depth_percents: tuple[float, ...] = ()
    corpus_file: str | None = None
    corpus_sha256: str | None = None
    tokenizer: str | None = None

    @property
    def control(self) -> bool:
        return self.depth_percent is None

    @property
    def prefix_group(self) -> tuple[str, int]:
        """Prompts of one group follow the same text up to their divergence token (ordering.py, prefix_gate.py)."""
        return (self.subset, self.start_token)

    @property
    def cell(self) -> GridCell:
        return GridCell(self.subset, self.context_length, self.depth_percent, self.repeat, self.pick)

    def with_build(self, **measured: Any) -> SampleMeta:
        return dataclasses.replace(self, **measured)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for name in _TUPLE_FIELDS:
            data[name] = list(data[name])
        data['control'] = self.control  # read by people and EvalScope's dashboard; derived, so not read back
        data['task_data'] = dict(self.task_data)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SampleMeta:
        known = {item.name for item in dataclasses.fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        if 'pick' not in values and 'draw' in data:  # its name in rows cached by 0.1.0: such a run still resumes
            values['pick'] = data['draw']
        for name in _TUPLE_FIELDS:
            if name in values and values[name] is not None:
                values[name] = tuple(values[name])
        for name in ('context_length', 'repeat', 'pick', 'start_token', 'divergence_token'):
            if values.get(name) is not None:
                values[name] = int(values[name])
        if values.get('depth_percent') is not None:
            values['depth_percent'] = float(values['depth_percent'])
        values.setdefault('repeat', 0)
        values.setdefault('pick', 0)
        values['task_data'] = _task_data(data)
        return cls(**values)


def _task_data(data: Mapping[str, Any]) -> dict[str, Any]:
    task_data = data.get('task_data')
    if isinstance(task_data, Mapping):
        return dict(task_data)
    legacy = {name: data[name] for name in _LEGACY_TASK_DATA if data.get(name)}
    extra = data.get('extra')
    old_key, new_key = _LEGACY_JUDGE_HINT
    if isinstance(extra, Mapping) and extra.get(old_key):
        legacy[new_key] = extra[old_key]
    return legacy
