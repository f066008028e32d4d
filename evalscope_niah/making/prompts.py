"""The system prompt and user template (EvalScope's defaults) and how a sample's messages are formed."""

from __future__ import annotations

import string
from dataclasses import dataclass

from ..errors import NiahConfigError
from ..params.prompt_safety import check_sendable

DEFAULT_SYSTEM_PROMPT = (
    'You are a helpful AI bot that answers questions for a user. Keep your response short and direct'
)
DEFAULT_USER_TEMPLATE = """Please read the following text and answer the question below.

<text>
{context}
</text>

<question>
{question}
</question>

Don't give information outside the document or repeat your findings."""

_REQUIRED_FIELDS = ('context', 'question')


@dataclass(frozen=True)
class PromptSpec:
    """System prompt (may be empty: then no system message is sent) and user template."""

    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    user_template: str = DEFAULT_USER_TEMPLATE

    def __post_init__(self) -> None:
        check_sendable('system_prompt', self.system_prompt, what='the system prompt')
        check_sendable('prompt_template', self.user_template, what='the prompt template')
        try:
            fields = [name for _, name, _, _ in string.Formatter().parse(self.user_template) if name is not None]
        except ValueError as exc:
            raise NiahConfigError(
                'prompt_template',
                f'is not a valid format string ({exc}); placeholders allowed: {{context}} and {{question}}; '
                'write literal braces as {{ and }}',
            ) from None
        for required in _REQUIRED_FIELDS:
            if fields.count(required) != 1:
                raise NiahConfigError(
                    'prompt_template',
                    f'must contain {{{required}}} exactly once (found {fields.count(required)}); '
                    'placeholders allowed: {context} and {question}; write literal braces as {{ and }}',
                )
        unknown = sorted(set(fields) - set(_REQUIRED_FIELDS))
        if unknown:
            raise NiahConfigError(
                'prompt_template', f'unknown placeholder(s) {unknown}; allowed: {{context}} and {{question}}'
            )

    def user_message(self, *, context: str, question: str) -> str:
        return self.user_template.format(context=context, question=question)

    def messages(self, *, context: str, question: str) -> list[dict[str, str]]:
        return self.chat(self.user_message(context=context, question=question))

    def chat(self, user_prompt: str) -> list[dict[str, str]]:
        """The messages of this prompt with ``user_prompt`` as the user's (see ``chat_messages``)."""
        return chat_messages(self.system_prompt, user_prompt)


def chat_messages(system_prompt: str, user_prompt: str) -> list[dict[str, str]]:
    """The one chat-message builder: the system prompt (when set) and the user prompt as sent. A built sample calls
    it with texts its ``PromptSpec`` checked once, so nothing is checked again per sample."""
    user = {'role': 'user', 'content': user_prompt}
    return [{'role': 'system', 'content': system_prompt}, user] if system_prompt else [user]
