"""Text we did not write (answers, judge replies, server errors, names in results files, model ids) made inert where
it leaves us: shown, never obeyed, by a browser, a terminal, a log viewer or a spreadsheet.

One rule per edge, used by the writers and nowhere else: `html_text` (HTML text and attributes), `script_json`
(JSON inside ``<script>``), `json_text` (JSON files and lines), `terminal_text` with `inert_console` (what a
command prints) and `inert_logger` (what is logged), `csv_cell` (a CSV field).  Every character that a terminal or
a browser would act on instead of showing is written as its ``\\uXXXX`` escape: C0 controls (ESC starts the
sequences that retitle or clear a terminal), DEL, C1 controls (U+009B is a one-byte CSI on some terminals) and the
bidi overrides and isolates U+202A-U+202E, U+2066-U+2069 (they reorder what follows: 'Trojan Source').
"""

from __future__ import annotations

import html
import json
import logging
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = [
    'FORMULA_STARTS',
    'csv_cell',
    'csv_cell_read',
    'html_text',
    'inert_console',
    'inert_logger',
    'json_text',
    'script_json',
    'shown_text',
    'terminal_text',
    'unsafe_characters',
]

_BIDI_CONTROLS = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
# Obeyed, never shown, by a terminal or a browser: C0 (but tab and newline, which only lay text out), DEL, C1, bidi.
_ACTED_ON = (*(c for c in range(0x20) if c not in (0x09, 0x0A)), *range(0x7F, 0xA0), *_BIDI_CONTROLS)


def _escapes(codes: tuple[int, ...] | list[int]) -> dict[int, str]:
    # \uXXXX: the same escape in JSON, JavaScript and Python, so escaped JSON still means the same text.
    return {code: f'\\u{code:04x}' for code in codes}


class _Escaper:
    """Writes each character of ``escapes`` as its escape, at the cost of one scan: a compiled character class finds
    the first one (almost no text has any, and then the text itself is returned, nothing copied); only text that has
    one is rebuilt, by a substitution that touches those characters alone.  ``str.translate`` would look every
    character up in a dict (about 30x slower over the megabytes of a long-context grid's prompts)."""

    def __init__(self, escapes: dict[int, str]) -> None:
        self._escapes = {chr(code): escape for code, escape in escapes.items()}
        self._pattern = re.compile('[' + ''.join(f'\\U{code:08x}' for code in sorted(escapes)) + ']')

    def __call__(self, text: str) -> str:
        if self._pattern.search(text) is None:
            return text
        return self._pattern.sub(self._escape, text)

    def _escape(self, match: re.Match[str]) -> str:
        return self._escapes[match.group()]

    def found(self, text: str) -> list[str]:
        """The characters of ``text`` this escapes, in order."""
        return self._pattern.findall(text)


_TERMINAL = _Escaper(_escapes(_ACTED_ON))
# In a page or a CSV field a carriage return is a line end (the HTML parser and the csv module read it so); it only
# rewrites a line on a terminal.
_MARKUP = _Escaper(_escapes([code for code in _ACTED_ON if code != 0x0D]))
# JSON escapes C0 itself; the rest of _ACTED_ON, and the line separators that end a JavaScript line in old engines.
_JSON_CODES = [code for code in _ACTED_ON if code >= 0x20] + [0x2028, 0x2029]
_JSON = _Escaper(_escapes(_JSON_CODES))
# Inside <script> a '<' may open '</script>' or '<!--' (which changes how the parser finds the end); '>' and '&'
# are escaped with it so that no markup at all can be read in the script's data.
_SCRIPT = _Escaper(_escapes([*_JSON_CODES, ord('<'), ord('>'), ord('&')]))

# A spreadsheet runs a cell starting with one of these as a formula (CSV injection); a leading quote makes it text.
# A leading quote itself is doubled so that reading back is unambiguous.
FORMULA_STARTS = ('=', '+', '-', '@', '\t', '\r', "'")


def unsafe_characters(text: str, *, keep: str = '') -> list[str]:
    """The characters of ``text`` a terminal or browser would obey (for checks and tests); ``keep`` is allowed."""
    return [char for char in _TERMINAL.found(text) if char not in keep]


def terminal_text(text: str) -> str:
    """``text`` as a terminal shows it harmlessly: each control, escape and bidi character as ``\\uXXXX`` (ESC ->
    '\\u001b', CR -> '\\u000d'); newline and tab stay.  Idempotent."""
    return _TERMINAL(text)


def shown_text(text: str) -> str:
    """``text`` as a page shows it: each control and bidi character as ``\\uXXXX``, tab, newline and CR kept. What
    both heatmap pages draw: the final page through `html_text`, the live page's script as text it sets
    (``textContent`` of decoded JSON would draw the characters themselves).  Idempotent."""
    return _MARKUP(text)


def html_text(text: str) -> str:
    """``text`` for HTML content or a quoted attribute: ``& < > " '`` escaped, controls and bidi shown."""
    return html.escape(shown_text(text), quote=True)


def json_text(value: Any, **options: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, allow_nan=False, **options)`` with DEL, C1, bidi and U+2028/9 written
    as JSON escapes (C0 already is): the same data, and a file that is safe to ``cat``."""
    return _JSON(json.dumps(value, **{'ensure_ascii': False, 'allow_nan': False, **options}))


def script_json(value: Any) -> str:
    """``value`` as a JavaScript literal for a ``<script>`` element: JSON (it parses back to ``value``) in which no
    ``<``, ``>``, ``&``, line separator or control character appears raw, so no text can end or bend the script."""
    return _SCRIPT(json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(',', ':')))


def csv_cell(value: int | float | str | None) -> str:
    """One CSV field: None is empty, a number is its repr (shortest exact round trip), text that a spreadsheet would
    run as a formula gets a leading quote, and controls other than tab, newline and CR are shown (the csv module
    quotes those three)."""
    if value is None:
        return ''
    if not isinstance(value, str):
        return str(value)
    value = _MARKUP(value)
    return f"'{value}" if value.startswith(FORMULA_STARTS) else value


def csv_cell_read(text: str) -> str:
    """Undo the quote `csv_cell` puts before a formula-like value ("'=x" -> '=x'); other text is unchanged."""
    if text.startswith("'") and text[1:].startswith(FORMULA_STARTS):
        return text[1:]
    return text


# --------------------------------------------------------------------------------------------------------------------
# The console and the logs
# --------------------------------------------------------------------------------------------------------------------


class _InertStream:
    """A text stream that writes what it is given through `terminal_text`; everything else is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(terminal_text(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def inert_console() -> Iterator[None]:
    """While it is open, everything printed to sys.stdout and sys.stderr is shown, never obeyed, by the terminal.

    For commands whose output is all ours or data: not around EvalScope's run, whose progress bars and coloured
    log levels are escape sequences on purpose (its text from servers reaches the console through the log filter).
    """
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _InertStream(saved[0]), _InertStream(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


class _InertRecords(logging.Filter):
    """Makes a record's message, traceback and stack shown-not-obeyed before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record whose args do not fit its format: logging reports it at emit, as ever
            return True
        shown = terminal_text(message)
        if shown != message:
            record.msg, record.args = shown, ()
        if record.exc_info and not record.exc_text:
            traceback_text = logging.Formatter().formatException(record.exc_info)
            if terminal_text(traceback_text) != traceback_text:
                record.exc_text = terminal_text(traceback_text)  # formatters use a set exc_text as it is
        if record.stack_info:
            record.stack_info = terminal_text(record.stack_info)
        return True


_INERT_RECORDS = _InertRecords()


def inert_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` with the filter that makes its records inert, for every handler they reach (a
    logger's filter sees only records logged on it, so each of our loggers is taken through here)."""
    logger = logging.getLogger(name)
    if _INERT_RECORDS not in logger.filters:
        logger.addFilter(_INERT_RECORDS)
    return logger
