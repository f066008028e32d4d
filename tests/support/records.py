"""Figures quoted in the docs, checked against the dated benchmark records in ``benchmarks/results/``.

A quoted figure carries its source right after it: ``7.5×<!-- record: generation-2026-11-27.json#default ours cold
cache/speedup -->``. The path after ``#`` walks the record's ``figures`` (nested names joined by ``/``; a name may
itself hold ``/``, the longest name that fits is taken); an optional factor scales it (``*100``: a share in percent,
``*1e-6``: bytes in MB). The
figure in the text must be the value rounded to the decimals the text shows (thousands separators where the text
has them). Figure-looking numbers in the parts of the docs that quote measurements and have no record reference are
reported too (a table's goal column is a goal, not a figure, and is skipped).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / 'benchmarks' / 'results'
NUMBER = r'\d[\d,]*(?:\.\d+)?'
# The figure, what may stand between it and its reference (a unit, a space), then the reference.
MARKED = re.compile(rf'(?P<figure>{NUMBER})(?P<unit>[^\d<>|]{{0,6}}?)<!-- record: (?P<file>[^#\s]+)#(?P<path>.+?) -->')
# What reads as a measured figure: a number with a unit of time, size, share or ratio (English and Chinese); not a
# grid's shape (10 × 10), nor a goal named as one (the 15% goal).
UNIT = r'×|x(?![\w])|%|s(?![\w])|MB|GB|倍|秒'
FIGURE = re.compile(rf'(?<![\w.^/-])(?P<figure>{NUMBER}) ?(?P<unit>{UNIT})(?! ?\d| goal| 目标)')
CODE = re.compile(r'`[^`\n]*`')
GOAL_HEADERS = ('goal', '目标')


@dataclass(frozen=True)
class Mismatch:
    where: str
    figure: str
    expected: str
    reference: str


def load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text(encoding='utf-8'))


def lookup(figures: dict, path: str) -> float:
    """The figure at ``path`` (names joined by ``/``; the longest name matching at each level)."""
    scale = 1.0
    scaled = re.fullmatch(r'(.+)\*([0-9.e+-]+)', path)
    if scaled:
        path, scale = scaled[1], float(scaled[2])
    node, rest = figures, path
    while True:
        names = [name for name in node if rest == name or rest.startswith(name + '/')] if isinstance(node, dict) else []
        if not names:
            raise KeyError(f'no figure {path!r} (stuck at {rest!r})')
        name = max(names, key=len)
        node, rest = node[name], rest[len(name) + 1 :]
        if not rest:
            return float(node) * scale


def formatted(value: float, like: str) -> str:
    """``value`` written as ``like`` is: its decimals, and thousands separators if it has them."""
    decimals = len(like.split('.', 1)[1]) if '.' in like else 0
    return f'{value:,.{decimals}f}' if ',' in like else f'{value:.{decimals}f}'


def check_references(text: str, where: str) -> list[Mismatch]:
    """Every reference in ``text`` whose figure differs from its record (or names a missing record or figure)."""
    found = []
    for match in MARKED.finditer(text):
        reference = f'{match["file"]}#{match["path"]}'
        try:
            value = lookup(load(match['file'])['figures'], match['path'])
        except (OSError, KeyError, TypeError, ValueError) as error:
            found.append(Mismatch(where, match['figure'], f'(unreadable: {error})', reference))
            continue
        expected = formatted(value, match['figure'])
        if expected != match['figure']:
            found.append(Mismatch(where, match['figure'], expected, reference))
    return found


def unreferenced(text: str) -> list[str]:
    """Figure-looking numbers in ``text`` with no record reference right after them (code spans, and a table's goal
    column, are not figures)."""
    goal_column = None
    found = []
    for line in text.splitlines():
        cells = line.split('|')
        if line.startswith('|') and any(cell.strip().lower() in GOAL_HEADERS for cell in cells):
            goal_column = next(i for i, cell in enumerate(cells) if cell.strip().lower() in GOAL_HEADERS)
        elif not line.startswith('|'):
            goal_column = None
        elif goal_column is not None and len(cells) > goal_column:
            cells[goal_column] = ''
            line = '|'.join(cells)
        line = CODE.sub('', MARKED.sub('', line))
        found += [f'{match.group(0)!r} in: {line.strip()[:100]}' for match in FIGURE.finditer(line)]
    return found
