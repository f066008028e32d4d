"""The needle-absent control: the same prompt without its needle. A right answer abstains; stating the fact is a
guess. Kept out of accuracy (reported as abstention and guess rates), never judged."""

from __future__ import annotations

from ...vocabulary import GUESSED
from ..kit import GridCell, NeedleChoice, PlanContext, ReportedValue, RuleScore, RuleTarget, Task
from .rules import absent_control_score

ABSENT_REFERENCE = {'en': 'The document does not say.', 'zh': '文中没有提到。'}


class AbsentControl(Task):
    """Not selectable as ``task``: every task's control cells are scored here (``task_for``)."""

    name = 'absent_control'
    description = 'one needle-free cell per length; measures guessing'
    description_zh = '每个长度一个不含针的单元格；衡量猜测'
    reported_values = (ReportedValue(GUESSED, 'Guessed', measure='error_rate'),)  # stated a fact that is not there

    def choose(self, context: PlanContext, cell: GridCell, *, seed: int) -> NeedleChoice:
        raise NotImplementedError('a control cell is planned by its task, then stripped of its needles')

    def check(self, answer: str, target: RuleTarget) -> RuleScore:
        return absent_control_score(answer, language=target.language, needle_answers=target.answer_keys)


ABSENT_CONTROL = AbsentControl()
