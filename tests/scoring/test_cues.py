"""A clause excluding the rest is no negation, and a stated-values sentence's negations; the other cues are exercised
through the task ladders (tests/tasks/test_*_rules.py)."""

from __future__ import annotations

import pytest

from evalscope_niah.scoring.cues import cue_near, excluded_cue_text
from evalscope_niah.scoring.text import key_spans, normalise


def test_negated_values_are_the_negations_in_a_stated_values_sentence() -> None:
    from evalscope_niah.scoring.cues import negated_values

    text = 'the code is not 4821937. the other code is 1234567.'
    assert negated_values(text, ('4821937',), needles=(), question='', language='en') == ['not']
    assert negated_values(text, ('1234567',), needles=(), question='', language='en') == []
    # A cue word the needle itself uses is no cue.
    needle = 'The code is not 4821937.'
    assert negated_values(text, ('4821937',), needles=(needle,), question='', language='en') == []


@pytest.mark.parametrize(
    ('answer', 'key', 'language', 'negated'),
    [
        ('Only A, B, C, D, E are assigned it; none of the other variables is.', 'a, b, c, d, e', 'en', False),
        ('Figs, and nothing else.', 'figs', 'en', False),
        ('Figs, not the others.', 'figs', 'en', False),
        ('A, B, C, D, E: none of them is assigned it.', 'a, b, c, d, e', 'en', True),
        ('It is not A, B, C, D, E.', 'a, b, c, d, e', 'en', True),
        ('Figs; no other ingredient, and it is not figs either.', 'figs', 'en', True),
        ('只有上海人工智能实验室，其他地方都不是。', '上海人工智能实验室', 'zh', False),
        ('上海人工智能实验室，都不是。', '上海人工智能实验室', 'zh', True),
        ('不是上海人工智能实验室。', '上海人工智能实验室', 'zh', True),
    ],
)
def test_a_clause_excluding_the_rest_is_no_negation_of_the_key(answer, key, language, negated) -> None:
    text = normalise(answer)
    hits = cue_near(text, key_spans(text, key), language=language, excluded=excluded_cue_text('The needle.'))
    assert any(kind == 'negation' for kind, _ in hits) == negated, hits
