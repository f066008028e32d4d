"""The single-needle rule ladder (the ``single`` task's rule, and any task's whose answer is one fact): the key fact
must be stated, plainly. It sits beside its twin ``candidates.py`` (one of known candidates), as every task-neutral
rule piece does."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .bounds import (
    KEYLESS_CUE_UNITS,
    LIST_ITEM_SCORE,
    MAX_SCAN_CHARS,
    PARAPHRASE_SHARE,
    UNCERTAIN_LOW,
    UNCERTAIN_SCORE_CAP,
)
from .cues import (
    NUMBER_WORDS,
    cue_hits,
    cue_near,
    cue_verdict,
    excluded_cue_text,
    find_abstention,
    is_list_item,
    other_language,
)
from .paste import Paste, PromptText, paste_evidence
from .recall import needle_recall, rule_is_certain
from .result import RuleScore
from .text import answer_size, key_share, key_spans, normalise, read_answer

__all__ = ['single_needle_score']

_DIGIT_RUN = re.compile(r'[0-9]+')


def single_needle_score(
    answer: str,
    *,
    needles: Sequence[str],
    question: str,
    language: str,
    answer_keys: Sequence[str] = (),
    reference: str | None = None,
    prompt: PromptText | None = None,
    all_keys: bool = False,
) -> RuleScore:
    """Rule verdict for a single-needle (or bank) answer: the key fact must be stated, plainly.

    ``all_keys``: the keys are one fact per needle (several needles the user wrote, each key derived from its needle),
    and a right answer states every one; otherwise they are alternatives, one of which must be stated.

    With ``answer_keys`` (the short answer inside the needle) the final answer (reasoning stripped) must contain a
    key entire: English as the same words in order (case, punctuation and plural -s aside), Chinese as the whole
    entity string (whitespace and punctuation aside), never by a share of bigrams. Then:

    * a negation, retraction or hedge cue within 60/80 (English) or 20/30 (Chinese) characters before/after the key
      (cue words the needle or question use themselves do not count), or the key being one item of a short list,
      makes the verdict uncertain with score 0.3;
    * an answer that pastes the prompt (``paste_evidence``: verbatim runs of the haystack beyond the needle,
      question and template; without ``prompt``, only the last-resort length bound) is uncertain, score <= 0.3;
    * otherwise 1.0, certain, however long the answer: a preamble, the quoted needle, an explanation and a closing
      remark around the key are how instruction-tuned models answer.

    Without the key: an answer in the other language (no CJK in a zh subset, mostly CJK in an en subset) or one
    holding at least 25 % of the key's content units (a paraphrase or a partial answer) or spelling a number key
    out in words is uncertain with score <= 0.3; anything else is a certain 0.
    Without ``answer_keys`` (a custom needle with no short answer) the needle recall decides as before: certain
    outside (0.1, 0.9), always uncertain when a cue is near the needle's words.
    """
    read = read_answer(answer, language=language, keys=answer_keys, keys_name='answer_keys')
    if read is None:
        return RuleScore.no_final_answer()
    final, text = read.final, read.text
    reference = reference if reference is not None else '\n'.join(needles)
    excluded = excluded_cue_text(*needles, question)
    keys = [key for key in answer_keys if key.strip()]
    paste = paste_evidence(
        final, allowed=(*needles, question, reference, *keys), prompt=prompt, language=language, reference=reference
    )
    if not keys:
        return _keyless_verdict(final, text, needles=needles, question=question, language=language, paste=paste)
    if all_keys and len(keys) > 1:
        return _every_key_verdict(final, text, keys, language=language, excluded=excluded, paste=paste)
    spans = [span for key in keys for span in key_spans(text, normalise(key))]
    if spans:
        return _stated_verdict(final, text, spans, language=language, excluded=excluded, paste=paste)
    return _unstated_verdict(final, keys, language=language, paste=paste)


def _every_key_verdict(
    final: str, text: str, keys: Sequence[str], *, language: str, excluded: str, paste: Paste
) -> RuleScore:
    """One fact per needle, all asked for: each key is checked as a single key is, in a text where the other keys are
    blanked out (so 'figs, prosciutto and goat cheese' is three facts stated, not a list of guesses). All stated
    plainly: a pass; some missing: the share stated, never more than an uncertain score."""
    found = {key: key_spans(text, normalise(key)) for key in keys}
    missing = [key for key, spans in found.items() if not spans]
    if missing:
        verdicts = [_unstated_verdict(final, (key,), language=language, paste=paste) for key in missing]
        share = (len(keys) - len(missing) + sum(v.accuracy for v in verdicts)) / len(keys)
        return RuleScore.verdict(
            min(UNCERTAIN_SCORE_CAP, share) * paste.factor,
            all(v.certain for v in verdicts),
            f'states {len(keys) - len(missing)} of the {len(keys)} key facts (missing: '
            f'{", ".join(repr(key) for key in missing[:3])})',
            ('partial',),
        )
    for key, spans in found.items():
        others = [span for other, other_spans in found.items() if other != key for span in other_spans]
        blanked = _blanked(text, others)
        verdict = _stated_verdict(final, blanked, spans, language=language, excluded=excluded, paste=paste)
        if verdict.accuracy < 1.0:
            return verdict
    return RuleScore.verdict(1.0, True, f'states all {len(keys)} key facts plainly', ('exact',))


def _blanked(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` with the spans turned to spaces, every position kept."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = ' ' * (end - start)
    return ''.join(chars)


def _keyless_verdict(
    final: str, text: str, *, needles: Sequence[str], question: str, language: str, paste: Paste
) -> RuleScore:
    """No short answer known (a custom needle): the needle recall decides, certain outside (0.1, 0.9), uncertain
    when a cue is near."""
    recall = needle_recall(final, needles=needles, question=question, language=language, penalise_length=False)
    recall *= paste.factor
    if recall > UNCERTAIN_LOW:
        excluded = excluded_cue_text(*needles, question)
        hits = cue_hits(text, excluded) if answer_size(final, language) <= KEYLESS_CUE_UNITS else []
        if hits:
            return cue_verdict(hits, f'needle recall {recall:.2f}')
    certain = rule_is_certain(recall)
    return RuleScore.verdict(
        recall if certain else min(recall, UNCERTAIN_SCORE_CAP),
        certain,
        f'no short answer known; needle recall {recall:.2f}' + ('' if certain else ': a judge decides'),
        ('recall',),
    )


def _stated_verdict(
    final: str, text: str, spans: list[tuple[int, int]], *, language: str, excluded: str, paste: Paste
) -> RuleScore:
    """A key is in the answer: a pass unless a cue is near it, an abstention precedes it, it is one item of a list,
    or the answer pastes the prompt."""
    hits = cue_near(text, spans, language=language, excluded=excluded)
    if hits:
        return cue_verdict(hits, 'states the key')
    abstention = find_abstention(final)
    if abstention is not None and abstention.start() < min(start for start, _ in spans):
        # "The document does not say ... the only sentence about it is <needle>. However ...": whether that
        # quotes the answer or doubts it is for a judge (published graders split on exactly these).
        return RuleScore.verdict(
            UNCERTAIN_SCORE_CAP,
            False,
            f'states the key after saying the document does not answer ({abstention.group()!r}): a judge decides',
            ('abstains',),
        )
    if is_list_item(text, spans, language=language):
        return RuleScore.verdict(LIST_ITEM_SCORE, False, 'the key is one item of a list of candidates', ('list',))
    if paste.found:
        return paste.verdict(language, certain=False, lead='states the key, but ')
    return RuleScore.verdict(1.0, True, 'states the key plainly', ('exact',))


def _unstated_verdict(final: str, keys: Sequence[str], *, language: str, paste: Paste) -> RuleScore:
    """No key in the answer: uncertain for the other language, a paraphrase or a number spelt out; else a certain 0."""
    if other_language(final, language=language):
        return RuleScore.verdict(
            0.0, False, f'key not found and the answer is not in {language!r}: a judge decides', ('other_language',)
        )
    share = max(key_share(final, key) for key in keys)
    if share >= PARAPHRASE_SHARE:
        return RuleScore.verdict(
            UNCERTAIN_SCORE_CAP * share * paste.factor,
            False,
            f'key not stated verbatim; {share:.0%} of its content present (paraphrase or partial): a judge decides',
            ('paraphrase',),
        )
    if any(_DIGIT_RUN.search(key) for key in keys) and NUMBER_WORDS.search(final[:MAX_SCAN_CHARS]):
        return RuleScore.verdict(
            0.0, False, 'number key not in digits; the answer spells a number out', ('number_words',)
        )
    return RuleScore.verdict(0.0, True, 'the key is not in the answer', ('missing',))
