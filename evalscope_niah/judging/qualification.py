"""Judge qualification: before a run, the configured judge grades a small calibration set with known verdicts.

A judge is only worth its scores if it tells right answers from wrong ones on *this* benchmark's questions. So the
calibration set is built from one subset's own question, reference and needle: a few right answers (the reference,
its short form, a rephrasing) and the wrong answers a long-context model actually gives (another entity, a negation,
a retraction, a hedge between alternatives, a refusal, a pasted passage) plus an answer that tries to set its own
rating. The judge grades them with the same prompt it uses in the run (``judge.judge_user_prompt``), and
``judge_qualifies`` decides from its raw replies whether to trust it.

Pure: no EvalScope, no HTTP. The integration layer sends the prompts and acts on the result per ``JudgeCheck``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from ..errors import NiahConfigError
from ..languages import CJK_CHAR, text_language
from ..scoring.text import EN_STOPWORDS, en_words
from ..vocabulary import check_language
from .calibration_texts import DISTRACTORS, FILLER, TEXT
from .judge import JUDGE_SYSTEM_PROMPT, judge_user_prompt, parse_verdict
from .judge_failures import JudgeCallFailure

__all__ = [
    'DEFAULT_JUDGE_CHECK',
    'FAIL_MAX_RATING',
    'JUDGE_CHECK_MODES',
    'MAX_MISSES',
    'PASS_MIN_RATING',
    'CalibrationItem',
    'ItemResult',
    'JudgeCheck',
    'QualificationResult',
    'build_calibration',
    'calibration_prompts',
    'is_whole_fact',
    'judge_check_mode',
    'judge_qualifies',
    'key_fact',
    'qualification_error_message',
]

JudgeCheck = Literal['stop', 'fallback', 'off']
"""What a run does with the judge check (the integration layer implements it).

* ``'stop'`` (default): qualify the judge before the model runs; if it does not qualify, stop the run with
  ``qualification_error_message``: it names the judge, what it got wrong and the ways out (fix the judge, or
  ``judge_check='fallback'`` / ``judge={'strategy': 'rule'}``). Nothing is spent on the model under test.
* ``'fallback'``: qualify the judge; if it does not qualify, score with the rule scores instead and label the
  report and the console summary so (the failed check's summary is kept in the report).
* ``'off'``: no check; the judge is trusted as configured.
"""
JUDGE_CHECK_MODES: tuple[str, ...] = get_args(JudgeCheck)
DEFAULT_JUDGE_CHECK: JudgeCheck = 'stop'

# A right answer must pass (rating 7 or 10, accuracy >= 2/3: above the 0.5 pass bound the report uses), a wrong one
# must be rated at most 3 (accuracy <= 0.22). A 5 for a wrong answer counts as a miss: the rubric's "moderate
# relevance" would add 0.44 to every wrong answer's score, inflating the run's accuracy.
PASS_MIN_RATING = 7.0
FAIL_MAX_RATING = 3.0
# The qualification rule (also in QualificationResult.to_dict()['rule']):
# * no unparsable reply: a calibration reply the parser cannot read is a format problem (another scale, prose
#   without a rating) that would repeat on every sample of the run, not a one-off;
# * every critical item decided right: the verbatim reference (a judge that fails it misreads the task), the other
#   entity (the commonest real wrong answer) and the injection (following it lets answers set their own scores);
# * at most MAX_MISSES miss among the rest: one borderline call (a retraction rated 5) is judge noise the run's
#   judge-rule agreement will show; two are a pattern.
MAX_MISSES = 1
_RULE = (
    f'every reply parsable; right answers rated >= {PASS_MIN_RATING:g}, wrong ones <= {FAIL_MAX_RATING:g} and '
    f'part-credit ones (one of several values) < {PASS_MIN_RATING:g}; the reference, part-credit, other-entity and '
    f'injection items decided right; at most {MAX_MISSES} miss in all'
)


@dataclass(frozen=True)
class CalibrationItem:
    """One calibration answer and the verdict a trustworthy judge gives it.

    ``critical``: a judge that gets this one wrong never qualifies, however it does on the rest. ``partial``: the
    task gives part credit (one of several values), so a judge must not call it right (rated below
    PASS_MIN_RATING); ``expect_pass`` is False then.
    """

    category: str
    answer: str
    expect_pass: bool
    critical: bool = False
    partial: bool = False


# --- the calibration set -----------------------------------------------------------------------------------------

# Derivation is quadratic in the needle's length: longer needles (not one fact anyway) use the whole needle.
_MAX_DERIVED_NEEDLE_CHARS = 300
_ZH_LEADING_FUNCTION_WORDS = re.compile(r'^(?:就是|便是|乃是|是|为|叫做|叫|的|了|都|只|在)+')
_TRAILING_PUNCTUATION = '.。!！?？;；,，:：、 \n\t"\'“”‘’'
_EN_WORD = re.compile(r"[\w'’-]+")


def key_fact(*, question: str, needle: str, answer: str | None, language: str) -> str:
    """The part of ``needle`` that answers ``question``: what the wrong calibration answers replace or negate.

    ``answer`` (the subset's or bank entry's short answer) is used when it occurs in the needle. Otherwise it is
    derived by the language the needle and question are written in (``language``, the subset's, only decides text
    without letters): in English, the needle after its leading words that the question repeats ("The best thing to
    do in San Francisco is | eat a sandwich ..."); in Chinese, the needle's trailing characters that are not in the
    question ("...就是 | 上海人工智能实验室。"). A derived part that is no whole word or entity of the needle (a
    fragment like 'ay' of 'day') is never a fact: then, and when nothing is derived, the whole needle.
    """
    check_language(language)
    if answer and answer.strip():
        at = needle.casefold().find(answer.strip().casefold())
        if at != -1:
            return needle[at : at + len(answer.strip())]
    body = needle.strip().rstrip(_TRAILING_PUNCTUATION)
    language = text_language(needle, question, default=language)
    fact = _en_fact(question, body) if language == 'en' else _zh_fact(question, body)
    return fact if fact and is_whole_fact(fact, body) else body


def is_whole_fact(fact: str, needle: str) -> bool:
    """Whether ``fact`` is a whole word or entity of ``needle``: it occurs there without cutting a word at either
    end, and holds a content word (a word or number that is no English stopword, or two CJK characters)."""
    at = needle.find(fact)
    if not fact.strip() or at == -1:
        return False
    end = at + len(fact)
    cuts_start = at > 0 and _is_word_char(needle[at - 1]) and _is_word_char(fact[0])
    cuts_end = end < len(needle) and _is_word_char(needle[end]) and _is_word_char(fact[-1])
    if cuts_start or cuts_end:
        return False
    words = [word for word in en_words(fact) if not CJK_CHAR.search(word)]
    return any(word not in EN_STOPWORDS for word in words) or len(CJK_CHAR.findall(fact)) >= 2


def _is_word_char(char: str) -> bool:
    # Latin letters and digits join into words; CJK characters stand alone (no spaces to cut at).
    return char.isalnum() and not CJK_CHAR.match(char)


def _en_fact(question: str, needle: str) -> str:
    asked = {word.casefold() for word in _EN_WORD.findall(question)}
    for word in _EN_WORD.finditer(needle):
        if word.group().casefold() not in asked:
            return needle[word.start() :].strip(_TRAILING_PUNCTUATION)
    return ''


def _zh_fact(question: str, needle: str) -> str:
    if len(needle) > _MAX_DERIVED_NEEDLE_CHARS:
        return ''
    # Cover every needle character inside a run of 2+ characters that the question repeats; what is left are the
    # needle's own words, and the last of them (question forms put the asked-for part last) is the fact.
    covered = [False] * len(needle)
    for start in range(len(needle) - 1):
        end = start + 2
        while end <= len(needle) and needle[start:end] in question:
            end += 1
        if end - start > 2:
            covered[start : end - 1] = [True] * (end - 1 - start)
    segments = re.split(r'\x00+', ''.join('\x00' if c else ch for ch, c in zip(needle, covered, strict=True)))
    for segment in reversed(segments):
        fact = _ZH_LEADING_FUNCTION_WORDS.sub('', segment.strip(_TRAILING_PUNCTUATION)).strip(_TRAILING_PUNCTUATION)
        if len(fact) >= 2:
            return fact
    return ''


def build_calibration(
    *,
    question: str,
    reference: str,
    needles: Sequence[str],
    language: str,
    answer: str | None = None,
    other_entity: str | None = None,
    values: Sequence[str] = (),
) -> list[CalibrationItem]:
    """Ten calibration answers for one subset, written natively in the language of its needle and question ('en' or
    'zh'; ``language``, the subset's, only decides text without letters).

    Right (expect_pass): ``reference`` verbatim, the key fact alone, a rephrasing. Wrong: ``other_entity``
    substituted for the key fact, its negation, its retraction, a hedge listing it among others, a refusal, a paste
    of the needle among unrelated sentences ending with the question, and an injection that names another entity
    and asks for a rating of 10. The key fact comes from ``key_fact`` (``answer`` when given). ``other_entity``
    must not overlap the key fact; None picks a built-in one.

    ``values``: the answer's values when the task asks for several (the task's ``calibration_values``: several
    needles, several keys). Then the right answers name them all, the other entity replaces them all, and an eleventh
    item names only the first: the task gives it part credit, so a judge must not call it right (critical).
    """
    check_language(language)
    needle = _answer_needle(question=question, reference=reference, needles=needles, answer=answer)
    language = text_language(needle, question, default=language)
    fact = key_fact(question=question, needle=needle, answer=answer, language=language)
    several = [value.strip() for value in values if value and value.strip()]
    if len(several) > 1:
        fact = _joined(several, language)
    other, third = _other_entities(fact, language, other_entity)
    text = TEXT[language]

    def fill(category: str) -> str:
        return text[category].format(fact=fact, other=other, third=third)

    # Several values: one of them alone is part credit by the task's own rule, never right.
    partial = [
        CalibrationItem('one_of_many', value, expect_pass=False, critical=True, partial=True)
        for value in several[:1]
        if len(several) > 1
    ]
    other_answer = _other_answer(reference, fact, other, language, several=len(several) > 1)
    return [
        *partial,
        CalibrationItem('reference', reference.strip(), expect_pass=True, critical=True),
        CalibrationItem('short_answer', fact, expect_pass=True),
        CalibrationItem('paraphrase', fill('paraphrase'), expect_pass=True),
        CalibrationItem('other_entity', other_answer, expect_pass=False, critical=True),
        CalibrationItem('negation', fill('negation'), expect_pass=False),
        CalibrationItem('retraction', fill('retraction'), expect_pass=False),
        CalibrationItem('hedged_list', fill('hedged_list'), expect_pass=False),
        CalibrationItem('refusal', fill('refusal'), expect_pass=False),
        CalibrationItem('pasted_text', _pasted_text(needle, question, language), expect_pass=False),
        CalibrationItem('injection', fill('injection'), expect_pass=False, critical=True),
    ]


def _answer_needle(*, question: str, reference: str, needles: Sequence[str], answer: str | None) -> str:
    """The needle that holds the answer (a reasoning chain's last link), else the first; refuses empty inputs."""
    for name, value in (('question', question), ('reference', reference)):
        if not value or not value.strip():
            raise NiahConfigError(name, 'must not be empty: the calibration answers are built from it')
    given = [n for n in needles if n and n.strip()]
    if not given:
        raise NiahConfigError('needles', 'need at least one non-empty needle to build the calibration answers')
    wanted = (answer or '').strip().casefold()
    return next((n for n in given if wanted and wanted in n.casefold()), given[0])


def _other_entities(fact: str, language: str, other_entity: str | None) -> tuple[str, str]:
    """The wrong entity the wrong answers name (``other_entity``, else a built-in one), and a third one that
    overlaps neither it nor the key fact (a hedge lists both)."""
    distractors = [d for d in DISTRACTORS[language] if not _overlaps(d, fact)]
    if other_entity is None:
        other_entity = distractors[0]
    elif not other_entity.strip() or _overlaps(other_entity, fact):
        raise NiahConfigError(
            'other_entity', f'{other_entity!r} must be non-empty and differ from the key fact {fact!r}'
        )
    other = other_entity.strip()
    return other, next(d for d in distractors if not _overlaps(d, other))


def _other_answer(reference: str, fact: str, other: str, language: str, *, several: bool) -> str:
    """The reference with the other entity in the key fact's place: right form, wrong fact (the other entity alone
    when the reference does not hold the fact as written, or holds several values)."""
    at = reference.find(fact)
    if at == -1 or several:
        return other + ('.' if language == 'en' else '。')
    return (reference[:at] + other + reference[at + len(fact) :]).strip()


def _pasted_text(needle: str, question: str, language: str) -> str:
    """The needle pasted among unrelated sentences, ending with the question: an answer that answers nothing."""
    filler = FILLER[language]
    separator = ' ' if language == 'en' else ''
    return separator.join([*filler[:4], needle.strip(), *filler[4:], *filler, question.strip()])


def _joined(values: Sequence[str], language: str) -> str:
    """Several values as one answer: sentences side by side, else a list ('A, B, C' / 'A、B、C')."""
    if all(value[-1] in '.。!！?？' for value in values):
        return (' ' if language == 'en' else '').join(values)
    return (', ' if language == 'en' else '、').join(values)


def _overlaps(first: str, second: str) -> bool:
    a, b = first.strip().casefold(), second.strip().casefold()
    return a in b or b in a


def calibration_prompts(items: Sequence[CalibrationItem], *, question: str, reference: str) -> list[tuple[str, str]]:
    """(system, user) prompts for each item: exactly what the judge sees for a real answer in the run."""
    return [
        (JUDGE_SYSTEM_PROMPT, judge_user_prompt(question=question, reference=reference, answer=item.answer))
        for item in items
    ]


# --- the decision ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ItemResult:
    """How the judge did on one calibration item."""

    category: str
    expect_pass: bool
    critical: bool
    rating: float | None  # None when the reply was unparsable
    parsed: bool
    correct: bool
    reason: str  # why the reply was unparsable, else the judge's own reasoning (may be '')
    answer: str
    reply: str  # the judge's raw reply, cut to _MAX_REPLY_SHOWN characters
    failure: JudgeCallFailure | None = None  # the call brought no reply (then parsed is False and reply '')
    partial: bool = False

    def miss_text(self) -> str:
        """'negation (rated 10)' / 'refusal (unparsable: no rating found)' / 'refusal (call failed: ...)'."""
        if self.failure is not None:
            return f'{self.category} (call failed: {self.failure.describe()})'
        if not self.parsed:
            return f'{self.category} (unparsable: {self.reason})'
        return f'{self.category} (rated {_fmt(self.rating)})'  # type: ignore[arg-type]


_MAX_REPLY_SHOWN = 500


@dataclass(frozen=True)
class QualificationResult:
    """The judge's calibration result: ``qualified`` and one ``ItemResult`` per calibration item."""

    judge_name: str
    qualified: bool
    items: tuple[ItemResult, ...]
    # Set when the check stopped at a call that fails every call alike (FATAL_FAILURE_KINDS): the judge was not
    # asked the rest of the set.
    failure: JudgeCallFailure | None = None

    @property
    def decided_right(self) -> int:
        return sum(item.correct for item in self.items)

    @property
    def misses(self) -> tuple[ItemResult, ...]:
        return tuple(item for item in self.items if not item.correct)

    def summary(self) -> str:
        """One console line: 'judge qwen-plus qualified: 9/10 decided right; missed: negation (rated 10)'."""
        verdict = 'qualified' if self.qualified else 'NOT qualified'
        if self.failure is not None:
            return f'judge {self.judge_name} {verdict}: {self.failure.describe()}; fix: {self.failure.fix}'
        line = f'judge {self.judge_name} {verdict}: {self.decided_right}/{len(self.items)} decided right'
        if self.misses:
            line += '; missed: ' + ', '.join(item.miss_text() for item in self.misses)
        return line

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record for the report (the judge check file, one entry per subset). Each key's comment is
        its meaning on the docs' results-files page, which is generated from them."""
        return {
            'judge': self.judge_name,  # the judge's name (its judge_id, else its model_id)
            'qualified': self.qualified,  # whether it passed the check: false stops the run, or scores it by rule
            'decided_right': self.decided_right,  # calibration items it decided right
            'items_total': len(self.items),  # calibration items in the check
            # replies from which no rating could be read
            'unparsable': sum(not item.parsed and item.failure is None for item in self.items),
            # Items without a reply: their call failed, or the check stopped before asking them (then `failure`).
            'no_reply': sum(item.failure is not None for item in self.items),
            # why the judge could not be asked at all (null when it answered): kind, url, detail, fix, text
            'failure': self.failure.to_dict() if self.failure is not None else None,
            'rule': _RULE,  # the rule the judge was held to, in words
            'items': [  # each calibration item, in the order asked
                {
                    'category': item.category,  # what the item tests: 'reference', 'paraphrase', 'injection', ...
                    'expect_pass': item.expect_pass,  # whether a right judge rates it a pass
                    'partial': item.partial,  # a part-credit answer (one of several values): a pass is wrong
                    'critical': item.critical,  # a judge that decides it wrong never qualifies
                    'rating': item.rating,  # the judge's rating (1-10), null when it gave none
                    'parsed': item.parsed,  # whether a rating could be read from the reply
                    'correct': item.correct,  # whether the judge decided it right
                    'reason': item.reason,  # why it counts as decided wrong (empty when right)
                    'answer': item.answer,  # the calibration answer the judge was shown
                    'reply': item.reply,  # the judge's reply as it came (null without one)
                    # why this item's call brought no reply (null when it did): kind, url, detail, fix, text
                    'failure': item.failure.to_dict() if item.failure is not None else None,
                }
                for item in self.items
            ],
        }


def judge_qualifies(
    items: Sequence[CalibrationItem],
    replies: Sequence[str | None],
    *,
    judge_name: str = 'judge',
    failures: Sequence[JudgeCallFailure | None] | None = None,
    stopped_by: JudgeCallFailure | None = None,
) -> QualificationResult:
    """Grade the judge's raw replies (one per item, in order; None or '' for a call that failed) by the rule above.

    ``failures``: per item, why its call brought no reply (None where a reply came); ``stopped_by``: the failure
    that stopped the check before the rest of the set was asked (the judge then does not qualify).
    """
    if len(items) != len(replies):
        raise ValueError(f'{len(replies)} judge replies for {len(items)} calibration items')
    failures = list(failures) if failures is not None else [None] * len(items)
    if len(failures) != len(items):
        raise ValueError(f'{len(failures)} call failures for {len(items)} calibration items')
    results = []
    for item, reply, failure in zip(items, replies, failures, strict=True):
        verdict = parse_verdict(reply or '') if failure is None else None
        parsed = verdict is not None and verdict.status == 'ok'
        rating = verdict.rating if parsed else None  # type: ignore[union-attr]
        if rating is None:
            correct = False
        elif item.partial:  # part credit: anything but a pass
            correct = rating < PASS_MIN_RATING
        elif item.expect_pass:
            correct = rating >= PASS_MIN_RATING
        else:
            correct = rating <= FAIL_MAX_RATING
        results.append(
            ItemResult(
                category=item.category,
                expect_pass=item.expect_pass,
                critical=item.critical,
                rating=rating,
                parsed=parsed,
                correct=correct,
                reason=verdict.reason if verdict is not None else failure.describe(),  # type: ignore[union-attr]
                answer=item.answer,
                reply=(reply or '')[:_MAX_REPLY_SHOWN],
                failure=failure,
                partial=item.partial,
            )
        )
    misses = [r for r in results if not r.correct]
    qualified = (
        stopped_by is None
        and bool(results)
        and all(r.parsed for r in results)
        and not any(r.critical for r in misses)
        and len(misses) <= MAX_MISSES
    )
    return QualificationResult(judge_name=judge_name, qualified=qualified, items=tuple(results), failure=stopped_by)


# The ways out of a stop as TaskConfig arguments (run_task); integration/judge_check.py has them as flags.
_WAYS_OUT = (
    "judge_check='fallback' (TaskConfig(dataset_args={'needle_haystack': {'extra_params': {'judge_check': "
    "'fallback'}}})) scores by rule when the judge fails, labelled so; judge={'strategy': 'rule'} never calls a judge."
)


def qualification_error_message(result: QualificationResult, *, judge_name: str, ways_out: str = _WAYS_OUT) -> str:
    """The error that stops a run (``judge_check='stop'``): the judge, what it got wrong, and ``ways_out``."""
    if result.failure is not None:
        return (
            f'judge {judge_name} failed the judge check: {result.failure.describe()}; the model under test was not '
            f'called. Fix: {result.failure.fix}. Or score without it: {ways_out}'
        )
    wrong = []
    for item in result.misses:
        expected = f'>= {PASS_MIN_RATING:g}' if item.expect_pass else f'<= {FAIL_MAX_RATING:g}'
        if item.partial:
            expected = f'< {PASS_MIN_RATING:g} (the task gives it part credit)'
        shown = item.answer if len(item.answer) <= 80 else item.answer[:77] + '...'
        if item.failure is not None:
            got = f'call failed ({item.failure.describe()}; fix: {item.failure.fix})'
        elif item.parsed:
            got = f'rated {_fmt(item.rating)}'  # type: ignore[arg-type]
        else:
            got = f'unparsable reply ({item.reason})'
        kind = 'right' if item.expect_pass else 'partial' if item.partial else 'wrong'
        wrong.append(f'{item.category} ({kind} answer {shown!r}): {got}, expected {expected}')
    return (
        f'judge {judge_name} failed the judge check: it decided {result.decided_right}/{len(result.items)} '
        f"calibration answers built from this benchmark's own question right (needs: {_RULE}). "
        f'Wrong: {"; ".join(wrong)}. '
        'Ways out: fix the judge (a stronger judge model, or check its model_id, api_url and generation_config), '
        f'or score without it: {ways_out}'
    )


def judge_check_mode(value: Any) -> JudgeCheck:
    """Validate a ``judge_check`` setting."""
    if value not in JUDGE_CHECK_MODES:
        allowed = ', '.join(repr(mode) for mode in JUDGE_CHECK_MODES)
        raise NiahConfigError('judge_check', f'must be one of {allowed}, not {value!r}')
    return value


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
