"""A task author's kit: everything a new task (in this tree or in a plugin package) needs, from one import.

Each name is defined once in its home module and only re-exported here (``tests/tasks/test_kit.py`` checks both).
A task defines ``choose`` (its needles and question) and ``check(answer, target)`` (its rule); the rest is here.

The task and what it plans:

* ``Task``: the base class; ``choose`` and ``check`` to define, class attributes to declare (``name``,
  ``description``, ``description_zh``, ``judged``, ``params_model``, ``reported_values``, ``ordered_answer``,
  ``partial_credit``).
* ``register_task``: makes a task class selectable as ``task``; call it once, where the class is imported.
* ``TaskParams``: the base of a task's own parameters (flat ``extra_params`` names, each a pydantic field with its
  description and, in ``json_schema_extra``, its ``description_zh``).
* ``PlanContext``: what ``choose`` may read (the subset, the run's parameters, ``options(MyParams)``, the corpus).
* ``task_params``: a task's own parameters from the run's (``task_params(params, MyParams)``), where a hook is
  handed the run's parameters rather than a ``PlanContext``.
* ``GridCell``: the cell ``choose`` plans (subset, length, depth, repeat, pick).
* ``NeedleChoice``: what ``choose`` returns: needles, question, reference answer, answer keys, and where the needles
  go (``needle_depths``: one depth per needle) and what misleads (``distractors``).
* ``SampleData``: the base of a task's own data about a sample, carried through the run and read back typed.
* ``GeneratedHaystack``: a haystack a task writes in place of the corpus (``Task.haystack_text``).
* ``ReportedValue``: a value the rule reports beside the accuracy, with its label and meaning.
* ``SampleMeta``: a sample's metadata (what ``judge_hint`` and an overridden ``rule_score`` receive).

The rule and its result:

* ``RuleTarget``: what ``check`` scores against: needles, question, language, reference, answer keys, the prompt
  shown, ``key`` (the first answer key) and ``data(MyData)``.
* ``RuleScore``: what ``check`` returns: ``values['acc']`` and any reported values, whether it is certain, why.
* ``PromptText``: the prompt the model was shown, the evidence that an answer pastes it.
* ``with_levenshtein``: adds CDME's Levenshtein similarity, for a task that overrides ``rule_score`` itself
  (``Task.rule_score`` adds it after ``check``).

Pieces of a rule that resists gaming (an answer that lists, negates, hedges, pastes or bloats):

* ``single_needle_score``: the whole single-needle ladder: one of the answer keys stated plainly (or, with
  ``all_keys``, every one of them: one fact per needle).
* ``one_candidate_score``: the ladder for an answer that must name exactly one of known candidates.
* ``needle_recall``: the share of the needles' content words (or Chinese units) an answer holds.
* ``paste_evidence``: whether an answer pastes the prompt beyond what it may quote (``Paste``: its verdict and the
  factor a score is scaled by).
* ``Paste``: what ``paste_evidence`` found.
* ``cue_near``: negation, retraction and hedge cues near the key's spans (a clause that excludes the rest, 'none
  of the other ...', is no negation of the key).
* ``excluded_cue_text``: the needles' and question's own words, which ``cue_near`` must not count as cues.
* ``cue_verdict``: the uncertain verdict for cues found.
* ``negated_values``: the negation cues in the sentence of a stated value ('it is not 4821937').
* ``is_list_item``: whether the key is one item of a short list of guesses.
* ``find_abstention``: the phrase saying the document does not answer, if any.
* ``other_language``: whether the answer is written in the other language than the sample's.
* ``NUMBER_WORDS``: numbers spelt out in words or Chinese numerals (a number key not in digits).
* ``normalise``: the text as the ladders compare it (case, width and whitespace folded).
* ``key_spans``: where a key occurs in a normalised answer (whole words in English, the whole string in Chinese).
* ``key_share``: the share of a key's content units an answer holds (a paraphrase or a partial answer).
* ``check_language``: refuses a language the rules do not know.
* ``text_language``: the language a text is written in.

The bounds every rule shares (``scoring/bounds.py`` says why each is what it is):

* ``CERTAIN_PASS``: the least score that is a pass.
* ``RULE_PASS_THRESHOLD``: the score at which a rule counts an answer right (rule recall, the judge's agreement).
* ``UNCERTAIN_SCORE_CAP``: the most an uncertain or failed-by-gaming answer scores.
* ``LIST_ITEM_SCORE``: the score of a key given as one item of a list.
* ``MAX_SCAN_CHARS``: how much of an answer a rule reads (a longer one is read to there, never whole).
* ``MAX_SPANS``: how many spans of one key a rule looks at.
"""

from __future__ import annotations

from ..languages import text_language
from ..metadata import GridCell, SampleMeta
from ..params.run_params import TaskParams
from ..scoring.bounds import (
    CERTAIN_PASS,
    LIST_ITEM_SCORE,
    MAX_SCAN_CHARS,
    MAX_SPANS,
    RULE_PASS_THRESHOLD,
    UNCERTAIN_SCORE_CAP,
)
from ..scoring.candidates import one_candidate_score
from ..scoring.cues import (
    NUMBER_WORDS,
    cue_near,
    cue_verdict,
    excluded_cue_text,
    find_abstention,
    is_list_item,
    negated_values,
    other_language,
)
from ..scoring.paste import Paste, PromptText, paste_evidence
from ..scoring.recall import needle_recall
from ..scoring.result import RuleScore
from ..scoring.single_needle import single_needle_score
from ..scoring.text import key_share, key_spans, normalise
from ..vocabulary import check_language
from .base import (
    GeneratedHaystack,
    NeedleChoice,
    PlanContext,
    ReportedValue,
    RuleTarget,
    SampleData,
    Task,
    task_params,
    with_levenshtein,
)
from .registry import register_task

__all__ = [
    'CERTAIN_PASS',
    'LIST_ITEM_SCORE',
    'MAX_SCAN_CHARS',
    'MAX_SPANS',
    'NUMBER_WORDS',
    'RULE_PASS_THRESHOLD',
    'UNCERTAIN_SCORE_CAP',
    'GeneratedHaystack',
    'GridCell',
    'NeedleChoice',
    'Paste',
    'PlanContext',
    'PromptText',
    'ReportedValue',
    'RuleScore',
    'RuleTarget',
    'SampleData',
    'SampleMeta',
    'Task',
    'TaskParams',
    'check_language',
    'cue_near',
    'cue_verdict',
    'excluded_cue_text',
    'find_abstention',
    'is_list_item',
    'key_share',
    'key_spans',
    'needle_recall',
    'negated_values',
    'normalise',
    'one_candidate_score',
    'other_language',
    'paste_evidence',
    'register_task',
    'single_needle_score',
    'task_params',
    'text_language',
    'with_levenshtein',
]
