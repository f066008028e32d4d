"""The Redactor: every configured secret out of server text, in the forms an error message quotes it."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.serving.redact import MIN_SECRET_CHARS, NO_SECRETS, REDACTED, Redactor

KEY = 'sk-live-"quoted"/key+0123456789'


@pytest.mark.parametrize(
    'form',
    [KEY, f'Bearer {KEY}', json.dumps(KEY)[1:-1], repr(KEY)[1:-1], quote(KEY, safe='')],
    ids=['verbatim', 'bearer', 'json', 'repr', 'url'],
)
def test_every_quoted_form_of_a_key_is_redacted(form: str) -> None:
    redacted = Redactor([KEY]).text(f'401: Incorrect API key provided: {form}.')
    assert 'sk-live' not in redacted and REDACTED in redacted


def test_short_placeholders_are_left_alone_and_text_without_secrets_is_unchanged() -> None:
    redactor = Redactor(['EMPTY', 'x', '', None, ' ' * 20, 'k' * (MIN_SECRET_CHARS - 1)])
    assert not redactor
    text = 'EMPTY x kkkkkkk: the model said x'
    assert redactor.text(text) == text and NO_SECRETS.text(text) == text


def test_a_key_containing_another_is_replaced_whole() -> None:
    redactor = Redactor(['abcdefgh', 'abcdefgh-ijklmnop'])
    assert redactor.text('key abcdefgh-ijklmnop and abcdefgh') == f'key {REDACTED} and {REDACTED}'


class _APIError(Exception):
    """Like openai's APIStatusError: the message in args and copied to attributes, the body a dict."""

    def __init__(self, message: str, body: dict) -> None:
        super().__init__(message)
        self.message = message
        self.body = body


def test_an_exception_is_redacted_in_place_with_its_chain() -> None:
    redactor = Redactor([KEY])
    cause = NiahConfigError('api_key', f'rejected {KEY}')
    try:
        try:
            raise cause
        except NiahConfigError as inner:
            raise _APIError(f'Error code: 401 - {KEY}', {'error': {'message': f'key {KEY}', 'code': 401}}) from inner
    except _APIError as error:
        exc = error
    assert redactor.exception(exc) is exc  # the same object: EvalScope logs it after us
    assert KEY not in str(exc) and KEY not in exc.message and KEY not in json.dumps(exc.body)
    assert exc.body['error']['code'] == 401 and REDACTED in exc.body['error']['message']
    assert KEY not in str(cause) and KEY not in cause.detail and cause.param == 'api_key'


def test_an_exception_whose_message_is_built_from_attributes_is_redacted() -> None:
    exc = UnicodeDecodeError('utf-8', b'\xff', 0, 1, f'bad byte near {KEY}')
    Redactor([KEY]).exception(exc)
    assert KEY not in str(exc) and str(exc).startswith("'utf-8' codec can't decode byte 0xff")
