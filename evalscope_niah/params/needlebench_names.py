"""OpenCompass NeedleBench v2's names read as ours: its needle records (``needles.jsonl``), its pick of one needle per
repeat, and its forms that cannot carry over, refused naming the key and what to write instead.

A NeedleBench v2 dataset dict (``needlebench_v2_single_*``) is a CDME dict (length, depth, tokenizer_model, file_list,
num_repeats_per_file, length_buffer, language: read by cdme_names / aliases) whose needle and question come from a
file: ``needle_file_name``, one JSON record a line with the keys below, picked per repeat in the configured language.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from ..errors import NiahConfigError

# A NeedleBench needle record: the sentence, its question, two arguments (arg2 is the keyword its evaluator looks
# for in the answer: our answer), the full answer sentence and the language as a word.
RECORD_KEYS = ('needle', 'retrieval_question', 'arg1', 'arg2', 'gold_standard_answer', 'language')
_REQUIRED_KEYS = ('needle', 'retrieval_question', 'arg2', 'language')
_LANGUAGE_WORDS = {'english': 'en', 'chinese': 'zh'}

# NeedleBench v2 keys that name a form of it that does not carry over, and what to write instead.
NEEDLEBENCH_ONLY: dict[str, str] = {
    'depths': "is NeedleBench v2's parallel (multi-retrieval) form, several needles of its needle file in one "
    "sample at these depths; it does not carry over. Write task: 'multi_retrieval' with num_needles (how many "
    'facts per sample; they spread from each cell depth toward the end) and the depths as document_depth_percents',
    'quesiton_position': "is NeedleBench's question position; here the template places the question: for 'Start' "
    'write a prompt_template with {question} before {context}',
}
_MULTI_REASONING = (
    "with num_needles is NeedleBench v2's multi-reasoning form (kinship chains built from a names file); it does "
    "not carry over. Write task: 'reasoning' (its own chains; diff sets the step between links) and leave "
    'needle_file_name out'
)


def is_needlebench_record(record: Mapping[str, Any]) -> bool:
    """A record in NeedleBench's layout (its question key, not ours)."""
    return 'retrieval_question' in record and 'question' not in record


def needlebench_record(where: str, record: Mapping[str, Any]) -> dict[str, Any]:
    """One NeedleBench needle record as a needle-bank record (needle, question, answer, language): the answer is
    ``arg2``, the keyword NeedleBench's evaluator looks for; ``arg1`` and ``gold_standard_answer`` are kept out."""
    unknown = sorted(set(record) - set(RECORD_KEYS))
    if unknown:
        raise NiahConfigError(
            'needle_file_name', f"{where}: unknown key {unknown[0]!r}; NeedleBench's keys: {', '.join(RECORD_KEYS)}"
        )
    for key in _REQUIRED_KEYS:
        if key not in record:
            raise NiahConfigError(
                'needle_file_name', f"{where}: missing key {key!r} (NeedleBench's: {', '.join(_REQUIRED_KEYS)})"
            )
    language = record['language']
    code = _LANGUAGE_WORDS.get(language.strip().lower()) if isinstance(language, str) else None
    return {
        'needle': record['needle'],
        'question': record['retrieval_question'],
        'answer': record['arg2'],
        'language': code or language,  # anything else is refused by the bank with the languages allowed
    }


Entry = TypeVar('Entry')


def pick_per_repeat(entries: Sequence[Entry], repeats: int) -> tuple[Entry, ...]:
    """The entry NeedleBench v2 picks for each repeat: ``random.seed(repeat)`` then ``random.choice`` over the
    entries of the language in file order, so repeat r asks what NeedleBench's counter r asks."""
    return tuple(random.Random(repeat).choice(entries) for repeat in range(repeats))


def check_needlebench_forms(values: Mapping[str, Any]) -> None:
    """Refuse the NeedleBench v2 forms that do not carry over, before any name is checked."""
    for key, reason in NEEDLEBENCH_ONLY.items():
        if key in values:
            raise NiahConfigError(key, reason)
    if values.get('needle_file_name') is not None and values.get('num_needles') is not None:
        raise NiahConfigError('needle_file_name', _MULTI_REASONING)
