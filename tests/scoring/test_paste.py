"""The paste cue, decided by evidence (scoring/paste.py): text copied from the prompt beyond what an answer may echo."""

from __future__ import annotations

import pytest

from evalscope_niah.scoring.paste import PromptText, paste_evidence
from tests.support.rule_facts import FILLER_EN, FILLER_ZH, SF_NEEDLE, SF_PROMPT, ZH_NEEDLE


def test_paste_evidence_counts_only_text_beyond_the_allowed_texts() -> None:
    answer = FILLER_EN * 5 + SF_NEEDLE
    evidence = paste_evidence(answer, allowed=(SF_NEEDLE,), prompt=SF_PROMPT, language='en')
    assert evidence.pasted and evidence.pasted_units == len(FILLER_EN.split()) * 5
    assert evidence.factor == pytest.approx(1 - evidence.pasted_units / len(answer.split()), rel=0.01)
    quoted = paste_evidence(SF_NEEDLE * 5, allowed=(SF_NEEDLE,), prompt=SF_PROMPT, language='en')
    assert not quoted.pasted and quoted.factor == 1.0


def test_paste_evidence_in_chinese_counts_characters() -> None:
    shown = PromptText(shown=FILLER_ZH * 80 + ZH_NEEDLE + FILLER_ZH * 80)
    pasted = paste_evidence(FILLER_ZH * 6 + ZH_NEEDLE, allowed=(ZH_NEEDLE,), prompt=shown, language='zh')
    assert pasted.pasted and pasted.pasted_units >= 80
    own = (
        '这句话是文中唯一回答这个问题的地方，它说得很清楚：小明最喜欢的实习地点就是上海人工智能实验室，其余部分讲的都是别的事情。'
        * 3
    )
    assert not paste_evidence(own + ZH_NEEDLE, allowed=(ZH_NEEDLE,), prompt=shown, language='zh').pasted
