"""Human-readable labels for the grid: token counts ('4k', '128k'), depths ('33.33'), the tokenizer that counted
them ('Qwen3 tokens'), and the plain-text cell table the CLI and the demo print; lengths in a page's language
(page_text.py).  Shared by the heatmaps, the
comparison figure and the OpenCompass writer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..escaping import terminal_text
from ..making.tokenization import TIKTOKEN_PREFIX
from ..vocabulary import SERVED_TOKENIZER_PREFIX, served_tokenizer_name
from .page_text import EN, PageText

if TYPE_CHECKING:
    from .stats import CellSummary

__all__ = [
    'EMPTY_CELL',
    'SERVED_COUNT',
    'cell_grid',
    'file_name_part',
    'format_cell_table',
    'format_depth',
    'format_tokens',
    'length_axis_label',
    'length_labels',
    'length_unit',
    'subset_tokenizer',
    'tokenizer_display_name',
]

# What an empty cell shows, in the terminal table and on the heatmaps alike.
EMPTY_CELL = '—'
_UNSAFE_FILENAME_CHARS = re.compile(r'[^A-Za-z0-9._-]+')


def file_name_part(name: str) -> str:
    """`name` (a subset, from data) fit for a file name: runs of characters outside [A-Za-z0-9._-] become '_'.

    Keeps names from escaping the output directory ('../x' -> '.._x') or breaking file names.
    """
    return _UNSAFE_FILENAME_CHARS.sub('_', name) or '_'


# 'Qwen3-0.6B' -> 'Qwen3', 'Qwen2.5-7B-Instruct' -> 'Qwen2.5': a family shares its tokenizer across sizes.
_SIZE_SUFFIX = re.compile(r'-\d+(?:\.\d+)?[BbMmKk]$')
_VARIANT_SUFFIX = re.compile(r'(?:[-_.](?:Instruct|instruct|Chat|chat|it|Base|base|GGUF|gguf))+$')
_FILE_SUFFIX = re.compile(r'\.gguf$|(?:[-.]Q\d\w*)$', re.IGNORECASE)


def tokenizer_display_name(tokenizer: str | None) -> str | None:
    """Short name of the tokenizer that counted the lengths (``SampleMeta.tokenizer``), for labels; None if unknown.

    A tokenizer path names a tokenizer, shared by a model family: 'Qwen/Qwen3-0.6B' -> 'Qwen3', a local directory
    -> its folder name. 'tiktoken:cl100k_base' -> 'cl100k_base'. 'server:<model>' (``tokenizer_path: 'server'``,
    the model server's own tokenizer) names the served model: 'server:SmolLM2-135M-Instruct' -> 'SmolLM2-135M'.
    """
    if not tokenizer:
        return None
    if tokenizer.startswith(TIKTOKEN_PREFIX):
        return tokenizer[len(TIKTOKEN_PREFIX) :] or None
    served = tokenizer.startswith(SERVED_TOKENIZER_PREFIX)
    name = tokenizer[len(SERVED_TOKENIZER_PREFIX) :] if served else tokenizer
    name = name.rstrip('/\\').replace('\\', '/').rsplit('/', 1)[-1]
    name = _VARIANT_SUFFIX.sub('', _FILE_SUFFIX.sub('', _FILE_SUFFIX.sub('', name)))  # '.Q4_1.gguf': two
    if not served:
        name = _SIZE_SUFFIX.sub('', name)
    return name or None


# The tokenizer of lengths relabelled with a server's counts when the results do not name its model (`plot
# --served-tokens`): 'served tokens'.
SERVED_COUNT = served_tokenizer_name('served')


def length_unit(tokenizer: str | None, *, text: PageText | None = None) -> str:
    """What a length counts: 'Qwen3 tokens', or 'tokens' when the tokenizer is unknown (files from before it was
    recorded); in ``text``'s language (English by default)."""
    text = text or EN
    if tokenizer == SERVED_COUNT:
        return text.served_tokens
    name = tokenizer_display_name(tokenizer)
    return text.named_tokens.format(name=name) if name else text.tokens


def length_axis_label(tokenizer: str | None, *, text: PageText | None = None) -> str:
    """The heatmaps' length axis: 'Context length (Qwen3 tokens)'."""
    text = text or EN
    return text.length_axis.format(unit=length_unit(tokenizer, text=text))


def subset_tokenizer(cells: Iterable[CellSummary], *, subset: str) -> str | None:
    """The tokenizer that counted one subset's lengths, from its cells (None when none recorded it)."""
    return next((cell.tokenizer for cell in cells if cell.subset == subset and cell.tokenizer), None)


def format_tokens(tokens: int, *, unit: int = 1000) -> str:
    """Compact token count: 1000 -> '1k', 4600 -> '4.6k', 131072 with unit=1024 -> '128k', 500 -> '500'."""
    if unit not in (1000, 1024):
        raise ValueError(f'unit must be 1000 or 1024, got {unit!r}')
    for divisor, suffix in ((unit * unit, 'M'), (unit, 'k')):
        if tokens >= divisor:
            text = f'{tokens / divisor:.1f}'.removesuffix('.0')
            return f'{text}{suffix}'
    return str(tokens)


def _exact_in_units(tokens: int, unit: int) -> bool:
    # True when `format_tokens` (one decimal of k or M) shows this length without rounding.
    divisor = unit * unit if tokens >= unit * unit else unit
    return tokens < unit or (tokens * 10) % divisor == 0


def length_labels(lengths: Sequence[int]) -> list[str]:
    """Labels for an axis of context lengths, unique and as round as possible.

    Decimal units (1k = 1000) unless only binary units label every length exactly (4096 -> '4k', 131072 ->
    '128k').  If rounding makes two labels equal, fall back to full token counts so columns stay distinct.
    """
    unit = 1000
    if not all(_exact_in_units(t, 1000) for t in lengths) and all(_exact_in_units(t, 1024) for t in lengths):
        unit = 1024
    labels = [format_tokens(t, unit=unit) for t in lengths]
    if len(set(labels)) != len(set(lengths)):
        labels = [f'{t:,}' for t in lengths]
    return labels


def format_depth(depth_percent: float) -> str:
    """Depth label without noise: 0 -> '0', 12.5 -> '12.5', 33.333 -> '33.33'."""
    return f'{depth_percent:.2f}'.rstrip('0').rstrip('.')


def cell_grid(
    cells: Iterable[CellSummary], *, subset: str
) -> tuple[list[int], list[float], dict[tuple[float, int], CellSummary]]:
    """Sorted lengths, sorted depths and a (depth, length) -> cell map for one subset.

    Raises ValueError when the subset has no cells or a (length, depth) pair occurs twice (e.g. concatenated CSVs):
    silently picking one would draw a wrong number.
    """
    grid: dict[tuple[float, int], CellSummary] = {}
    for cell in cells:
        if cell.subset != subset:
            continue
        key = (cell.depth_percent, cell.context_length)
        if key in grid:
            raise ValueError(
                f'duplicate cell for subset {subset!r}: context_length={cell.context_length}, '
                f'depth_percent={cell.depth_percent}'
            )
        grid[key] = cell
    if not grid:
        raise ValueError(f'no cells for subset {subset!r}')
    depths = sorted({d for d, _ in grid})
    lengths = sorted({t for _, t in grid})
    return lengths, depths, grid


def format_cell_table(cells: Iterable[CellSummary], *, subset: str) -> str:
    """Plain-text grid: rows = depth %, columns = context length, values 0.00-1.00, '—' for empty cells."""
    cells = list(cells)
    lengths, depths, grid = cell_grid(cells, subset=subset)
    # Names as the terminal shows them, so that the columns line up (a control character is wider once shown).
    corner = terminal_text(f'depth % \\ {length_unit(subset_tokenizer(cells, subset=subset))}')
    header = [corner, *length_labels(lengths)]
    rows = [header]
    for depth in depths:
        row = [format_depth(depth)]
        for length in lengths:
            cell = grid.get((depth, length))
            row.append(EMPTY_CELL if cell is None or cell.accuracy is None else f'{cell.accuracy:.2f}')
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        '  '.join([row[0].ljust(widths[0]), *(value.rjust(w) for value, w in zip(row[1:], widths[1:], strict=True))])
        for row in rows
    ]
    return '\n'.join([f'subset: {terminal_text(subset)}', *lines])
