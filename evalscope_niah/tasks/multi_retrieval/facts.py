"""The multi_retrieval task's facts: several values of one invented key (RULER's multi-value task) and distractor
facts about other keys (RULER's multi-key task). Every fact is invented, so a model can only answer from the haystack.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

from ...errors import NiahConfigError
from ...vocabulary import Language
from ..kit import check_language

MAX_MULTI_VALUES = 20
MAX_DISTRACTORS = 60

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


@dataclasses.dataclass(frozen=True)
class MultiRetrievalSet:
    """Several values of one key, one needle each; a correct answer lists every value."""

    key: str
    needles: tuple[str, ...]
    values: tuple[str, ...]
    question: str
    reference: str


def multi_retrieval_set(*, language: Language, count: int, seed: int) -> MultiRetrievalSet:
    """``count`` distinct 7-digit values of one invented key, the same for the same (language, count, seed)."""
    check_language(language)
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
    check_language(language)
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
