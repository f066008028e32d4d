"""Needle sources beyond one fixed sentence: a bank of fictional facts, reasoning chains and multi-value sets.

Every fact is invented, so a model can only answer from the haystack, never from what it learnt in training.
The bank is drawn from with inspect_evals' niah sampling (fixed / sequential / random), the chains follow
OpenCompass CDME's multi-hop needles, the multi-value sets follow RULER's multi-value task.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, get_args

from .errors import NiahConfigError
from .vocabulary import LANGUAGES, Language

SampleMethod = Literal['fixed', 'sequential', 'random']

SAMPLE_METHODS: tuple[str, ...] = get_args(SampleMethod)

DATA_DIR = Path(__file__).parent / 'data'
BUILTIN_BANK_FILE = DATA_DIR / 'needle_bank.jsonl'
REASONING_CHAINS_FILE = DATA_DIR / 'reasoning_chains.json'

_BANK_REQUIRED_KEYS = ('needle', 'question', 'answer', 'language')
_BANK_KEYS = ('id', *_BANK_REQUIRED_KEYS)

MAX_MULTI_VALUES = 20
BLANK = '________'

# Invented names the multi-value facts are about; none occurs in the shipped or the real corpora (tested).
MULTI_KEYS: dict[str, tuple[str, ...]] = {
    'en': (
        'Quillmere', 'Brackenholt', 'Vessingford', 'Ormsgate', 'Thistlewick', 'Caldermoor', 'Pellowin',
        'Marrowdeep', 'Juniperra', 'Kestrelmoor', 'Larkspire', 'Dunmallow', 'Fenwhistle', 'Greyvane', 'Hollowmere',
        'Ivorwick', 'Ketterby', 'Lowenfell', 'Mirabeck', 'Nettlebrine', 'Pendrelle', 'Quorrindale', 'Saffelwick',
        'Tarrowmund', 'Umbervale', 'Vintlemoor', 'Wyrmhallow', 'Yarrowick', 'Zephrendale', 'Corvistan', 'Drennagh',
        'Ellisgrove', 'Brindlecote', 'Ambervault',
    ),
    'zh': (
        '雾岭镇', '青苔村', '松风寨', '落星湾', '寒溪镇', '柳烟村', '石榴坡', '烟波渡', '桐花镇', '云梯村', '鹿鸣谷',
        '霜叶镇', '金穗屯', '枫语镇', '望月坪', '竹影村', '杏雨湾', '碧螺屿', '星垂坡', '梨雪村', '荷风镇', '铁砚村',
        '紫陌集', '秋水庄', '萤川镇', '麦浪坪', '苇岸村', '雁回岭', '橙灯镇', '青瓦坊', '蝉鸣湾', '棠溪堡',
    ),
}  # fmt: skip

_MULTI_TEXT = {
    'en': {
        'needle': 'One of the special magic numbers for {key} is: {value}.',
        'question': 'What are all the special magic numbers for {key} mentioned in the document?',
        'separator': ', ',
    },
    'zh': {
        'needle': '{key}的一个特殊魔法数字是：{value}。',
        'question': '文中提到的{key}的所有特殊魔法数字是什么？',
        'separator': '、',
    },
}

_GUIDE = {
    'en': {
        'format': "Answer in the format: '{blanked}'",
        'generic': 'Answer with the sentence from the document that answers the question.',
    },
    'zh': {
        'format': '请按照“{blanked}”的格式回答。',
        'generic': '请用文中回答该问题的句子作答。',
    },
}


@dataclasses.dataclass(frozen=True)
class BankNeedle:
    """One fictional fact with the question that asks for it and its short answer (a substring of ``needle``)."""

    id: str
    language: Language
    needle: str
    question: str
    answer: str


@dataclasses.dataclass(frozen=True)
class ReasoningChain:
    """Links that answer ``question`` only together; ``answer`` is a keyword from the last link."""

    id: str
    language: Language
    needles: tuple[str, ...]
    question: str
    answer: str
    reference: str


@dataclasses.dataclass(frozen=True)
class MultiRetrievalSet:
    """Several values of one key, one needle each; a correct answer lists every value."""

    key: str
    needles: tuple[str, ...]
    values: tuple[str, ...]
    question: str
    reference: str


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
    try:
        text = path.read_text(encoding='utf-8')
    except FileNotFoundError:
        raise NiahConfigError('needle_bank', f'{str(path)!r} does not exist') from None
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
    return records


def _json_records(path: Path, text: str) -> list[tuple[str, Any]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NiahConfigError(
            'needle_bank', f'{str(path)!r} is not JSON ({exc.msg}, line {exc.lineno} column {exc.colno})'
        ) from None
    if not isinstance(data, list):
        raise NiahConfigError('needle_bank', f'{str(path)!r} must hold a JSON list of objects, not {_kind(data)}')
    return [(f'{str(path)!r} entry {number}', record) for number, record in enumerate(data, start=1)]


def _bank_entry(where: str, record: Any) -> BankNeedle:
    allowed = ', '.join(_BANK_KEYS)
    if not isinstance(record, dict):
        raise NiahConfigError('needle_bank', f'{where} must be a JSON object with keys {allowed}, not {_kind(record)}')
    unknown = sorted(set(record) - set(_BANK_KEYS))
    if unknown:
        raise NiahConfigError('needle_bank', f'{where}: unknown key {unknown[0]!r}; allowed keys: {allowed}')
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


def draw_needles(
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
    random: one pseudo-random entry per draw, the same for the same seed on every platform.
    """
    if count < 1:
        raise NiahConfigError('n_needles', f'must be at least 1, got {count}')
    if sample_method not in SAMPLE_METHODS:
        raise NiahConfigError('sample_method', f'{sample_method!r} is not one of {", ".join(SAMPLE_METHODS)}')
    entries = [item for item in bank if item.language == language]
    if not entries:
        present = sorted({item.language for item in bank})
        raise NiahConfigError(
            'needle_bank',
            f'has no {language!r} entries (it has: {", ".join(present) or "none"}); add some or pick another language',
        )
    n = len(entries)
    if not 0 <= fixed_index < n:
        raise NiahConfigError(
            'fixed_index', f'{fixed_index} is outside 0..{n - 1} (the bank has {n} {language!r} entries)'
        )
    if sample_method == 'fixed':
        return (entries[fixed_index],) * count
    if sample_method == 'sequential':
        return tuple(entries[(fixed_index + draw) % n] for draw in range(count))
    # A string seed is hashed with SHA-512 by random.seed, so draws do not depend on PYTHONHASHSEED or platform.
    rng = random.Random(f'{seed}:{language}')
    return tuple(entries[rng.randrange(n)] for _ in range(count))


# --- reasoning chains ----------------------------------------------------------------------------------------------


def reasoning_chains(language: Language) -> tuple[ReasoningChain, ...]:
    """The shipped chains of ``language``, in file order."""
    _check_language(language)
    return _all_chains()[language]


def pick_chain(language: Language, *, index: int) -> ReasoningChain:
    """Chain ``index`` of ``language``, wrapping around so any sample number picks one."""
    chains = reasoning_chains(language)
    return chains[index % len(chains)]


@functools.cache
def _all_chains() -> dict[str, tuple[ReasoningChain, ...]]:
    raw = json.loads(REASONING_CHAINS_FILE.read_text(encoding='utf-8'))
    chains: dict[str, list[ReasoningChain]] = {language: [] for language in LANGUAGES}
    for record in raw:
        chain = ReasoningChain(
            id=record['id'],
            language=record['language'],
            needles=tuple(record['needles']),
            question=record['question'],
            answer=record['answer'],
            reference=record['reference'],
        )
        # Shipped data: a broken entry is our bug, so fail loudly rather than produce an unanswerable sample.
        if not 3 <= len(chain.needles) <= 4 or chain.answer not in chain.needles[-1]:
            raise RuntimeError(f'{REASONING_CHAINS_FILE}: chain {chain.id!r} is malformed')
        chains[chain.language].append(chain)
    return {language: tuple(items) for language, items in chains.items()}


# --- multi-value retrieval -----------------------------------------------------------------------------------------


def multi_retrieval_set(*, language: Language, count: int, seed: int) -> MultiRetrievalSet:
    """``count`` distinct 7-digit values of one invented key, the same for the same (language, count, seed)."""
    _check_language(language)
    if not 1 <= count <= MAX_MULTI_VALUES:
        raise NiahConfigError('num_needles', f'must be between 1 and {MAX_MULTI_VALUES}, got {count}')
    rng = random.Random(f'{seed}:{language}:{count}')
    key = rng.choice(MULTI_KEYS[language])
    # sample() without replacement keeps values distinct; 1000000.. excludes leading zeros.
    values = tuple(str(value) for value in rng.sample(range(1_000_000, 10_000_000), count))
    text = _MULTI_TEXT[language]
    return MultiRetrievalSet(
        key=key,
        needles=tuple(text['needle'].format(key=key, value=value) for value in values),
        values=values,
        question=text['question'].format(key=key),
        reference=text['separator'].join(values),
    )


# --- answer format hint --------------------------------------------------------------------------------------------


def answer_format_guide(*, needle: str, answer: str | None, language: Language) -> str:
    """The hint CDME appends to a question: the needle with its answer blanked, else a generic hint."""
    _check_language(language)
    guide = _GUIDE[language]
    needle = needle.strip()
    if answer is None or not answer.strip() or answer not in needle:
        return guide['generic']
    # Every occurrence is blanked: one left standing would give the answer away.
    return guide['format'].format(blanked=needle.replace(answer, BLANK))


def _check_language(language: str) -> None:
    if language not in LANGUAGES:
        raise NiahConfigError('language', f'{language!r} is not one of {", ".join(LANGUAGES)}')


# --- distractors for multi-value retrieval -------------------------------------------------------------------------

MAX_DISTRACTORS = 60


@dataclasses.dataclass(frozen=True)
class Distractor:
    """A fact of the needles' form about another invented key, with its own value: placed in the haystack so that
    an answer listing every magic number it saw is wrong (RULER's multi-key task)."""

    key: str
    value: str
    needle: str


def distractor_facts(
    *, language: Language, count: int, seed: int, exclude_values: Sequence[str], name: str
) -> list[Distractor]:
    """``count`` facts 'One of the special magic numbers for <other key> is: <value>.' in ``language``.

    Keys are the invented ``MULTI_KEYS`` other than ``name`` (the key being asked about), used round-robin in a
    seeded order, so above 33 distractors a key carries several values, as the asked key does. Values are distinct
    7-digit numbers, none in ``exclude_values`` (the needle values). Same arguments, same facts, on every platform.
    ``count`` 0 gives none (the task as before).
    """
    _check_language(language)
    if isinstance(exclude_values, str):
        raise NiahConfigError('distractors', 'exclude_values must be a sequence of value strings, not a string')
    if not 0 <= count <= MAX_DISTRACTORS:
        raise NiahConfigError('distractors', f'must be between 0 and {MAX_DISTRACTORS}, got {count}')
    keys = [key for key in MULTI_KEYS[language] if key != name]
    rng = random.Random(f'distractors:{seed}:{language}:{name}')
    rng.shuffle(keys)
    excluded = {value.strip() for value in exclude_values}
    values: list[str] = []
    while len(values) < count:
        value = str(rng.randrange(1_000_000, 10_000_000))
        if value not in excluded and value not in values:
            values.append(value)
    template = _MULTI_TEXT[language]['needle']
    return [
        Distractor(
            key=keys[index % len(keys)], value=value, needle=template.format(key=keys[index % len(keys)], value=value)
        )
        for index, value in enumerate(values)
    ]
