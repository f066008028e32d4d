"""Published model answers with their published grades (the repository's tests/data/real_answers), run through the
task types; the agreement suite (tests/test_real_answers.py) and benchmarks/bench_real_answers.py both read them here.

Each set is one public results file collection (sources, commits and licences in tests/data/real_answers/SOURCES.md):
the needle, question and key the run used, and every distinct answer with its grade and how often it was given.
``agreement`` scores each answer the way a run does (the task type's rule score on the final answer, reasoning
stripped) and compares the verdict with the grade: certain verdicts that disagree, the share left to a judge, and
the rule-only pass rate beside the graders'.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from evalscope_niah.metadata import SampleMeta
from evalscope_niah.scoring import RULE_PASS_THRESHOLD, strip_reasoning
from evalscope_niah.scoring.result import RuleScore
from evalscope_niah.tasks import score_answer
from evalscope_niah.tasks.associative.task import AssociativeData

# Where a source checkout keeps the sets (they are test data, not shipped in the wheel).
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[2] / 'tests' / 'data' / 'real_answers'
# A 1-10 grade at or above this is a pass: Kamradt's rubric gives 7 to "aligns with the reference but has minor
# omissions" and 3 to "minor relevance, does not align".
PASS_GRADE_OF_TEN = 7

# Published grades shown wrong by reading the answer, each with why: (set, start of the answer) -> reason. They are
# set aside from the disagreement count and listed by the benchmark.
WRONG_GRADES: dict[tuple[str, str], str] = {
    ('babilong-qa1-phi-3-mini', 'Answer: The bedroom\n\nQuestion: Where is Pochard?'): (
        "graded wrong, but 'The bedroom' answers the question asked; BABILong's rule lowercases the reply before "
        "cutting it at 'Question', so the 'kitchen' of the model's own invented follow-up counts as a second answer"
    ),
}


# Certain rule verdicts that disagree with a right grade, each read and explained: (set, start of the answer) ->
# why the rule errs. A new disagreement fails tests/test_real_answers.py until it is read and either fixed or listed.
KNOWN_RULE_ERRORS: dict[tuple[str, str], str] = {
    ('babilong-qa1-phi-3-mini', 'Context: Sandra moved to the hallway. Mary went back to the bathroom.'): (
        'the model copies two context sentences instead of answering; with no haystack in the set there is no '
        'evidence of the paste, and 14 copied words would stay under the paste bound anyway'
    ),
    ('babilong-qa1-phi-3-mini', 'Answer: The most recent location of Mary is the bedroom.\n\nContext: Mary went to'): (
        'asserts the bedroom, then invents a context that names the key (garden): the rule sees one asserted '
        'candidate per sentence and takes the key'
    ),
}


@dataclasses.dataclass(frozen=True)
class RealAnswer:
    set: str
    task: str  # the task type whose rules score it: 'single' (a needle and its key) or 'associative' (one name)
    language: str
    question: str
    key: str
    answer: str
    grade: float
    grade_max: float
    count: int
    needle: str = ''
    candidates: tuple[str, ...] = ()  # the answers a model may confuse with the key (BABILong's labels)

    @property
    def passed(self) -> bool:
        """The published grade as pass/fail (0/1 grades as they are, 1-10 grades from ``PASS_GRADE_OF_TEN``)."""
        return self.grade >= (PASS_GRADE_OF_TEN if self.grade_max == 10 else 1)

    @property
    def known_rule_error(self) -> str | None:
        return _lookup(KNOWN_RULE_ERRORS, self)

    @property
    def wrong_grade(self) -> str | None:
        return _lookup(WRONG_GRADES, self)


def _lookup(table: dict[tuple[str, str], str], item: RealAnswer) -> str | None:
    return next(
        (why for (name, start), why in table.items() if name == item.set and item.answer.startswith(start)), None
    )


def load_sets(data_dir: Path = DEFAULT_DATA_DIR) -> dict[str, list[RealAnswer]]:
    """Every set in tests/data/real_answers. An answer row is ``[answer, grade, count]``, or ``[answer, grade, count,
    key, question]`` where each answer has its own question (BABILong)."""
    sets: dict[str, list[RealAnswer]] = {}
    paths = sorted(Path(data_dir).glob('*.json'))
    if not paths:
        raise FileNotFoundError(f'no real-answer sets (*.json) in {data_dir}: they ship with a source checkout')
    for path in paths:
        for name, data in json.loads(path.read_text(encoding='utf-8')).items():
            sets[name] = [
                RealAnswer(
                    set=name,
                    task=data.get('task', 'single'),
                    language=data['language'],
                    needle=data.get('needle', ''),
                    question=row[4] if len(row) > 3 else data['question'],
                    key=row[3] if len(row) > 3 else data['key'],
                    candidates=tuple(data.get('candidates', ())),
                    answer=row[0],
                    grade=row[1],
                    grade_max=data['grade_max'],
                    count=row[2],
                )
                for row in data['answers']
            ]
    return sets


def rule_score(item: RealAnswer) -> RuleScore:
    """The answer through the path a run takes: its task type's rule score of the final answer. The sets carry no
    haystack, so the paste rule has no prompt to measure against and only its last-resort length bound applies."""
    meta = SampleMeta(
        subset=item.set,
        language=item.language,
        task=item.task,
        context_length=1000,
        depth_percent=50.0,
        repeat=0,
        pick=0,
        needles=(item.needle,) if item.needle else (),
        question=item.question,
        reference_answer=item.needle or item.key,
        answer_keys=(item.key,),
        start_token=0,
        divergence_token=0,
        # Only the associative sets carry candidates (every character name, to tell a hedge from an answer).
        task_data=AssociativeData(candidates=item.candidates).to_json() if item.candidates else {},
    )
    return score_answer(strip_reasoning(item.answer), meta)


@dataclasses.dataclass(frozen=True)
class PublishedGradeAgreement:
    """How far the rule agrees with the published grades of one set of real answers, each answer weighted by how
    often the model gave it (not a run's judge-vs-rule agreement: ``reporting.stats.JudgeRuleAgreement``)."""

    set: str
    answers: int
    certain_disagreements: int
    wrong_grades: int  # answers whose published grade is shown wrong (``WRONG_GRADES``), set aside
    left_to_judge: int
    rule_passes: int
    grader_passes: int
    disagreements: tuple[tuple[RealAnswer, RuleScore], ...]

    @property
    def disagreement_share(self) -> float:
        return self.certain_disagreements / self.answers

    @property
    def judge_share(self) -> float:
        return self.left_to_judge / self.answers

    @property
    def rule_pass_rate(self) -> float:
        return self.rule_passes / self.answers

    @property
    def grader_pass_rate(self) -> float:
        return self.grader_passes / self.answers


def agreement(name: str, items: list[RealAnswer]) -> PublishedGradeAgreement:
    counted = [item for item in items if item.wrong_grade is None]
    scored = [(item, rule_score(item)) for item in counted]
    disagreements = [
        (item, rule) for item, rule in scored if rule.certain and (rule.accuracy >= RULE_PASS_THRESHOLD) != item.passed
    ]
    return PublishedGradeAgreement(
        set=name,
        answers=sum(item.count for item in counted),
        certain_disagreements=sum(item.count for item, _ in disagreements),
        wrong_grades=sum(item.count for item in items if item.wrong_grade is not None),
        left_to_judge=sum(item.count for item, rule in scored if not rule.certain),
        rule_passes=sum(item.count for item, rule in scored if rule.accuracy >= RULE_PASS_THRESHOLD),
        grader_passes=sum(item.count for item in counted if item.passed),
        disagreements=tuple(disagreements),
    )


def table(agreements: list[PublishedGradeAgreement]) -> str:
    lines = [
        '| set | answers | certain verdicts disagreeing | left to the judge | rule-only pass rate '
        "| graders' pass rate |",
        '| --- | --- | --- | --- | --- | --- |',
    ]
    for row in agreements:
        lines.append(
            f'| {row.set} | {row.answers} (+{row.wrong_grades} wrong grades) | {row.certain_disagreements} '
            f'({row.disagreement_share:.1%}) | {row.left_to_judge} ({row.judge_share:.1%}) '
            f'| {row.rule_pass_rate:.1%} | {row.grader_pass_rate:.1%} |'
        )
    return '\n'.join(lines)
