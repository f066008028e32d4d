"""EvalScope's ``BenchmarkMeta.extra_params`` spec, generated from the composed parameters
(``tasks.compose.parameters``): each name with EvalScope's type name, its description and its default, so a default
is written once."""

from __future__ import annotations

from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel

from ..tasks.compose import parameters

__all__ = ['extra_params_spec']


def extra_params_spec() -> dict[str, dict[str, Any]]:
    """The spec of every parameter, the run's and each registered task's."""
    spec: dict[str, dict[str, Any]] = {}
    for name, parameter in parameters().items():
        value = parameter.default
        spec[name] = {
            'type': _type_name(parameter.field.annotation),
            'description': parameter.description,
            'value': value if not isinstance(value, BaseModel) else value.model_dump(),
        }
    return spec


def _type_name(annotation: Any) -> str:
    if get_origin(annotation) is Literal and all(isinstance(choice, str) for choice in get_args(annotation)):
        return 'str'
    text = str(annotation).replace('typing.', '')
    for raw, name in (
        ('int | None', 'int'),
        ('list[int] | None', 'list[int]'),
        ('list[float] | None', 'list[float]'),
        ('list[str] | None', 'list[str]'),
        ('float | None', 'float'),
        ('bool | None', 'bool'),
        ('str | None', 'str'),
    ):
        if text == raw:
            return name
    if isinstance(annotation, type):
        return annotation.__name__
    if text.startswith('dict['):
        return 'dict'
    return text
