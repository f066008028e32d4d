"""Values a model server reports are checked where they enter: implausible counts dropped with one warning per
field, an untrustworthy window refused with a message naming the server, the field and the value."""

from __future__ import annotations

import logging
import math

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.serving.server_values import (
    MAX_PLAUSIBLE_TOKENS,
    SHOWN_CHARS,
    ServerValues,
    plausible_tokens,
    shown,
    trusted_window,
)

LIES = [-7, -1, 'many', '12', True, False, 7.0, math.nan, math.inf, 10**15, MAX_PLAUSIBLE_TOKENS + 1, [3], {'n': 3}]


@pytest.mark.parametrize('value', [0, 1, 4096, MAX_PLAUSIBLE_TOKENS])
def test_plausible_counts_pass_unchanged(value: int) -> None:
    assert plausible_tokens(value) == value


@pytest.mark.parametrize('value', LIES, ids=repr)
def test_implausible_counts_are_none(value: object) -> None:
    assert plausible_tokens(value) is None


def test_a_window_must_be_positive() -> None:
    assert plausible_tokens(0, minimum=1) is None
    assert trusted_window(1, source='here') == 1
    assert trusted_window(None, source='here') is None  # not saying is not lying


@pytest.mark.parametrize('value', [*LIES, 0], ids=repr)
def test_an_untrustworthy_window_names_the_source_and_the_value(value: object) -> None:
    with pytest.raises(NiahConfigError) as caught:
        trusted_window(value, source='GET http://127.0.0.1:9/props (n_ctx)')
    assert caught.value.param == 'api_url'
    message = str(caught.value)
    assert 'GET http://127.0.0.1:9/props (n_ctx)' in message and shown(value) in message
    assert 'nothing was sent to the model' in message


def test_shown_values_are_cut() -> None:
    assert shown('x' * 10_000) == repr('x' * 10_000)[: SHOWN_CHARS - 3] + '...'
    assert len(shown('x' * 10_000)) == SHOWN_CHARS
    assert shown(-7) == '-7'


def test_one_warning_per_field_and_run(caplog: pytest.LogCaptureFixture) -> None:
    values = ServerValues('the model server http://127.0.0.1:9/v1')
    with caplog.at_level(logging.WARNING, logger='evalscope_niah.serving.server_values'):
        assert [values.tokens('usage.prompt_tokens', lie) for lie in (-7, 10**15, -7)] == [None, None, None]
        assert values.tokens('usage.completion_tokens', 'x' * 1000) is None
        assert values.tokens('usage.prompt_tokens', 512) == 512
        assert values.tokens('usage.prompt_tokens', None) is None
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 2, messages
    assert 'http://127.0.0.1:9/v1' in messages[0] and 'usage.prompt_tokens = -7' in messages[0]
    assert 'usage.completion_tokens' in messages[1] and len(messages[1]) < 400  # the long value is cut
    # Another run warns again.
    with caplog.at_level(logging.WARNING, logger='evalscope_niah.serving.server_values'):
        ServerValues('another').tokens('usage.prompt_tokens', -7)
    assert len(caplog.records) == 3
