"""The adaptive sweep's plan file: the full grid it chose from, what each round sent, and why it stopped.

Results files hold only what was measured: a cell the sweep did not send has no row, anywhere. This file is how a
reader (the heatmaps here, a live page, a person) tells 'not tested' from 'not in the grid'. Written beside the
results as ``<name>_sweep_plan.json`` (``outputs.OutputFiles.sweep_plan``)::

    {"format": 1, "sweep": "adaptive",
     "settings": {"threshold": 0.85, "mode": "absolute", "confidence": 0.95, "budget_prompts": null,
                  "budget_tokens": null, "seed": 0},
     "subsets": {"<subset>": {
         "context_lengths": [...], "depth_percents": [...],          # the full grid's axes
         "grid_prompts": 300, "grid_tokens": 16500000,                # what the full grid would send
         "sent_prompts": 40, "sent_tokens": 1800000,                  # what the sweep sent (cached ones included;
                                                                      # a sample asked again after an error, again)
         "stop": "pinned" | "errors" | "budget" | "exhausted",
         "rounds": [[[length, depth, samples], ...], ...],            # cells of each round, in round order
         "cells": [{"context_length": ..., "depth_percent": ..., "planned": 3, "sent": 1}, ...]}}}

``sent`` 0 marks a cell not tested. ``stop``: ``pinned``, the first length that fails was found (or every length
passes); ``errors``, server errors left a length undecided, so the effective length is only bounded below by the
length under it; ``budget``, the next samples would pass the budget; ``exhausted``, nothing left to send. The file is
rewritten after every round, so a run cut short leaves the rounds it finished.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

from ..atomic import atomic_write_text
from ..errors import NiahConfigError
from ..escaping import json_text
from ..making.adaptive_plan import StopReason
from ..safe_files import read_bounded

__all__ = [
    'PLAN_FORMAT',
    'UNTESTED_KIND',
    'planned_axes',
    'read_sweep_plan',
    'subset_plan',
    'untested_cells',
    'untested_lengths',
    'write_sweep_plan',
]

PLAN_FORMAT = 1
# A plan file past this is no plan this package wrote (the largest grid allowed plans a few MB): refused unread.
MAX_PLAN_BYTES = 64 * 1024 * 1024
_STOPS = (None, *get_args(StopReason))  # None: the sweep had not stopped when the file was written
# Why a length the sweep did not send is unknown, as a reader counts it (one, many): page_text has the words.
UNTESTED_KIND = ('sample not tested', 'samples not tested')

Cell = tuple[int, float]  # (context_length, depth_percent)


def subset_plan(planned: Sequence[Cell], rounds: Sequence[Sequence[Cell]], *, stop: str | None) -> dict[str, Any]:
    """One subset's entry: ``planned`` has one (length, depth) per sample of the full grid, ``rounds`` one per sample
    sent, round by round."""
    planned_count = Counter(planned)
    sent_count = Counter(cell for sent in rounds for cell in sent)
    # Each key's comment is its meaning on the docs' results-files page, which is generated from them.
    return {
        'context_lengths': sorted({length for length, _ in planned}),  # the full grid's lengths
        'depth_percents': sorted({depth for _, depth in planned}),  # the full grid's depths
        'grid_prompts': len(planned),  # prompts the full grid would send
        'grid_tokens': sum(length for length, _ in planned),  # prompt tokens the full grid would send
        'sent_prompts': sum(sent_count.values()),  # prompts the sweep sent (cached ones included)
        'sent_tokens': sum(length * count for (length, _), count in sent_count.items()),  # prompt tokens it sent
        'stop': stop,  # why it stopped: 'pinned', 'budget' or 'exhausted'; null while it goes
        # each round's cells in round order, as [context_length, depth_percent, samples]
        'rounds': [
            [[length, depth, count] for (length, depth), count in sorted(Counter(sent).items())] for sent in rounds
        ],
        'cells': [  # every cell of the full grid
            {
                'context_length': length,  # the cell's length
                'depth_percent': depth,  # the cell's depth
                'planned': count,  # samples the full grid plans for it
                'sent': sent_count.get((length, depth), 0),  # samples the sweep sent: 0 marks a cell not tested
            }
            for (length, depth), count in sorted(planned_count.items())
        ],
    }


def write_sweep_plan(
    path: str | os.PathLike[str], subsets: Mapping[str, Mapping[str, Any]], *, settings: Mapping[str, Any]
) -> Path:
    payload = {
        'format': PLAN_FORMAT,  # the layout's version
        'sweep': 'adaptive',  # the sweep that wrote it
        'settings': dict(settings),  # the sweep's settings as the run had them (threshold, mode, budgets, seed, ...)
        'subsets': dict(subsets),  # per subset, its plan (subset_plan)
    }
    return atomic_write_text(path, json_text(payload, indent=2) + '\n')


def untested_cells(entry: Mapping[str, Any]) -> list[Cell]:
    """The (length, depth) cells of a subset's entry that no round sent."""
    return [(cell['context_length'], cell['depth_percent']) for cell in entry['cells'] if not cell['sent']]


def untested_lengths(entry: Mapping[str, Any]) -> dict[int, str]:
    """The lengths of a subset's entry that no round sent, each with why it is unknown ('6 samples not tested'): the
    effective length cannot pass one (``result_files.subset_effective``)."""
    sent = {cell['context_length'] for cell in entry['cells'] if cell['sent']}
    planned = Counter()
    for cell in entry['cells']:
        planned[cell['context_length']] += cell['planned']
    one, many = UNTESTED_KIND
    return {
        length: f'{planned[length]} {one if planned[length] == 1 else many}'
        for length in entry['context_lengths']
        if length not in sent
    }


def planned_axes(entry: Mapping[str, Any]) -> tuple[list[int], list[float]]:
    return list(entry['context_lengths']), list(entry['depth_percents'])


def read_sweep_plan(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The subsets' entries of a file written by ``write_sweep_plan``; ValueError when it is not one. The file may
    have been edited by anyone: it is read bounded and checked whole, never half used."""
    try:
        raw = read_bounded(Path(path), limit=MAX_PLAN_BYTES, param='sweep plan', where=str(path))
        data = json.loads(raw)
        if not isinstance(data, dict) or data.get('format') != PLAN_FORMAT or not isinstance(data['subsets'], dict):
            raise ValueError(f'not a sweep plan of format {PLAN_FORMAT}')
        return {str(subset): _checked_entry(entry) for subset, entry in data['subsets'].items()}
    # JSONDecodeError is a ValueError; RecursionError: a hostile file nested thousands deep.
    except (NiahConfigError, KeyError, TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f'{path}: not a needle_haystack sweep plan: {type(exc).__name__}: {exc}') from None


def _checked_entry(entry: Any) -> dict[str, Any]:
    lengths, depths, cells = entry['context_lengths'], entry['depth_percents'], entry['cells']
    if not all(_is_int(length) for length in lengths) or not all(_is_number(depth) for depth in depths):
        raise ValueError('context_lengths must be integers and depth_percents numbers')
    on_axes = set(lengths), set(depths)
    for cell in cells:
        if cell['context_length'] not in on_axes[0] or cell['depth_percent'] not in on_axes[1]:
            raise ValueError('a cell lies outside the axes of its plan')
        if not all(_is_int(cell[count]) and cell[count] >= 0 for count in ('planned', 'sent')):
            raise ValueError('planned and sent must be counts')
    if entry['stop'] not in _STOPS:
        raise ValueError(f'stop must be one of {list(_STOPS)}')
    return {
        'context_lengths': list(lengths),
        'depth_percents': list(depths),
        'cells': list(cells),
        'stop': entry['stop'],
    }


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value  # NaN is no depth
