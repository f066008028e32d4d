"""OpenCompass NeedleBench / CDME summary CSVs: written per subset in the layout OpenCompass' CDME plotting script
(`tools/tools_needleinahaystack.py`) reads, and read back, ours or theirs, for `evalscope-niah plot --csv`.

That script reads a CSV with pandas, takes Length and Depth out of each `dataset` name, treats every column after
`dataset,version,metric,mode` as a model, and averages each model's scores per (Length, Depth) into one heatmap,
so a file must hold one subset (two subsets would be averaged together) and only numbers in the model column.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..atomic import atomic_write_text
from .labels import format_depth, length_labels
from .result_files import CELL_CSV_COLUMNS, csv_text, read_cells_csv
from .result_files import spreadsheet_unescape as unescape
from .stats import CellSummary

__all__ = ['read_summary_csv', 'write_opencompass_summary']

# OpenCompass' summarizer writes `dataset,version,metric,mode,<model>...` with scores in 0-100 ('-' = no result);
# newer NeedleBench summarizers drop the three middle columns.  Its dataset names pack the cell into a string,
# 'Length{tokens}Depth{percent}_{task}_{lang}_{size}' (e.g. 'Length16000Depth21_origin_en_200k'; old CDME configs:
# 'CDME_Length1000Depth0').  It is a foreign format, so parsing the name is the only way to read it.
CDME_META_COLUMNS: tuple[str, ...] = ('dataset', 'version', 'metric', 'mode')
# DOTALL: a subset name may hold any character; a newline in it must not hide the row.  Linear time: the lazy
# prefix only goes on where the literal 'Length' matches, and `rest` takes whatever is left.
_CDME_DATASET = re.compile(
    r'(?P<prefix>.*?)Length(?P<length>\d+)Depth(?P<depth>\d+(?:\.\d+)?)(?:_(?P<rest>.*))?', re.DOTALL
)
# The suite size OpenCompass appends ('4k', '128k', '1000k'); matched by value, so '1M' == '1000k' == '1000K'.
_DATASET_LENGTH = re.compile(r'(?P<value>\d+(?:\.\d+)?)(?P<unit>[kKmM])')
_CDME_MISSING = '-'  # OpenCompass' own 'no result'; we omit such rows instead (its script would average '-')
_CDME_VERSION = ''  # OpenCompass puts its dataset config hash here; we have none
_CDME_METRIC = 'score'  # NeedleBench's evaluators report 'score'
_CDME_MODE = 'gen'
_CDME_DEFAULT_SUBSET = 'default'  # for names with nothing but length and depth


def _dataset_length_tokens(tag: str) -> int:
    match = _DATASET_LENGTH.fullmatch(tag.strip())
    if match is None:
        raise ValueError(f'dataset_length must look like 4k, 200K or 1M, got {tag!r}')
    scale = 1_000_000 if match['unit'] in 'mM' else 1000
    return round(float(match['value']) * scale)


def _dataset_length_tag(tokens: int) -> str:
    """Suite size tag for our own files: the round label of the longest length, always with a k/M suffix."""
    label = length_labels([tokens])[0]
    return label if label.endswith(('k', 'M')) else f'{tokens / 1000:g}k'


# --------------------------------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------------------------------


def write_opencompass_summary(path: str | os.PathLike[str], cells: Iterable[CellSummary], *, model: str) -> Path:
    """Write one subset's cells as an OpenCompass NeedleBench summary CSV with one model column (atomically).

    Header `dataset,version,metric,mode,<model>`; one row per length x depth named 'Length{L}Depth{D}_{subset}_{size}',
    size being the longest length ('128k'); scores in 0-100 with two decimals.  A cell without a score has no row
    (OpenCompass' script then leaves that cell of its heatmap empty).  Depths keep their decimals ('Depth33.33'),
    unlike OpenCompass' integer depths, so distinct depths stay distinct; its script parses them as floats.
    ValueError when `model` is empty, the cells span several subsets, or two depths print alike.
    """
    if not model:
        raise ValueError('model must be a non-empty column name')
    cell_list = sorted(cells, key=lambda c: (c.subset, c.context_length, c.depth_percent))
    subsets = sorted({cell.subset for cell in cell_list})
    if len(subsets) > 1:
        raise ValueError(f'one subset per OpenCompass summary (its script averages all rows), got {subsets}')
    size = _dataset_length_tag(max((cell.context_length for cell in cell_list), default=1))
    rows: list[list[str]] = [[*CDME_META_COLUMNS, model]]
    seen: set[str] = set()
    for cell in cell_list:
        dataset = f'Length{cell.context_length}Depth{format_depth(cell.depth_percent)}_{cell.subset}_{size}'
        if dataset in seen:  # two depths equal at two decimals, or concatenated cells
            raise ValueError(f'two cells map to the same OpenCompass dataset name {dataset!r}')
        seen.add(dataset)
        if cell.accuracy is not None:
            rows.append([dataset, _CDME_VERSION, _CDME_METRIC, _CDME_MODE, f'{100.0 * cell.accuracy:.2f}'])
    return atomic_write_text(path, csv_text(rows))


# --------------------------------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _CdmeRow:
    line: int
    subset: str
    context_length: int
    depth_percent: float
    size: str | None  # the dataset-length tag, when the name has one
    values: tuple[str, ...]  # one per model column


def _cdme_row(line: int, match: re.Match[str], values: Sequence[str]) -> _CdmeRow:
    parts = (match['rest'] or '').split('_')
    size = parts.pop() if parts and _DATASET_LENGTH.fullmatch(parts[-1]) else None
    subset = '_'.join(parts) or match['prefix'].strip('_') or _CDME_DEFAULT_SUBSET
    return _CdmeRow(
        line=line,
        subset=subset,
        context_length=int(match['length']),
        depth_percent=float(match['depth']),
        size=size,
        values=tuple(value.strip() for value in values),
    )


def _cdme_score(path: str | os.PathLike[str], row: _CdmeRow, text: str) -> float | None:
    if text in (_CDME_MISSING, ''):
        return None
    try:
        score = float(text)
    except ValueError:
        raise ValueError(f'{path}:{row.line}: score must be a number or "-", got {text!r}') from None
    if not 0.0 <= score <= 100.0:  # also rejects NaN
        raise ValueError(f'{path}:{row.line}: OpenCompass scores are percentages in [0, 100], got {text!r}')
    return score / 100.0


def _parse_rows(
    path: str | os.PathLike[str], rows: Sequence[Sequence[str]], header: tuple[str, ...]
) -> tuple[tuple[str, ...], list[_CdmeRow]]:
    """Model names and the cell rows of an OpenCompass summary; other rows (group means, separators) are skipped."""
    if not header or header[0] != CDME_META_COLUMNS[0]:
        raise ValueError(
            f'{path}: neither our cells CSV nor an OpenCompass summary CSV (header {list(header)}, expected '
            f'{list(CELL_CSV_COLUMNS)} or dataset,version,metric,mode,<model>...)'
        )
    first_model = len(CDME_META_COLUMNS) if header[1 : len(CDME_META_COLUMNS)] == CDME_META_COLUMNS[1:] else 1
    models = tuple(unescape(name) for name in header[first_model:])
    if not models or len(set(models)) != len(models) or '' in models:
        raise ValueError(f'{path}: expected distinct, named model columns after {list(header[:first_model])}')
    parsed: list[_CdmeRow] = []
    for line, row in enumerate(rows[1:], start=2):
        match = _CDME_DATASET.fullmatch(row[0].strip()) if row else None
        if match is None:
            continue
        if len(row) != len(header):
            raise ValueError(f'{path}:{line}: expected {len(header)} fields, got {len(row)}')
        parsed.append(_cdme_row(line, match, row[first_model:]))
    if not parsed:
        raise ValueError(f'{path}: no NeedleBench cell rows (dataset names like Length1000Depth50_origin_en_4k)')
    return models, parsed


def _model_cells(path: str | os.PathLike[str], parsed: Sequence[_CdmeRow], column: int, *, model: str, present: str):
    """One model's cells, sorted; ValueError for a bad score or two scores for one cell."""
    cells: dict[tuple[str, int, float], CellSummary] = {}
    for row in parsed:
        score = _cdme_score(path, row, row.values[column])
        if score is None:
            continue
        key = (row.subset, row.context_length, row.depth_percent)
        if key in cells:
            raise ValueError(
                f'{path}:{row.line}: model {model!r} has two scores for subset {row.subset!r} at '
                f'context_length={row.context_length}, depth_percent={row.depth_percent:g}; dataset lengths '
                f'present: {present} (pick one with dataset_length)'
            )
        cells[key] = CellSummary.accuracy_only(row.subset, row.context_length, row.depth_percent, n=1, accuracy=score)
    return [cells[key] for key in sorted(cells)]


def read_summary_csv(
    path: str | os.PathLike[str], *, dataset_length: str | None = None
) -> dict[str, list[CellSummary]]:
    """Cells per model from our cells CSV (`outputs.CELLS_FILE`) or an OpenCompass NeedleBench/CDME summary CSV.

    Our cells CSV holds one model, named after its folder (reports/<model_id>/).  From an OpenCompass CSV (ours,
    per subset or the older all-subsets file, or OpenCompass' own) every column after `dataset` (and
    `version,metric,mode` when present) is a model; rows whose dataset name is not a 'Length{L}Depth{D}...' cell
    (group averages, separators, repeated headers) are skipped, as are '-' scores.  Scores become 0-1; each cell
    gets n=1 (the CSV holds means, not samples) and no CI.  The subset is what the name holds between the depth
    and the size suffix ('origin_en' in 'Length1000Depth0_origin_en_4k').  `dataset_length` ('200K', '128k',
    '1M'; matched by value) keeps only datasets of that size suffix.  ValueError for an unknown layout, a bad
    score, a size not present (listing those present), or two scores for one cell of a model (e.g. overlapping
    128k and 200k suites: pick one with `dataset_length`).
    """
    wanted = None if dataset_length is None else _dataset_length_tokens(dataset_length)
    with open(path, encoding='utf-8-sig', newline='') as handle:  # -sig: spreadsheet exports often add a BOM
        rows = list(csv.reader(handle))
    header = tuple(name.strip() for name in rows[0]) if rows else ()
    if header[: len(CELL_CSV_COLUMNS)] == CELL_CSV_COLUMNS:  # our cells CSV, with its task-value columns
        if dataset_length is not None:
            raise ValueError(
                f'{path}: dataset_length {dataset_length!r} not found; dataset lengths present: none '
                '(our cells CSV has no OpenCompass dataset lengths)'
            )
        return {Path(path).resolve().parent.name: read_cells_csv(path)}
    models, parsed = _parse_rows(path, rows, header)
    sizes = sorted({r.size for r in parsed if r.size is not None}, key=_dataset_length_tokens)
    present = ', '.join(sizes) or 'none'
    if wanted is not None:
        parsed = [r for r in parsed if r.size is not None and _dataset_length_tokens(r.size) == wanted]
        if not parsed:
            raise ValueError(f'{path}: dataset_length {dataset_length!r} not found; dataset lengths present: {present}')
    out: dict[str, list[CellSummary]] = {}
    for column, model in enumerate(models):
        cells = _model_cells(path, parsed, column, model=model, present=present)
        if cells:
            out[model] = cells
    if not out:
        raise ValueError(f'{path}: no model has a score in any NeedleBench cell row')
    return out
