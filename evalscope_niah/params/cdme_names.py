"""OpenCompass CDME's names read as ours: the values of its one-value and tokenizer names, and the user's own
reasoning chain (a ``keyword`` given with ``needles``) checked whole."""

from __future__ import annotations

from typing import Any

from ..errors import NiahConfigError

# CDME's one-value names of our lists: needle -> needles [needle], length / depth -> a one-value grid axis.
ONE_VALUE_ALIASES = ('needle', 'length', 'depth')
# The task of needles given with a keyword (CDME's multi-needle dicts have no task): the user's reasoning chain.
KEYWORD_TASK = 'reasoning'


def alias_value(alias: str, canonical: str, value: Any) -> Any:
    """The value of ``canonical`` that ``alias`` (another tool's name) gives."""
    if alias == 'tokenizer_model':
        return _tiktoken_for_model(value)
    if alias in ONE_VALUE_ALIASES:
        if isinstance(value, list | tuple):
            raise NiahConfigError(alias, f"is one value (CDME's name); give a list as {canonical} (got {value!r})")
        return [value]
    return value


def check_chain(name: str, *, keyword: str, needles: list[str] | None, question: str | None) -> None:
    """A keyword chain is the user's own: its needles and question are given, and the keyword is in a link."""
    if needles is None:
        raise NiahConfigError(f'subsets.{name}.needles', f'keyword {keyword!r} needs the needles of your chain')
    if question is None:
        raise NiahConfigError(
            f'subsets.{name}.retrieval_question', f'the chain of keyword {keyword!r} needs its question'
        )
    if not any(keyword.strip() in needle for needle in needles):
        raise NiahConfigError(
            f'subsets.{name}.keyword', f'{keyword!r} occurs in none of the needles, so the chain cannot be answered'
        )


def _tiktoken_for_model(model: Any) -> str:
    # CDME's tokenizer_model names an OpenAI model; tiktoken's own table maps it to an encoding, offline.
    import tiktoken.model

    if not isinstance(model, str) or not model.strip():
        raise NiahConfigError('tokenizer_model', f"must be an OpenAI model name such as 'gpt-4' (got {model!r})")
    try:
        return f'tiktoken:{tiktoken.model.encoding_name_for_model(model.strip())}'
    except KeyError:
        known = ', '.join(sorted(tiktoken.model.MODEL_TO_ENCODING)[:12])
        raise NiahConfigError(
            'tokenizer_model',
            f'unknown OpenAI model {model!r}; known to tiktoken: {known}, ... (or set tokenizer_path)',
        ) from None
