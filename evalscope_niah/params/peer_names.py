"""Other tools' names in their own tools' meaning, resolved once before anything is validated.

Each tool is a ``Dialect``: the names only it uses (their presence says whose config this is) and how it expands
them into ours. A config in two tools' names is refused, naming both, since the same name can mean different
grids: inspect_evals' ``n_contexts=1`` is one length at ``max_context``, EvalScope's ``context_lengths_num_intervals
=1`` one at the minimum. EvalScope's built-in names are ours; Kamradt's tester shares most of them and is told apart
by the names only it uses (``params/kamradt_names.py``); RULER's niah arguments choose its task
(``params/ruler_names.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import NiahConfigError
from . import inspect_names, kamradt_names, ruler_names


@dataclass(frozen=True)
class Dialect:
    tool: str
    owns: tuple[str, ...]  # names only this tool uses
    expand: Callable[[dict[str, Any]], dict[str, Any]]
    # This tool's grid names, and ours (EvalScope's) that they would contradict: refused side by side.
    grid: tuple[str, ...] = ()
    clashes: tuple[str, ...] = ()
    # Values that say nothing about whose config it is (EvalScope hands every default along).
    neutral: Mapping[str, Any] = field(default_factory=dict)


def _unchanged(values: dict[str, Any]) -> dict[str, Any]:
    return values


OUR_GRID_NAMES = (
    'context_lengths_min',
    'context_lengths_max',
    'context_lengths_num_intervals',
    'context_lengths',
    'document_depth_percent_min',
    'document_depth_percent_max',
    'document_depth_percent_intervals',
    'document_depth_percents',
    'document_depth_percent_interval_type',
)

DIALECTS = (
    Dialect(
        inspect_names.TOOL,
        (*inspect_names.GRID_NAMES, *inspect_names.BANK_NAMES),
        inspect_names.expand,
        grid=inspect_names.GRID_NAMES,
        clashes=OUR_GRID_NAMES,
        neutral=inspect_names.BANK_DEFAULTS,
    ),
    Dialect(kamradt_names.TOOL, kamradt_names.OWNS, kamradt_names.expand),
    # RULER's niah arguments: they make the config RULER's (task ruler_niah with RULER's defaults).
    Dialect(ruler_names.TOOL, ruler_names.OWNS, ruler_names.expand),
    # CDME's one-to-one names are resolved by params/aliases.py; listed here so a mix with another tool is refused.
    Dialect("OpenCompass' CDME", ('num_repeats_per_file', 'tokenizer_model', 'length', 'depth'), _unchanged),
)


def resolve(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with one tool's names expanded in that tool's meaning; a mix of tools refused."""
    values = dict(values)
    used = [(d, [n for n in d.owns if values.get(n) not in (None, d.neutral.get(n))]) for d in DIALECTS]
    used = [(dialect, names) for dialect, names in used if names]
    if len(used) > 1:
        (first, first_names), (second, second_names) = used[:2]
        raise NiahConfigError(
            first_names[0],
            f'mixes {first.tool} names ({", ".join(first_names)}) with {second.tool} names '
            f'({", ".join(second_names)}); each tool reads its names its own way (a grid, a needle, a sample), so '
            'write the config in one tool\'s names (docs: "Coming from other tools")',
        )
    if not used:
        return values
    dialect, names = used[0]
    grid_names = [name for name in names if name in dialect.grid]
    ours = [name for name in dialect.clashes if values.get(name) is not None]
    if ours and grid_names:
        raise NiahConfigError(
            grid_names[0],
            f"mixes {dialect.tool} names ({', '.join(grid_names)}) with EvalScope's ({', '.join(ours)}); "
            f"{dialect.tool} spaces its grid differently, so give the grid in one tool's names",
        )
    return dialect.expand(values)
