"""The answer-format hint CDME appends to a question: the needle with its answer blanked. Shared by the tasks whose
needle holds its answer verbatim (single, reasoning)."""

from __future__ import annotations

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
