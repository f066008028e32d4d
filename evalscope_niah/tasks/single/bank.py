"""The needle bank of the single task: fictional facts picked with inspect_evals' niah sampling (fixed / sequential /
random), the shipped ``needle_bank.jsonl`` or a user's file.

Every fact is invented, so a model can only answer from the haystack, never from what it learnt in training.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, get_args

from ...errors import NiahConfigError
from ...params.needlebench_names import RECORD_KEYS, is_needlebench_record, needlebench_record
from ...safe_files import read_bounded, regular_file
from ...vocabulary import LANGUAGES, Language

SampleMethod = Literal['fixed', 'sequential', 'random']

SAMPLE_METHODS: tuple[str, ...] = get_args(SampleMethod)

BUILTIN_BANK_FILE = Path(__file__).with_name('needle_bank.jsonl')
# Largest needle bank read: its entries are sentences; thousands of them are well under a megabyte.
MAX_BANK_BYTES = 16 * 1024 * 1024

_BANK_REQUIRED_KEYS = ('needle', 'question', 'answer', 'language')
_BANK_KEYS = ('id', *_BANK_REQUIRED_KEYS)


@dataclasses.dataclass(frozen=True)
class BankNeedle:
    """One fictional fact with the question that asks for it and its short answer (a substring of ``needle``)."""

    id: str
    language: Language
    needle: str
    question: str
    answer: str


# --- needle bank -------------------------------------------------------------------------------------------------


def load_needle_bank(source: str | Path | None = None) -> tuple[BankNeedle, ...]:
    """The shipped bank (``None`` or ``'builtin'``) or a user's ``.jsonl`` / ``.json`` file, validated."""
    if source is None or source == 'builtin':
        return _builtin_bank()
    return _read_bank(Path(source).expanduser())


@functools.cache
def _builtin_bank() -> tuple[BankNeedle, ...]:
    return _read_bank(BUILTIN_BANK_FILE)


def _read_bank(path: Path) -> tuple[BankNeedle, ...]:
    suffix = path.suffix.lower()
    if suffix not in ('.jsonl', '.json'):
        raise NiahConfigError(
            'needle_bank', f"{str(path)!r}: use 'builtin', a .jsonl file (one object per line) or a .json list"
        )
    if not path.exists() and not path.is_symlink():
        raise NiahConfigError('needle_bank', f'{str(path)!r} does not exist')
    try:
        # The corpus files' checks: a FIFO or a device would hang the read or never end it; the size is capped.
        where = f'needle bank {str(path)!r}'
        text = read_bounded(
            regular_file(path, param='needle_bank', where=where), limit=MAX_BANK_BYTES, param='needle_bank', where=where
        ).decode('utf-8')
    except UnicodeDecodeError as exc:
        raise NiahConfigError('needle_bank', f'{str(path)!r} is not valid UTF-8 (byte {exc.start})') from None
    except OSError as exc:
        raise NiahConfigError('needle_bank', f'{str(path)!r} is unreadable ({exc.strerror or exc})') from None
    records = _jsonl_records(path, text) if suffix == '.jsonl' else _json_records(path, text)
    if not records:
        raise NiahConfigError('needle_bank', f'{str(path)!r} holds no entries')

    needles: list[BankNeedle] = []
    where_id: dict[str, str] = {}
    per_language = dict.fromkeys(LANGUAGES, 0)
    for where, record in records:
        item = _bank_entry(where, record)
        per_language[item.language] += 1
        generated = 'id' not in record
        if generated:
            # Numbered within its language, like the builtin ids ('en-03' is the third English entry).
            item = dataclasses.replace(item, id=f'{item.language}-{per_language[item.language]:02d}')
        if item.id in where_id:
            origin = ' (generated from the language; give this entry an explicit id)' if generated else ''
            raise NiahConfigError(
                'needle_bank', f'{where}: id {item.id!r}{origin} is already used by {where_id[item.id]}; ids are unique'
            )
        where_id[item.id] = where
        needles.append(item)
    return tuple(needles)


def _jsonl_records(path: Path, text: str) -> list[tuple[str, Any]]:
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue  # blank lines (a trailing newline, spacing) carry nothing
        where = f'{str(path)!r} line {number}'
        try:
            records.append((where, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise NiahConfigError('needle_bank', f'{where} is not JSON ({exc.msg}, column {exc.colno})') from None
        except RecursionError:
            raise NiahConfigError('needle_bank', f'{where} is nested deeper than any needle record') from None
    return records


def _json_records(path: Path, text: str) -> list[tuple[str, Any]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NiahConfigError(
            'needle_bank', f'{str(path)!r} is not JSON ({exc.msg}, line {exc.lineno} column {exc.colno})'
        ) from None
    except RecursionError:
        raise NiahConfigError('needle_bank', f'{str(path)!r} is nested deeper than any needle bank') from None
    if not isinstance(data, list):
        raise NiahConfigError('needle_bank', f'{str(path)!r} must hold a JSON list of objects, not {_kind(data)}')
    return [(f'{str(path)!r} entry {number}', record) for number, record in enumerate(data, start=1)]


def _bank_entry(where: str, record: Any) -> BankNeedle:
    allowed = ', '.join(_BANK_KEYS)
    if not isinstance(record, dict):
        raise NiahConfigError('needle_bank', f'{where} must be a JSON object with keys {allowed}, not {_kind(record)}')
    if is_needlebench_record(record):  # OpenCompass NeedleBench's needles.jsonl layout
        record = needlebench_record(where, record)
    unknown = sorted(set(record) - set(_BANK_KEYS))
    if unknown:
        raise NiahConfigError(
            'needle_bank',
            f'{where}: unknown key {unknown[0]!r}; allowed keys: {allowed} '
            f"(or NeedleBench's: {', '.join(RECORD_KEYS)})",
        )
    for key in _BANK_REQUIRED_KEYS:
        if key not in record:
            raise NiahConfigError(
                'needle_bank', f'{where}: missing key {key!r} (required: {", ".join(_BANK_REQUIRED_KEYS)})'
            )
    values: dict[str, str] = {}
    for key in _BANK_KEYS:
        if key not in record:
            continue
        value = record[key]
        if not isinstance(value, str):
            raise NiahConfigError('needle_bank', f'{where}: {key!r} must be a string, not {_kind(value)}')
        if not value.strip():
            raise NiahConfigError('needle_bank', f'{where}: {key!r} must not be empty')
        values[key] = value.strip()
    if values['language'] not in LANGUAGES:
        raise NiahConfigError(
            'needle_bank', f"{where}: 'language' is {values['language']!r}; allowed: {' or '.join(LANGUAGES)}"
        )
    if values['answer'] not in values['needle']:
        raise NiahConfigError(
            'needle_bank',
            f"{where}: 'answer' {values['answer']!r} must occur verbatim in 'needle' (it is the keyword scored)",
        )
    return BankNeedle(
        id=values.get('id', ''),
        language=values['language'],  # type: ignore[arg-type]  # checked against LANGUAGES above
        needle=values['needle'],
        question=values['question'],
        answer=values['answer'],
    )


def _kind(value: Any) -> str:
    return {dict: 'an object', list: 'a list', str: 'a string', bool: 'a boolean', type(None): 'null'}.get(
        type(value), 'a number'
    )


def pick_needles(
    bank: Sequence[BankNeedle],
    *,
    language: Language,
    count: int,
    sample_method: SampleMethod,
    fixed_index: int = 0,
    seed: int = 0,
) -> tuple[BankNeedle, ...]:
    """``count`` entries of ``language`` (in bank order), chosen as inspect_evals' niah does.

    fixed: entry ``fixed_index`` every time; sequential: ``fixed_index``, the next, ... wrapping around;
    random: one pseudo-random entry per pick, the same for the same seed on every platform.
    """
    if count < 1:
        raise NiahConfigError('n_needles', f'must be at least 1, got {count}')
    if sample_method not in SAMPLE_METHODS:
        raise NiahConfigError('sample_method', f'{sample_method!r} is not one of {", ".join(SAMPLE_METHODS)}')
    entries = language_entries(bank, language)
    n = len(entries)
    if not 0 <= fixed_index < n:
        raise NiahConfigError(
            'fixed_index', f'{fixed_index} is outside 0..{n - 1} (the bank has {n} {language!r} entries)'
        )
    if sample_method == 'fixed':
        return (entries[fixed_index],) * count
    if sample_method == 'sequential':
        return tuple(entries[(fixed_index + pick) % n] for pick in range(count))
    # A string seed is hashed with SHA-512 by random.seed, so picks do not depend on PYTHONHASHSEED or platform.
    rng = random.Random(f'{seed}:{language}')
    # As inspect: distinct entries while the bank lasts; beyond it, whole shuffles of the bank and then a distinct rest.
    order = rng.sample(range(n), n) * (count // n) + rng.sample(range(n), count % n)
    return tuple(entries[index] for index in order)


def spread_over_grid(picked: Sequence[BankNeedle], *, cells: int, runs: int) -> tuple[BankNeedle, ...]:
    """inspect_evals' spread of ``n_needles`` picks over a grid of ``cells`` cells, ``runs`` times: the picks cut or
    cycled to one per cell (lengths outer, positions inner), each further run the same list shifted on by one."""
    per_cell = [picked[index % len(picked)] for index in range(cells)]
    return tuple(per_cell[(index + run) % cells] for run in range(runs) for index in range(cells))


def language_entries(bank: Sequence[BankNeedle], language: Language) -> list[BankNeedle]:
    """The bank's entries of ``language`` in bank order; refused when it has none."""
    entries = [item for item in bank if item.language == language]
    if not entries:
        present = sorted({item.language for item in bank})
        raise NiahConfigError(
            'needle_bank',
            f'has no {language!r} entries (it has: {", ".join(present) or "none"}); add some or pick another language',
        )
    return entries
