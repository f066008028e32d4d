"""register_task checks what it is given and each refusal names the call to use and what is allowed; nothing is
registered by a refused call."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from evalscope_niah.tasks import task_names, unregister_task
from evalscope_niah.tasks.kit import ReportedValue, Task, register_task
from tests.support.vault_code.task import VaultCode


class _Stringly(VaultCode):
    name = 'stringly'
    reported_values = ('code_found',)  # type: ignore[assignment]  # the README's old mistake


class _Nameless(VaultCode):
    name = 'Not A Name'


class _PlainModel(BaseModel):
    level: int = 1


class _Unchecked(VaultCode):
    name = 'unchecked'
    params_model = _PlainModel  # type: ignore[assignment]


class _Abstract(Task):  # choose and check left undefined
    name = 'abstract'


@pytest.mark.parametrize(
    ('given', 'fragments'),
    [
        ('vault_code', ['register_task(MyTask) takes a Task subclass']),
        (VaultCode(), ['instance of VaultCode', 'pass the class']),
        (_Stringly, ["reported_values must be a tuple of ReportedValue", "ReportedValue('code_found', 'Code found')",
                     "'score', 'recall', 'precision' or 'error_rate'"]),
        (_Nameless, ["needs a name", "name = 'my_task'", "'Not A Name'"]),
        (_Unchecked, ['params_model must be a TaskParams subclass', '_PlainModel']),
        (_Abstract, ['does not define check, choose', 'check(answer, target)']),
    ],
    ids=['string', 'instance', 'string-values', 'bad-name', 'plain-model', 'abstract'],
)  # fmt: skip
def test_register_task_refuses_what_is_not_a_task_and_names_the_call(given: object, fragments: list[str]) -> None:
    before = task_names()
    with pytest.raises(TypeError) as error:
        register_task(given)  # type: ignore[arg-type]
    for fragment in fragments:
        assert fragment in str(error.value)
    assert task_names() == before


def test_register_task_is_a_call_and_idempotent() -> None:
    assert register_task(VaultCode) is None  # one way: a call, not a decorator returning the class
    try:
        register_task(VaultCode)  # the same class again changes nothing
        assert task_names().count('vault_code') == 1
        assert VaultCode.reported_values == (ReportedValue('code_found', 'Code found'),)
    finally:
        unregister_task(VaultCode.name)
    assert 'vault_code' not in task_names()
