"""A resume never mixes inputs: each cached prediction must have been made from the sample this run builds.

EvalScope's cache matches a cached prediction to a sample by its position alone, and its identity check covers the
settings, not the files they point at (an edited corpus or needle bank), and ``--rerun-review`` overrides it on
purpose. So before any model request the cached rows' own metadata (what each prompt was built from) is compared
with the samples planned now; any difference refuses the resume with one message naming what changed.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import NiahConfigError, quoted
from ..metadata import SampleMeta
from .prompts import PromptSpec

__all__ = [
    'CachedRow',
    'InputChange',
    'cached_input_changes',
    'check_cached_inputs',
    'haystack_changes',
    'read_cached_rows',
    'spot_checked_index',
]

# What a prompt is built from, as its metadata records it: the cell, the task's needles, question and answer, where
# the haystack starts, and the corpus and tokenizer. Measured values (token counts, achieved depths) are left out:
# they follow from these.
COMPARED_FIELDS = (
    'task',
    'language',
    'context_length',
    'depth_percent',
    'repeat',
    'pick',
    'needles',
    'question',
    'reference_answer',
    'answer_keys',
    'task_data',
    'start_token',
    'corpus_file',
    'corpus_sha256',
    'tokenizer',
)
_HASH_FIELDS = ('corpus_sha256',)
_HASH_CHARS = 12  # enough to tell two files apart in a message
_VALUE_CHARS = 60
# Characters kept of each end of a cached prompt: the template's text and the question around the haystack.
_PROMPT_END_CHARS = 16384


@dataclass(frozen=True)
class InputChange:
    """One input of one cached sample that differs from this run's: ``field`` is a metadata field, or
    ``system_prompt`` / ``prompt_template`` for the prompt's frame. ``shown`` False: the values are not quoted (a
    whole template, or nothing recorded)."""

    subset: str
    index: int
    field: str
    cached: Any
    current: Any
    shown: bool = True
    note: str = ''  # said instead of the values when they are not shown


@dataclass(frozen=True)
class CachedRow:
    """What a resume compares of one prediction row: its metadata and the prompt it sent, the prompt's ends kept and
    the whole of it hashed (a row holds a whole haystack: a grid of 1M-token prompts would hold gigabytes)."""

    metadata: Mapping[str, Any] | None
    system: str  # '' when no system message was sent
    user_length: int | None  # None: no user message in the row
    user_head: str
    user_tail: str
    user_sha256: str

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> CachedRow:
        messages = row.get('messages')
        contents: dict[str, Any] = {}
        for message in messages if isinstance(messages, list) else []:
            if isinstance(message, dict):
                contents.setdefault(message.get('role'), message.get('content'))
        system, user = contents.get('system'), contents.get('user')
        user = user if isinstance(user, str) else None
        metadata = row.get('metadata')
        return cls(
            metadata=metadata if isinstance(metadata, Mapping) else None,
            system=system if isinstance(system, str) else '',
            user_length=None if user is None else len(user),
            user_head=(user or '')[:_PROMPT_END_CHARS],
            user_tail=(user or '')[-_PROMPT_END_CHARS:],
            user_sha256=_sha256(user or ''),
        )


def read_cached_rows(path: str | Path) -> dict[int, CachedRow]:
    """A predictions jsonl as EvalScope reads it: rows by sample index, the last row of an index winning; rows cut
    by a crash (not JSON) or without an index are skipped, as EvalScope skips them. Read a line at a time."""
    rows: dict[int, CachedRow] = {}
    if not Path(path).is_file():
        return rows
    with Path(path).open(encoding='utf-8', errors='replace') as handle:
        for line in handle:
            try:
                row = json.loads(line)
            except (ValueError, RecursionError):  # a cut row, or one nested deeper than the parser's recursion
                continue
            if isinstance(row, dict) and isinstance(row.get('index'), int) and not isinstance(row['index'], bool):
                rows[row['index']] = CachedRow.from_row(row)
    return rows


def cached_input_changes(
    subset: str, expected: Mapping[int, SampleMeta], rows: Mapping[int, CachedRow], prompt: PromptSpec
) -> list[InputChange]:
    """Every difference between the cached rows and the samples now at their index (``expected``: the planned
    metadata with the corpus and tokenizer of this run). Rows at an index this run does not have are not reused by
    EvalScope and not compared; a field the cached metadata does not record is not compared either."""
    changes = []
    for index, row in sorted(rows.items()):
        meta = expected.get(index)
        if meta is None:
            continue
        cached = row.metadata or {}
        if 'subset' not in cached:
            changes.append(InputChange(subset, index, 'metadata (what the prompt was built from)', None, None, False))
            continue
        current = _comparable(meta.to_dict())
        recorded = _comparable(dict(cached))
        for name in COMPARED_FIELDS:
            if name in recorded and recorded[name] is not None and recorded[name] != current.get(name):
                changes.append(InputChange(subset, index, name, recorded[name], current.get(name)))
        asked = recorded.get('question') if isinstance(recorded.get('question'), str) else meta.question
        changes += _frame_changes(subset, index, row, asked, prompt)
    return changes


def spot_checked_index(
    expected: Mapping[int, SampleMeta], rows: Mapping[int, CachedRow], changes: Sequence[InputChange]
) -> int | None:
    """The cached sample whose prompt is built again and compared whole, for what metadata does not record (the
    buffers move the haystack but are in no sample's metadata): the shortest one (cheapest to build) whose recorded
    inputs all match. None when no cached row pairs with a sample, or some input already differs."""
    if changes:
        return None
    paired = [index for index in rows if index in expected]
    return min(paired, key=lambda index: (expected[index].context_length, index)) if paired else None


def haystack_changes(subset: str, index: int, row: CachedRow, user_prompt: str) -> list[InputChange]:
    """The prompt built now for a cached sample against the one its row says was sent."""
    if row.user_length is None or row.user_sha256 == _sha256(user_prompt):
        return []
    note = (
        f'the prompt of cached sample {index}, built again from the same corpus, needles and question, differs: a '
        'setting that places the text changed, e.g. start_buffer, end_buffer or length_buffer'
    )
    return [InputChange(subset, index, 'haystack', None, None, shown=False, note=note)]


def check_cached_inputs(changes: Iterable[InputChange], *, cache_dir: str, rerun_review: bool) -> None:
    """Refuse the resume, naming each changed input once per subset; nothing when ``changes`` is empty."""
    by_subset: dict[str, dict[str, InputChange]] = defaultdict(dict)  # subset -> field -> its first change
    samples: dict[str, set[int]] = defaultdict(set)
    for change in changes:
        by_subset[change.subset].setdefault(change.field, change)
        samples[change.subset].add(change.index)
    if not by_subset:
        return
    parts = []
    for subset, fields in by_subset.items():
        named = ', '.join(_described(change) for change in fields.values())
        count = len(samples[subset])
        parts.append(f'subset {subset}: {named} (in {count} cached sample{"s" if count > 1 else ""})')
    resuming = '--rerun-review reuses the cached predictions too, so resuming' if rerun_review else 'Resuming'
    raise NiahConfigError(
        'use_cache',
        f'the predictions cached in {cache_dir!r} were made from other inputs than this run builds: '
        + '; '.join(parts)
        + f'. {resuming} would score answers to one input against another. Either run fresh in a new work dir '
        '(without --use-cache), or restore the inputs the cached run used',
    )


def _described(change: InputChange) -> str:
    if not change.shown:
        return f'{change.field} changed' + (f' ({change.note})' if change.note else '')
    return f'{change.field} changed ({_shown(change.field, change.cached)} -> {_shown(change.field, change.current)})'


def _comparable(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Metadata as JSON reads it back (tuples as lists, typed as SampleMeta types them), so a planned sample and a
    cached row compare equal when their inputs are."""
    try:
        typed = SampleMeta.from_dict(metadata).to_dict()
    except (TypeError, ValueError):  # a row from another version or tool: compare what it holds as it is
        typed = dict(metadata)
    return json.loads(json.dumps(typed, default=str))


def _frame_changes(subset: str, index: int, row: CachedRow, question: str, prompt: PromptSpec) -> list[InputChange]:
    """The system prompt and the user template around the haystack, read from the prompt the cached row sent."""
    changes = []
    if row.system != prompt.system_prompt:
        changes.append(InputChange(subset, index, 'system_prompt', row.system, prompt.system_prompt))
    if row.user_length is not None:
        marker = '\0haystack\0'
        before, after = prompt.user_message(context=marker, question=question).split(marker)
        fits = row.user_length >= len(before) + len(after)
        # Ends longer than the kept ones (a template of over 16k characters) are compared as far as they were kept.
        head, tail = before[:_PROMPT_END_CHARS], after[-_PROMPT_END_CHARS:]
        if not (fits and row.user_head.startswith(head) and row.user_tail.endswith(tail)):
            changes.append(InputChange(subset, index, 'prompt_template', None, prompt.user_template, False))
    return changes


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode('utf-8', errors='surrogatepass')).hexdigest()


def _shown(field: str, value: Any) -> str:
    if field in _HASH_FIELDS and isinstance(value, str):
        return value[:_HASH_CHARS] + '..'
    return quoted(value, limit=_VALUE_CHARS)
