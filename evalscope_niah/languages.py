"""How the two languages are written, in one place below every floor: which characters are Chinese, where a
sentence of prose ends, and which language a text is in. The haystack cuts and inserts at sentence ends, the tasks
and the samples read a needle's language, the rules and the judge check read both: each reads them from here."""

from __future__ import annotations

import re

from .vocabulary import check_language

__all__ = [
    'CJK',
    'CJK_CHAR',
    'EN_SENTENCE_MARKS',
    'LANGUAGE_SCAN_CHARS',
    'PROSE_SENTENCE_END',
    'PROSE_SENTENCE_END_CHARACTERS',
    'PROSE_SENTENCE_END_RULE',
    'ZH_SENTENCE_MARKS',
    'text_language',
]

# The CJK ideograph ranges (unified, extension A, compatibility), as a regex character class body.
CJK = r'\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff'
CJK_CHAR = re.compile(f'[{CJK}]')

# --- where a sentence ends: the one home of the rule, for the haystack (a cut or a needle lands there) and the rules
# (a cue counts only inside the key's sentence: scoring/text.py's ANSWER_SENTENCE_END). The marks are shared; the two
# uses differ on purpose, as said below.
EN_SENTENCE_MARKS = '.!?'
# The strong marks end a sentence anywhere; a semicolon or an ellipsis ends one in running Chinese prose (where a cut
# may land) but not in an answer, where the clause after it still speaks of the key.
ZH_SENTENCE_MARKS = '。！？'
ZH_PAUSE_MARKS = '；…'
EN_CLOSERS = '"\'”’)]'  # a closing quote or bracket may follow the mark
ZH_CLOSERS = '」”’』）)'
# A sentence boundary in running prose: a mark (with its closers) and the whitespace after it. The haystack cuts and
# inserts needles only there, so the prose around a needle stays whole sentences.
PROSE_SENTENCE_END = {
    'en': re.compile(f'[{re.escape(EN_SENTENCE_MARKS)}][{re.escape(EN_CLOSERS)}]*\\s+'),
    'zh': re.compile(f'[{ZH_SENTENCE_MARKS}{ZH_PAUSE_MARKS}]+[{re.escape(ZH_CLOSERS)}]*\\s*'),
}
# The same rule in words, for the error about a corpus without any sentence boundary.
PROSE_SENTENCE_END_RULE = {
    'en': "'.', '!' or '?' followed by whitespace (a closing quote or bracket may come between)",
    'zh': "'。', '！', '？', '；' or '…'",
}
# Every character that may end a sentence of prose, marks and closers of both languages.
PROSE_SENTENCE_END_CHARACTERS = frozenset(
    EN_SENTENCE_MARKS + EN_CLOSERS + ZH_SENTENCE_MARKS + ZH_PAUSE_MARKS + ZH_CLOSERS
)

# --- which language a text is in ------------------------------------------------------------------------------------

# Words of Latin letters (digits are no language). A Chinese word is one to three characters, an English one a word:
# text is Chinese when its CJK characters number at least twice its Latin words ('小明的密码是 OpenAI' is Chinese,
# 'The capital is 北京' English).
_LATIN_WORD = re.compile(r'[A-Za-z\u00c0-\u024f]+')
ZH_CHARS_PER_EN_WORD = 2
# Characters of each text its language is read from: far more letters than it takes to tell, and a bound on the work a
# hostile needle, answer or generated haystack of megabytes can cause.
LANGUAGE_SCAN_CHARS = 20_000


def text_language(*texts: str, default: str) -> str:
    """The language the texts are written in ('en' or 'zh'), from their own letters; ``default`` when they have
    none (digits, symbols). A needle, its question and its key are what their text is, whatever the subset."""
    check_language(default)
    text = ' '.join(text[:LANGUAGE_SCAN_CHARS] for text in texts)[:LANGUAGE_SCAN_CHARS]
    cjk = len(CJK_CHAR.findall(text))
    latin = len(_LATIN_WORD.findall(text))
    if not cjk and not latin:
        return default
    return 'zh' if cjk >= ZH_CHARS_PER_EN_WORD * latin else 'en'
