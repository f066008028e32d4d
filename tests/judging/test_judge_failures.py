"""A judge call failure names what failed, where (without credentials) and the fix that belongs to it."""

from __future__ import annotations

import pytest

from evalscope_niah.judging.judge_failures import FATAL_FAILURE_KINDS, judge_call_failure, shown_url


@pytest.mark.parametrize(
    ('kind', 'what', 'fix'),
    [
        ('unreachable', 'judge server unreachable', "judge's api_url"),
        ('timeout', 'did not answer in time', "'timeout'"),
        ('rejected_key', 'rejected the API key', "judge's api_key"),
        ('model_not_found', 'judge model not found', "judge's model_id"),
        ('http_error', 'answered with an error', 'check the judge server'),
        ('bad_reply', 'no usable reply', 'check the judge server'),
    ],
)
def test_every_kind_names_itself_the_url_and_its_fix(kind: str, what: str, fix: str) -> None:
    failure = judge_call_failure(kind, url='https://judge.example/v1', model='qwen', detail='d')  # type: ignore[arg-type]
    assert what in failure.describe() and failure.describe().endswith(' at https://judge.example/v1 (d)')
    assert fix in failure.fix
    assert failure.to_dict() == {
        'kind': kind,
        'url': 'https://judge.example/v1',
        'detail': 'd',
        'fix': failure.fix,
        'text': failure.describe(),
    }


def test_only_failures_that_hit_every_call_stop_the_check() -> None:
    assert {'unreachable', 'timeout', 'rejected_key', 'model_not_found'} == FATAL_FAILURE_KINDS


@pytest.mark.parametrize(
    ('url', 'shown'),
    [
        ('http://127.0.0.1:8000/v1', 'http://127.0.0.1:8000/v1'),
        ('https://user:secret@judge.example/v1?api_key=secret#x', 'https://judge.example/v1'),
        ('http://[::1]:9/v1', 'http://[::1]:9/v1'),
    ],
)
def test_urls_are_shown_without_credentials(url: str, shown: str) -> None:
    assert shown_url(url) == shown
