"""Replies that finished without a final answer, said in words: how many per subset, the likely cause, the fix.

A reply whose text is empty while its reasoning (reasoning_content, or <think> blocks) or a tool call holds
everything would score 0 on every cell; such replies are flagged instead (``SampleResult.no_answer``), left out of
accuracy and counted (``no_answer_rate``). When they are a notable share of a subset the console says why.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .sample_record import SampleResult

__all__ = ['NO_ANSWER_ALERT', 'no_answer_message']

# Above this share of a subset's replies the console explains them: one or two can be a model's slip, more is the
# server's setup (a parser routing every answer away from the text), and the heatmap then says little.
NO_ANSWER_ALERT = 0.1

# Per reason: what the replies held, the likely cause, and the fix.
_EXPLANATIONS = {
    'reasoning_only': (
        'only reasoning (reasoning_content, or a <think> block with nothing after it)',
        "the server's reasoning parser puts the whole reply into reasoning_content (vLLM --reasoning-parser, "
        'SGLang --reasoning-parser) because the model never writes the end tag (</think>) it waits for, or the '
        'model stops after thinking',
        'serve with the reasoning parser that matches the model, or with none; or turn thinking off '
        "(generation_config extra_body {'chat_template_kwargs': {'enable_thinking': false}}). The needle may sit "
        'in the reasoning field of the results file',
    ),
    'tool_call_only': (
        'only a tool call, no text',
        "the server's tool parser or the chat template turns the answer into a tool call although no tool was "
        'offered (vLLM --enable-auto-tool-choice with --tool-call-parser, a template that always declares tools)',
        "send tool_choice 'none' (generation_config extra_body {'tool_choice': 'none'}), serve without auto tool "
        'choice, or use a chat template that declares no tools when the request has none',
    ),
}


def no_answer_message(results: Sequence[SampleResult], *, subset: str) -> str | None:
    """One paragraph when more than NO_ANSWER_ALERT of a subset's replies had no final answer; None otherwise."""
    rows = [r for r in results if r.subset == subset]
    reasons = Counter(r.no_answer for r in rows if r.no_answer_excluded)
    total = sum(reasons.values())
    if not rows or total / len(rows) <= NO_ANSWER_ALERT:
        return None
    parts = [
        f'{count} held {held}. Likely cause: {cause}. Fix: {fix}'
        for reason, (held, cause, fix) in _EXPLANATIONS.items()
        if (count := reasons.get(reason, 0))
    ]
    return (
        f'subset {subset}: {total} of {len(rows)} replies ({total / len(rows):.0%}) had no final answer; they are '
        f'left out of accuracy, not scored 0 (no_answer_rate in the report, no_answer in the results file). '
        + ' '.join(f'{part}.' for part in parts)
    )
