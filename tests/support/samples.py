"""Reading built samples back: the haystack a sample's prompt carries."""

from __future__ import annotations

from evalscope_niah.making.prompts import PromptSpec
from evalscope_niah.making.samples import NeedleSample


def context_of(sample: NeedleSample, prompt: PromptSpec | None = None) -> str:
    """The haystack inside ``sample``'s user prompt, cut out along ``prompt``'s template (the default one)."""
    prompt = prompt or PromptSpec()
    before, after = prompt.user_template.split('{context}')
    after = after.format(question=sample.question)
    assert sample.user_prompt.startswith(before) and sample.user_prompt.endswith(after)
    return sample.user_prompt[len(before) : len(sample.user_prompt) - len(after)]
