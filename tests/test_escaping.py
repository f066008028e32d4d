"""The rules of `evalscope_niah.escaping`, character by character: what each edge escapes, that escaped JSON still means
the same text, that showing is idempotent, and that the console is given back as it was."""

from __future__ import annotations

import html
import io
import json
import sys

import pytest

from evalscope_niah.escaping import (
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


# ---- the same output as the dict-lookup implementation it replaced, byte for byte ------------------------------------
# The reference: each edge's table applied with str.translate, as the module did before it found the characters
# with a compiled search (issue 44). Kept here only, to prove the faster rule writes exactly what the old one wrote.


def _reference_escapes(codes: list[int]) -> dict[int, str]:
    return {code: f'\\u{code:04x}' for code in codes}


_REF_ACTED_ON = [c for c in range(0x20) if c not in (0x09, 0x0A)] + [*range(0x7F, 0xA0)]
_REF_ACTED_ON += [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_REF_TERMINAL = _reference_escapes(_REF_ACTED_ON)
_REF_MARKUP = _reference_escapes([code for code in _REF_ACTED_ON if code != 0x0D])
_REF_JSON = _reference_escapes([code for code in _REF_ACTED_ON if code >= 0x20] + [0x2028, 0x2029])
_REF_SCRIPT = {**_REF_JSON, **_reference_escapes([ord('<'), ord('>'), ord('&')])}


def _reference(value: object) -> dict[str, object]:
    """What the old implementation wrote for ``value`` at each edge."""
    out: dict[str, object] = {
        'json_text': json.dumps(value, ensure_ascii=False, allow_nan=False).translate(_REF_JSON),
        'json_text indent': json.dumps(value, ensure_ascii=False, allow_nan=False, indent=2).translate(_REF_JSON),
        'script_json': json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(',', ':')).translate(
            _REF_SCRIPT
        ),
    }
    if isinstance(value, str):
        out['terminal_text'] = value.translate(_REF_TERMINAL)
        out['html_text'] = html.escape(value.translate(_REF_MARKUP), quote=True)
        marked = value.translate(_REF_MARKUP)
        out['csv_cell'] = f"'{marked}" if marked.startswith(FORMULA_STARTS) else marked
        out['unsafe_characters'] = [char for char in value if ord(char) in _REF_TERMINAL]
    return out


def _current(value: object) -> dict[str, object]:
    out: dict[str, object] = {
        'json_text': json_text(value),
        'json_text indent': json_text(value, indent=2),
        'script_json': script_json(value),
    }
    if isinstance(value, str):
        out['terminal_text'] = terminal_text(value)
        out['html_text'] = html_text(value)
        out['csv_cell'] = csv_cell(value)
        out['unsafe_characters'] = unsafe_characters(value)
    return out


# Every character any edge treats specially, its neighbours, and characters a regex could mistake for syntax.
_SPECIAL = (
    [chr(c) for c in range(0xA1)] + [chr(c) for c in range(0x2020, 0x2030)] + [chr(c) for c in range(0x2060, 0x2070)]
)
_SPECIAL += ['\ud800', '\udbff', '\udc00', '\udfff', '\ud83d\ude00', '\U0001f600', '\ufeff', '\ufffd', '\U0010ffff']
_SPECIAL += ['<', '>', '&', '"', "'", '\\', ']', '[', '^', '-', '中', 'é', '\u200e', '\u200f', '\u061c']
HOSTILE_STRINGS = [
    '',
    'plain text, nothing to escape',
    EVERY_HOSTILE,
    ''.join(_SPECIAL),
    *_SPECIAL,
    '\u2028\u2029' * 3,
    '\ud800 lone high, \udc00 lone low',
    '</script><!--' * 4,
    '=cmd|calc' + '\x9b' + '\u202e',
    '\x7f' * 10 + 'x' + '\x80',
]


@pytest.mark.parametrize('text', HOSTILE_STRINGS, ids=lambda text: ascii(text)[:40])
def test_every_edge_writes_what_the_old_implementation_wrote(text: str) -> None:
    for value in (text, [text, {'k': text, text: 1.5}]):
        assert _current(value) == _reference(value)


def test_random_strings_escape_exactly_as_before() -> None:
    """A property-style loop: random strings picked mostly from the special characters, partly from anywhere."""
    import random

    rng = random.Random(44)
    for _ in range(2000):
        length = rng.randrange(0, 40)
        text = ''.join(
            rng.choice(_SPECIAL) if rng.random() < 0.6 else chr(rng.randrange(0, 0x110000)) for _ in range(length)
        )
        assert _current(text) == _reference(text), ascii(text)


def test_text_that_needs_no_escape_is_returned_itself() -> None:
    text = 'nothing here needs an escape: 中文 é ' * 1000
    assert terminal_text(text) is text and csv_cell(text) is text
