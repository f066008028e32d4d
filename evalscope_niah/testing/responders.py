"""The test server's "models": responders from a request's messages to the reply, the two that ship with it
(:func:`needle_finder`, :func:`make_judge_responder`), the wrappers that move an answer into reasoning_content or a
tool call, and the judge prompt parsing the judge responder rests on.
"""

from __future__ import annotations

import functools
import json
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    'CJK_CHARS',
    'JUDGE_FIELDS',
    'Reply',
    'Responder',
    'make_judge_responder',
    'message_text',
    'needle_finder',
    'overlap_grader',
    'parse_judge_prompt',
    'reasoning_only',
    'tool_call_only',
]


@dataclass(frozen=True)
class Reply:
    """A responder's reply beyond plain text, as vLLM and SGLang send it: ``content`` None is sent as JSON null
    (their reasoning or tool parser took all of the text), ``reasoning_content`` is their reasoning field, and each
    of ``tool_calls`` is a (function name, JSON arguments) pair sent as an OpenAI tool call."""

    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: tuple[tuple[str, str], ...] = ()


Responder = Callable[[list[dict]], str | Reply]

#: Placeholders of ``evalscope_niah.judging.judge.JUDGE_USER_TEMPLATE`` that the judge responder extracts.
JUDGE_FIELDS: tuple[str, ...] = ('question', 'reference', 'answer')

# --------------------------------------------------------------------------------------------
# Text helpers shared by the responders
# --------------------------------------------------------------------------------------------

#: The CJK ideograph ranges, as a regex character class body (each such character is one term, one token).
CJK_CHARS = '\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff'
_CJK_RE = re.compile(f'[{CJK_CHARS}]')
_WORD_RE = re.compile(r'[a-z0-9]+')
_SENTENCE_SPLIT_RE = re.compile(
    r'(?<=[.!?])\s+'  # English end of sentence, followed by whitespace
    r'|(?<=[.!?]["\'”’)\]])\s+'  # ... or by a closing quote/bracket, then whitespace
    r'|(?<=[。！？])(?![”’」』）"\'])\s*'  # Chinese end of sentence (no whitespace needed)
    r'|(?<=[。！？][”’」』）"\'])\s*'  # ... or followed by a closing quote/bracket
    r'|\n+'
)


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a chat message: its string content, or its text parts joined."""
    content = message.get('content')
    if content is None:
        return ''
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get('text'), str):
                parts.append(part['text'])
        return ''.join(parts)
    return str(content)


def _terms(text: str) -> set[str]:
    """Lowercase English words longer than 2 chars (and any number), plus each CJK character."""
    lowered = text.lower()
    words = {w for w in _WORD_RE.findall(lowered) if len(w) > 2 or w.isdigit()}
    return words | set(_CJK_RE.findall(text))


def _between(text: str, start: str, end: str) -> str | None:
    i = text.find(start)
    if i < 0:
        return None
    j = text.find(end, i + len(start))
    if j < 0:
        return None
    return text[i + len(start) : j]


def _split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_SPLIT_RE.split(text) if s and s.strip()]


def _last_user_text(messages: list[dict]) -> str:
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get('role') == 'user':
            return message_text(message)
    return '\n'.join(message_text(m) for m in messages if isinstance(m, Mapping))


# --------------------------------------------------------------------------------------------
# Ready-made responders
# --------------------------------------------------------------------------------------------


def needle_finder(messages: list[dict]) -> str:
    """Answer a NIAH prompt from the prompt itself, deterministically.

    The question is the text between ``<question>`` and ``</question>`` in the last user
    message (else its last non-empty line); the haystack is the text between ``<text>`` and
    ``</text>`` (else the whole user message less the question). The haystack is split into sentences (``.!?``
    and ``。！？``, and newlines) and the sentence sharing the most terms with the question is
    returned (English: lowercase words longer than 2 chars, plus numbers; Chinese: characters).
    Ties go to the first sentence. This simulates a model that retrieves well.
    """
    user = _last_user_text(messages)
    question = _between(user, '<question>', '</question>')
    if question is not None:
        rest = user.replace(f'<question>{question}</question>', '\n', 1)
    else:
        lines = user.splitlines()
        while lines and not lines[-1].strip():
            lines.pop()
        question = lines.pop() if lines else ''
        rest = '\n'.join(lines)
    context = _between(user, '<text>', '</text>')
    if context is None:
        context = rest  # the whole message, less the question (else it would match itself)
    wanted = _terms(question)
    best, best_score = '', -1
    for sentence in _split_sentences(context):
        score = len(wanted & _terms(sentence))
        if score > best_score:
            best, best_score = sentence, score
    return best


def overlap_grader(question: str, reference: str, answer: str) -> int:
    """Rate an answer 10/7/5/3/1 by the share of reference terms found in it.

    Terms are lowercase English words longer than 2 chars (and numbers) plus CJK characters.
    Share >= 0.9 -> 10, >= 0.7 -> 7, >= 0.5 -> 5, >= 0.3 -> 3, else 1. A reference without
    any term is compared to the answer as a whole (case-insensitive containment).
    ``question`` is accepted for the grader signature and ignored.
    """
    del question
    wanted = _terms(reference)
    if not wanted:
        ref = reference.strip().lower()
        return 10 if ref and ref in answer.lower() else 1
    share = len(wanted & _terms(answer)) / len(wanted)
    for threshold, rating in ((0.9, 10), (0.7, 7), (0.5, 5), (0.3, 3)):
        if share >= threshold:
            return rating
    return 1


def _literal_regex(literal: str) -> str:
    # Whitespace runs match any whitespace run, so re-wrapped templates still match.
    return r'\s+'.join(re.escape(chunk) for chunk in re.split(r'\s+', literal))


@functools.lru_cache(maxsize=32)
def _template_regex(template: str) -> re.Pattern[str]:
    parts: list[str] = []
    seen: set[str] = set()
    for literal, field_name, _spec, _conversion in string.Formatter().parse(template.strip()):
        if literal:
            parts.append(_literal_regex(literal))
        if field_name is None:
            continue
        if field_name in JUDGE_FIELDS:
            parts.append(f'(?P={field_name})' if field_name in seen else f'(?P<{field_name}>.*?)')
            seen.add(field_name)
        else:
            parts.append('.*?')
    return re.compile(''.join(parts), re.DOTALL)


def _judge_template() -> str:
    from ..judging import (
        judge,
    )  # lazy: serving needs only the standard library; the template only parsing a judge prompt

    return judge.JUDGE_USER_TEMPLATE


def parse_judge_prompt(prompt: str, template: str | None = None) -> dict[str, str] | None:
    """Extract question/reference/answer from a judge prompt rendered from ``template``.

    ``template`` defaults to ``evalscope_niah.judging.judge.JUDGE_USER_TEMPLATE`` (read at call time).
    The regex is built from the template, so wording changes need no change here. Returns a
    dict with the keys of :data:`JUDGE_FIELDS` ('' for a placeholder the template lacks), or
    None when the prompt does not match the template.
    """
    pattern = _template_regex(template if template is not None else _judge_template())
    match = pattern.fullmatch(prompt.strip())
    if match is None:
        return None
    found = match.groupdict()
    return {name: (found.get(name) or '').strip() for name in JUDGE_FIELDS}


def reasoning_only(responder: Responder) -> Responder:
    """``responder``'s answer sent in reasoning_content with content null: a vLLM or SGLang reasoning parser that
    never sees the model's end tag puts the whole reply there."""

    def respond(messages: list[dict]) -> Reply:
        return Reply(content=None, reasoning_content=str(responder(messages)))

    return respond


def tool_call_only(responder: Responder, *, name: str = 'answer') -> Responder:
    """``responder``'s answer sent as the arguments of one tool call ``name`` with content null (a tool parser or
    chat template that turns the answer into a call though the request offered no tool)."""

    def respond(messages: list[dict]) -> Reply:
        return Reply(content=None, tool_calls=((name, json.dumps({'answer': str(responder(messages))})),))

    return respond


def make_judge_responder(grader: Callable[[str, str, str], int]) -> Responder:
    """A responder for judge requests: ``{"reasoning": "...", "rating": grader(q, ref, ans)}``.

    It looks for the message (last first) that matches ``evalscope_niah.judging.judge.JUDGE_USER_TEMPLATE``
    and raises ValueError (the server answers 500) when none does.
    """

    def judge_responder(messages: list[dict]) -> str:
        template = _judge_template()
        for message in reversed(messages):
            if not isinstance(message, Mapping):
                continue
            fields_ = parse_judge_prompt(message_text(message), template)
            if fields_ is not None:
                rating = int(grader(fields_['question'], fields_['reference'], fields_['answer']))
                reasoning = f'Compared the answer with the reference answer; rating {rating}.'
                return json.dumps({'reasoning': reasoning, 'rating': rating}, ensure_ascii=False)
        raise ValueError('no message matches evalscope_niah.judging.judge.JUDGE_USER_TEMPLATE')

    return judge_responder
