"""The answer-format hint CDME appends to a question: the needle with its answer blanked. Shared by the tasks whose
needle holds its answer verbatim (single, reasoning)."""

from __future__ import annotations

import re

from ..vocabulary import Language, check_language

BLANK = '________'

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


def answer_format_guide(*, needle: str, answer: str | None, language: Language) -> str:
    """The hint CDME appends to a question: the needle with its answer blanked, else a generic hint."""
    check_language(language)
    guide = _GUIDE[language]
    needle = needle.strip()
    if answer is None or not answer.strip() or answer not in needle:
        return guide['generic']
    # Every occurrence is blanked: one left standing would give the answer away.
    return guide['format'].format(blanked=needle.replace(answer, BLANK))


# A question that already asks for a format (CDME's questions end so) gets CDME's other guide instead: a hint to
# find the relevant part first, placed before the format request, so the format is never asked twice.
_FORMAT_REQUEST = {'en': re.compile(r'(?:please\s+)?answer in the format', re.IGNORECASE), 'zh': re.compile('请按照')}
_THINK_FIRST = {
    'en': 'Before answering, think about which part of the document is most relevant to this question. ',
    'zh': '回答之前，请先想一想文档中哪部分内容与这个问题最相关。',
}


def guided_question(question: str, guide: str, *, language: Language) -> str:
    """``question`` with the guide appended; or, when the question already asks for a format, a think-first hint put
    before that request."""
    check_language(language)
    request = _FORMAT_REQUEST[language].search(question)
    if request is not None:
        return f'{question[: request.start()]}{_THINK_FIRST[language]}{question[request.start() :]}'
    return f'{question} {guide}' if language == 'en' else f'{question}{guide}'
