"""The rules of `evalscope_niah.inert`, character by character: what each edge escapes, that escaped JSON still means
the same text, that showing is idempotent, and that the console is given back as it was."""

from __future__ import annotations

import html
import io
import json
import sys

import pytest

from evalscope_niah.inert import (
    FORMULA_STARTS,
    csv_cell,
    csv_cell_read,
    html_text,
    inert_console,
    json_text,
    script_json,
    terminal_text,
    unsafe_characters,
)

ACTED_ON = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A))]
EVERY_HOSTILE = ''.join(ACTED_ON) + '<!--<script></script>&amp;\u2028\u2029"\'=+-@ 中文 é'


def test_terminal_text_shows_every_acted_on_character_and_keeps_layout() -> None:
    shown = terminal_text(EVERY_HOSTILE)
    assert unsafe_characters(shown) == [] and terminal_text(shown) == shown  # idempotent
    assert '\n' in shown and '\t' in shown  # layout only
    assert terminal_text('\x1b[2J') == '\\u001b[2J' and terminal_text('a\rb') == 'a\\u000db'
    assert terminal_text('中文 é\u200f') == '中文 é\u200f'  # text, and the bidi marks that override nothing


@pytest.mark.parametrize('value', [EVERY_HOSTILE, [EVERY_HOSTILE, {'k': EVERY_HOSTILE}], '中文 plain'])
def test_script_json_parses_back_and_holds_nothing_markup_or_control(value: object) -> None:
    literal = script_json(value)
    assert json.loads(literal) == value
    assert not set(literal) & {'<', '>', '&', '\u2028', '\u2029'} and unsafe_characters(literal) == []
    assert '中文' in literal  # readable: only what is acted on is escaped


def test_json_text_is_the_same_data_and_safe_to_print() -> None:
    text = json_text({'a': EVERY_HOSTILE}, indent=1)
    assert json.loads(text) == {'a': EVERY_HOSTILE} and unsafe_characters(text) == []
    assert '<!--<script>' in text  # a file is no page: markup stays as it is
    with pytest.raises(ValueError):
        json_text(float('nan'))
    assert json_text(float('nan'), allow_nan=True) == 'NaN'


def test_html_text_escapes_markup_and_shows_controls() -> None:
    shown = html_text(EVERY_HOSTILE)
    assert not set(shown) & {'<', '>', '"', "'"} and unsafe_characters(shown, keep='\r') == []
    assert html.unescape(shown) == terminal_text(EVERY_HOSTILE).replace('\\u000d', '\r')


@pytest.mark.parametrize('text', ['=1+1', '+1', '-1', '@SUM(A1)', '\tx', '\rx', "'=x", "'plain", 'plain', ''])
def test_csv_cell_quotes_formulas_and_reads_back(text: str) -> None:
    cell = csv_cell(text)
    assert cell == ("'" + text if text.startswith(FORMULA_STARTS) else text)
    assert csv_cell_read(cell) == text


def test_csv_cell_shows_controls_but_the_three_csv_quotes() -> None:
    assert csv_cell('a\x1bb\u202ec\td\ne\rf') == 'a\\u001bb\\u202ec\td\ne\rf'
    assert csv_cell(None) == '' and csv_cell(-0.5) == '-0.5' and csv_cell(3) == '3'


def test_inert_console_shows_what_is_printed_and_gives_the_streams_back() -> None:
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        with inert_console():
            print('\x1b]0;title\x07', flush=True)
            print('\u202eerr', file=sys.stderr)
            assert sys.stdout.getvalue() == out.getvalue()  # everything else is the wrapped stream's
        assert (sys.stdout, sys.stderr) == (out, err)
    finally:
        sys.stdout, sys.stderr = saved
    assert out.getvalue() == '\\u001b]0;title\\u0007\n' and err.getvalue() == '\\u202eerr\n'
