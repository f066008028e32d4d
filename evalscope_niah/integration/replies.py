"""Replies that EvalScope would take as answers but are server faults: retried, recorded, kept apart from scores.

EvalScope retries only calls that raise. A 200 reply without text, or one cut by the token limit, reaches the
scorer as an answer and would score 0, so every reply (model and judge) is looked at here and called again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from evalscope.api.model import GenerateConfig, ModelOutput
from pydantic import BaseModel, ValidationError

from ..errors import exception_chain
from ..escaping import inert_logger
from ..serving.reply_bounds import ReplyTooLarge, kept_text, whole_text
from ..serving.server_values import plausible_tokens, shown
from ..vocabulary import BudgetReason, NoAnswerReason
from .interrupt import install_deadline

logger = inert_logger(__name__)

# docs/en/guarantees.md. At most this many calls per sample for replies that are empty or cut short of the budget.
REPLY_ATTEMPTS = 3
# Sleep REPLY_BACKOFF_S * n after the n-th discarded reply: short, the server answered, it is not rate limiting.
REPLY_BACKOFF_S = 1.0
# Per-request timeout when generation_config.timeout is unset (the openai SDK would wait 600 s, then retry twice,
# inside each of EvalScope's 5 attempts). A queued request looks like a hung one to the client, so the timeout
# grows with the prompt tokens in flight: all concurrent requests at a pessimistic 500 tokens/s, at least 120 s.
MIN_TIMEOUT_S = 120.0
PROMPT_TOKENS_PER_S = 500.0
# Judge prompts are short (question, reference, answer); a judge's reasoning can still take minutes.
JUDGE_TIMEOUT_S = 300.0


class EmptyReplyError(RuntimeError):
    """The server kept answering 200 with no text: a server fault, not an answer."""


class UnreadableReplyError(RuntimeError):
    """EvalScope's own parsing rejected a reply (a usage count that is no int, a model name that is no string): a
    server fault. The sample errors (counted as such with ignore_errors) instead of being scored."""


class OversizeReplyError(RuntimeError):
    """Every try got a reply over its bound (``max_reply_bytes``, choices, a compressed body), refused unread: a
    server fault. The sample errors (counted as such with ignore_errors) instead of being scored."""


class CutReplyError(RuntimeError):
    """A judge reply cut by the token limit: its verdict cannot be trusted."""


def budget_failure(output: ModelOutput | None) -> BudgetReason | None:
    """Why a reply ran out of room ('token limit', 'context window'), or None."""
    if output is None or output.empty:
        return None
    if output.stop_reason == 'max_tokens':
        return 'token limit'  # includes a reasoning model stopped inside its <think> block
    if output.stop_reason == 'model_length':
        return 'context window'  # EvalScope's reply to a context-overflow 400 (its content is the error text)
    return None


def no_final_answer(output: ModelOutput | None, final: str) -> NoAnswerReason | None:
    """Why a finished reply has nothing to score ('reasoning_only', 'tool_call_only'), or None when it has an answer.

    ``final`` is the reply's text with its reasoning blocks stripped. EvalScope turns a server's reasoning_content
    into a reasoning part and its tool calls into ``message.tool_calls``; ``completion`` is the text parts only, so a
    reply whose answer went into either has an empty final answer. Such replies are not retried (see
    ``generate_checked``): a server that routes one answer away from the text routes the next one too.
    """
    if output is None or output.empty or final.strip():
        return None
    message = output.message
    if message.tool_calls:
        return 'tool_call_only'
    if output.completion.strip():  # text, but all of it inside <think> blocks
        return 'reasoning_only'
    if not isinstance(message.content, str) and any(
        part.type == 'reasoning' and (part.reasoning or '').strip() for part in message.content
    ):
        return 'reasoning_only'
    return None


def reply_is_empty(output: ModelOutput) -> bool:
    """No choice, or a choice with neither text, reasoning nor tool call."""
    if output.empty:
        return True
    message = output.message
    if message.tool_calls:
        return False
    if isinstance(message.content, str):
        return not message.content.strip()
    for part in message.content:
        text = getattr(part, 'text', None) if part.type == 'text' else getattr(part, 'reasoning', None)
        if part.type not in ('text', 'reasoning') or (text or '').strip():
            return False
    return True


def generate_checked(call: Callable[[], ModelOutput], *, what: str, max_tokens: int | None = None) -> ModelOutput:
    """Call until the reply is usable, at most REPLY_ATTEMPTS times.

    Empty replies are retried; if every reply is empty, EmptyReplyError (the sample errors, it is not scored).
    A reply cut by the token limit is returned as is when it used the whole `max_tokens` budget (the same call would
    be cut again); otherwise (no budget set, or cut short of it: a server fault) it is retried once. The scorer then
    decides between a score and a budget failure. A context overflow is returned at once: it would overflow again.
    A reply holding only reasoning or only a tool call is not empty: it is returned, and ``no_final_answer`` flags it.
    Transport errors never reach here: EvalScope has retried them already.
    """
    discarded: list[str] = []
    for attempt in range(1, REPLY_ATTEMPTS + 1):
        output = _read_reply(call, what=what)
        last = attempt == REPLY_ATTEMPTS
        if reply_is_empty(output):
            if last:
                raise EmptyReplyError(f'{what} reply {attempt} of {attempt} is empty (discarded before: {discarded})')
            problem = 'empty'
        elif (
            output.stop_reason == 'max_tokens'
            and not last
            and 'max_tokens' not in discarded
            and not _used_budget(output, max_tokens)
        ):
            problem = 'max_tokens'
        else:
            if discarded:  # kept in the prediction row: the retries stay visible
                output.metadata = {**(output.metadata or {}), 'niah_discarded_replies': discarded}
            return _kept(output)
        discarded.append(problem)
        logger.warning('needle_haystack: %s reply %d discarded (%s); calling again', what, attempt, problem)
        time.sleep(REPLY_BACKOFF_S * attempt)
    raise AssertionError('unreachable')


def _read_reply(call: Callable[[], ModelOutput], *, what: str) -> ModelOutput:
    try:
        return call()
    except ValidationError as exc:  # raised after the reply arrived, outside EvalScope's retries: not retried here
        problems = '; '.join(
            f'{".".join(str(part) for part in error["loc"])}: {error["msg"]} (got {shown(error.get("input"))})'
            for error in exc.errors()[:3]
        )
        raise UnreadableReplyError(
            f'the {what} server sent a reply EvalScope cannot read ({exc.title}: {problems}); a server fault'
        ) from None
    except (AttributeError, TypeError) as exc:  # EvalScope reads fields of a reply whose parts have the wrong shape
        raise UnreadableReplyError(
            f"EvalScope failed on the {what} server's reply ({type(exc).__name__}: {str(exc)[:200]}): a reply of "
            'the wrong shape, most likely (a usage that is no object); a server fault'
        ) from exc
    except RecursionError:  # JSON nested deeper than the parser's stack: no reply of a chat server looks like it
        raise UnreadableReplyError(
            f'the {what} server sent a reply nested too deep to read (thousands of brackets); a server fault'
        ) from None
    except UnicodeDecodeError as exc:  # the openai SDK decodes the JSON body as UTF-8; after EvalScope's retries
        raise UnreadableReplyError(
            f'the {what} server sent a reply that is not UTF-8 (byte {exc.object[exc.start : exc.start + 1]!r} at '
            f'{exc.start}); a server fault'
        ) from None
    except Exception as exc:  # the SDK and EvalScope retried it already; their error says only 'Connection error.'
        refused = next((link for link in exception_chain(exc) if isinstance(link, ReplyTooLarge)), None)
        if refused is None:
            raise
        raise OversizeReplyError(f'{what} reply refused on every try: {refused}') from exc


def _kept(output: ModelOutput) -> ModelOutput:
    """``output`` with each choice's text and reasoning cut to MAX_KEPT_REPLY_CHARS, in place: the reply enters the
    run's records here, so the prediction row, the review row (EvalScope copies the text three times there) and our
    results hold the cut text. Scoring reads the same text; head and tail are kept, the answer is in one of them.
    Every string of the reply is then made writable (:func:`_writable`)."""
    for choice in output.choices:
        message = choice.message
        if isinstance(message.content, str):
            message.content = kept_text(message.content)
            continue
        for part in message.content:
            if part.type == 'text':
                part.text = kept_text(part.text)
            elif part.type == 'reasoning':
                part.reasoning = kept_text(part.reasoning)
    return _writable(output)


def _writable(output: ModelOutput) -> ModelOutput:
    """``output`` with every lone surrogate in any of its strings (text, reasoning, tool calls, model name) replaced
    by U+FFFD, in place, and the count recorded in its metadata (``niah_replaced_surrogates``, kept in the
    prediction row) and logged. EvalScope writes the reply after our hooks return: one it cannot encode was a sample
    lost with no row."""
    try:
        _, replaced = _repaired(output)
    except RecursionError:  # parsed JSON nested near the parser's limit (tool call arguments): not a chat reply
        raise UnreadableReplyError('a reply nested too deep to store (thousands of brackets); a server fault') from None
    if replaced:
        output.metadata = {**(output.metadata or {}), 'niah_replaced_surrogates': replaced}
        logger.warning(
            'needle_haystack: a reply held %d lone surrogate(s) (half of a UTF-16 pair, which no UTF-8 file can '
            'hold), each replaced by U+FFFD; the server sent broken text',
            replaced,
        )
    return output


def _repaired(value: Any) -> tuple[Any, int]:
    """``value`` with :func:`whole_text` applied to each string inside it (pydantic models changed in place, lists
    and dicts rebuilt when changed), and the count replaced."""
    if isinstance(value, str):
        return whole_text(value)
    if isinstance(value, BaseModel):
        total = 0
        for name in type(value).model_fields:
            repaired, count = _repaired(getattr(value, name))
            if count:
                setattr(value, name, repaired)
                total += count
        return value, total
    if isinstance(value, list | tuple):
        pairs = [_repaired(item) for item in value]
        total = sum(count for _, count in pairs)
        return (type(value)(item for item, _ in pairs) if total else value), total
    if isinstance(value, dict):
        triples = [(*_repaired(key), *_repaired(item)) for key, item in value.items()]
        total = sum(key_count + item_count for _, key_count, _, item_count in triples)
        return ({key: item for key, _, item, _ in triples} if total else value), total
    return value, 0


def _used_budget(output: ModelOutput, max_tokens: int | None) -> bool:
    # An implausible count (10**15, negative) says nothing: the cut is then not explained by the budget.
    used = plausible_tokens(output.usage.output_tokens) if output.usage is not None else None
    return max_tokens is not None and used is not None and used >= max_tokens


def model_call_config(
    config: GenerateConfig, context_length: int | None, *, headers: Mapping[str, str] | None = None
) -> GenerateConfig | None:
    """Per-call overrides (merged over the user's config): a timeout sized to the prompt when the user set none, and
    ``headers`` (the routing key) added to the user's own extra_headers, which win on a name clash."""
    overrides: dict[str, Any] = {}
    if config.timeout is None and context_length:
        in_flight = max(1, config.batch_size or 1) * int(context_length)
        overrides['timeout'] = max(MIN_TIMEOUT_S, in_flight / PROMPT_TOKENS_PER_S)
    if headers:
        # GenerateConfig.merge replaces extra_headers whole: the user's headers are carried into the per-call dict.
        own = dict(config.extra_headers or {})
        taken = {name.lower() for name in own}
        added = {name: value for name, value in headers.items() if name.lower() not in taken}
        if added:
            overrides['extra_headers'] = {**added, **own}
    return GenerateConfig(**overrides) if overrides else None


def judge_generate(
    judge: Any,
    messages: list[Any],
    *,
    extra: GenerateConfig | None = None,
    max_reply_bytes: int | None = None,
) -> ModelOutput:
    """A judge call with the model's reply checks; a judge reply cut by its budget raises (no cut verdict).
    ``extra``: per-call settings merged over ours (the judge check's first call: fewer, quicker retries);
    ``max_reply_bytes``: the run's cap (None: the one the judge's client has, see ``init_llm_judges``)."""
    model = judge.model
    install_deadline(model, max_reply_bytes=max_reply_bytes)  # the run's judges and the judge check's alike
    config = None if model.config.timeout is not None else GenerateConfig(timeout=JUDGE_TIMEOUT_S)
    if extra is not None:
        config = extra if config is None else config.merge(extra)
    output = generate_checked(
        lambda: model.generate(messages, config=config), what='judge', max_tokens=model.config.max_tokens
    )
    reason = budget_failure(output)
    if reason is not None:
        raise CutReplyError(f'judge reply cut by its {reason}; raise judge generation_config.max_tokens')
    return output
