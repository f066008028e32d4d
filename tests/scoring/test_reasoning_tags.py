"""The one reasoning-block stripper (scoring/reasoning_tags.py)."""

from __future__ import annotations

import time

import pytest

from evalscope_niah.scoring import (
    strip_reasoning,
)

# --- strip_reasoning ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('reply', 'expected'),
    [
        ('Dolores Park.', 'Dolores Park.'),
        ('  padded answer \n', 'padded answer'),
        ('<think>the needle says Dolores Park</think>\nEat a sandwich.', 'Eat a sandwich.'),
        ('<thinking>hmm\nmultiline</thinking> Final.', 'Final.'),
        ('<THINK>caps</THINK>Answer', 'Answer'),
        ('<think>a</think>one <think>b</think>two', 'one two'),
        ('<think>still thinking, the answer is Dolores Park', ''),
        ('Answer first. <think>trailing unfinished', 'Answer first.'),
        # Templates that put the opening tag in the prompt: only the closing tag reaches the output.
        ('reasoning without an opening tag</think>The answer.', 'The answer.'),
        ('', ''),
    ],
)
def test_strip_reasoning(reply: str, expected: str) -> None:
    assert strip_reasoning(reply) == expected


# --- strip_reasoning on hostile input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('reply', 'expected'),
    [
        ('<think>a</thinking>b</think>c', 'c'),  # a block closes only on its own tag name
        ('<think>x<thinking>y</thinking>z', ''),  # unclosed <think>: everything from it is dropped
        ('<thinking>p</thinking><think>q</think>answer', 'answer'),
        ('<thi<think>x</think>nk>tail', ''),  # removing a block joins '<thi' and 'nk>' into a new opening tag
        ('< think >spaced</ think >done', 'done'),
    ],
)
def test_strip_reasoning_edge_cases(reply: str, expected: str) -> None:
    assert strip_reasoning(reply) == expected


@pytest.mark.parametrize('unit', ['<think>', '<thinking>', '</think>', '<think>a</thinking>', '< think'])
def test_strip_reasoning_is_linear_on_a_megabyte(unit: str) -> None:
    # The old regex rescanned to the end for every unclosed '<think>': 280 kB of them took about 50 s.
    reply = unit * (1_000_000 // len(unit))
    started = time.perf_counter()
    strip_reasoning(reply)
    assert time.perf_counter() - started < 2.0
