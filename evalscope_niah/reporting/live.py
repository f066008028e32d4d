"""A sweep you can watch: while a run goes, each subset's HTML heatmap is rewritten as samples finish (pending cells
marked, the page re-reads its data file by itself), the console gets progress lines, and a progress file lets
`evalscope-niah plot` draw a running work dir.

The plan is every sample the run will send, known up front; a finished sample (scored or errored) is matched to its
cell. Writes are throttled (at most every `WRITE_INTERVAL_S`, and when the last planned sample finishes) so pages do
not slow a run; every file is written atomically, so a reader never sees half of one.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..atomic import atomic_write_text
from ..disk_space import disk_full_error
from ..errors import NiahConfigError
from ..escaping import inert_logger, json_text
from ..safe_files import read_bounded, regular_file
from .heatmap_live import LiveCell, LivePage, RunStatus, write_live_heatmap
from .labels import file_name_part, format_tokens, tokenizer_display_name
from .length_status import EffectiveBound
from .outputs import OUTPUT_PREFIXES, OutputFiles
from .page_text import EN, PageText, page_text, subset_language
from .result_files import check_drawable
from .sample_record import SampleResult, checked_cell
from .stats import CellSummary, effective_context_length, samples_by_cell, summarize_cells

__all__ = [
    'WRITE_INTERVAL_S',
    'LiveRun',
    'PlannedSample',
    'RunProgress',
    'draw_progress',
    'draw_unfinished',
    'find_unfinished_runs',
    'live_data_file',
    'read_progress',
]

logger = inert_logger(__name__)

# Pages and the progress file are rewritten at most this often (and when the last sample finishes).
WRITE_INTERVAL_S = 5.0
# The console gets a progress line at most this often (and at the start and the end).
LOG_INTERVAL_S = 30.0
# Version of the progress file's layout: a reader refuses another.
_PROGRESS_FORMAT = 1
# Largest progress file read. A run of 100,000 cells (the most a heatmap draws) with a short answer each writes
# about 60 MB; a file of 1,001 x 100 cells with long answers (581 MB) took a minute and gigabytes to parse.
MAX_PROGRESS_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class PlannedSample:
    """One sample the run plans to send: its cell (a control has no depth) and its prompt's length in tokens.

    Each field's comment is its meaning on the docs' results-files page, which is generated from them."""

    subset: str  # the subset of the sample
    context_length: int  # its cell's length, in the run's tokenizer's tokens
    depth_percent: float | None  # its cell's needle depth, 0-100; None for a control sample
    tokens: int  # its prompt's length in tokens, for the 'prompt tokens sent' count
    tokenizer: str | None = None  # the tokenizer that counted both lengths; empty in progress files from before

    def to_dict(self) -> dict[str, Any]:
        return {
            'subset': self.subset,
            'context_length': self.context_length,
            'depth_percent': self.depth_percent,
            'tokens': self.tokens,
            'tokenizer': self.tokenizer,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PlannedSample:
        # The results rows' checks: NaN, a length of 10**300 or a bool is refused, not drawn as a row.
        length, depth = checked_cell(data['context_length'], data['depth_percent'])
        tokens = data['tokens']
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise ValueError(f'tokens must be an int of at least 0, got {tokens!r}')
        return cls(
            subset=str(data['subset']),
            context_length=length,
            depth_percent=depth,
            tokens=tokens,
            tokenizer=None if data.get('tokenizer') is None else str(data['tokenizer']),
        )


@dataclass(frozen=True)
class RunProgress:
    """A run's plan and what has finished of it: what the live pages, the progress lines and `plot` show."""

    planned: tuple[PlannedSample, ...]
    results: tuple[SampleResult, ...]
    status: RunStatus

    def line(self, *, name: str = 'needle_haystack', text: PageText = EN) -> str:
        """'needle_haystack: 12/40 cells done · 30/100 samples · 1.2M/4M prompt tokens sent (Qwen3) · 2 errors': the
        tokenizer that counted the tokens named, as every length we show names it."""
        cells, cells_done = self.cell_counts()
        finished = Counter(_cell_of(result) for result in self.results)
        tokens_planned = sum(sample.tokens for sample in self.planned)
        tokens_sent = sum(_sample_tokens(self.planned, finished))
        errors = sum(1 for result in self.results if result.error is not None)
        sent, planned = format_tokens(tokens_sent), format_tokens(tokens_planned)
        parts = [
            text.progress_cells.format(done=cells_done, total=len(cells)),
            text.progress_samples.format(done=len(self.results), total=len(self.planned)),
            text.progress_tokens.format(sent=sent, planned=planned, by=self._counted_by()),
            *([text.progress_errors.format(n=errors)] if errors else []),
        ]
        return f'{name} ({text.progress_states[self.status]}): ' + ' · '.join(parts)

    def _counted_by(self) -> str:
        names = dict.fromkeys(tokenizer_display_name(sample.tokenizer) for sample in self.planned)
        return f' ({"/".join(names)})' if names and None not in names else ''

    def cell_counts(self) -> tuple[Counter, int]:
        """Samples planned per needle cell (subset, length, depth), and how many cells have all theirs finished."""
        planned = Counter(_cell_of(sample) for sample in self.planned if sample.depth_percent is not None)
        finished = Counter(_cell_of(result) for result in self.results if result.depth_percent is not None)
        return planned, sum(1 for cell, n in planned.items() if finished[cell] >= n)

    def live_cells(self, subset: str) -> dict[tuple[int, float], LiveCell]:
        """(context_length, depth_percent) -> LiveCell for every planned needle cell of one subset. Once the run is
        complete nothing is pending: what it did not send (an adaptive sweep's choice) was not tested."""
        planned, _ = self.cell_counts()
        finished = Counter(_cell_of(result) for result in self.results)
        complete = self.status == 'complete'
        cells = {}
        for (name, length, depth), n in planned.items():
            if name == subset:
                done = finished[(name, length, depth)]
                # A complete run's cell holds what it sent: all of that is finished.
                cells[(length, depth)] = LiveCell(
                    planned=done if complete else n, finished=done, untested=complete and not done
                )
        return cells

    def tokenizer(self, subset: str) -> str | None:
        """The tokenizer that counted `subset`'s planned lengths (None in progress files from before it was kept)."""
        return next((sample.tokenizer for sample in self.planned if sample.subset == subset and sample.tokenizer), None)

    def subsets(self) -> list[str]:
        return sorted({sample.subset for sample in self.planned if sample.depth_percent is not None})

    def to_dict(self) -> dict[str, Any]:
        return {
            'format': _PROGRESS_FORMAT,  # the layout's version: a reader refuses another
            'status': self.status,  # 'running', 'complete' or 'stopped'
            'planned': [sample.to_dict() for sample in self.planned],  # one object per planned sample
            'results': [result.to_dict() for result in self.results],  # the samples finished so far, as results rows
        }


def _cell_of(item: PlannedSample | SampleResult) -> tuple[str, int, float | None]:
    return item.subset, item.context_length, item.depth_percent


def _sample_tokens(planned: Iterable[PlannedSample], finished: Counter) -> Iterable[int]:
    """The planned tokens of the finished samples (as many of each cell's samples as have finished)."""
    left = Counter(finished)
    for sample in planned:
        cell = _cell_of(sample)
        if left[cell] > 0:
            left[cell] -= 1
            yield sample.tokens


def read_progress(path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None) -> RunProgress:
    """A progress file as `LiveRun` writes it; ValueError naming the file when it is not one. It is read as corpus
    files are: a regular file (a FIFO would hang plot), inside ``root`` when given (no symlink pointing out), at most
    MAX_PROGRESS_BYTES; each planned sample and result is checked as a results row is."""
    try:
        where = f'progress file {str(path)!r}'
        checked = regular_file(
            Path(path), param='progress file', where=where, root=None if root is None else Path(root)
        )
        data = json.loads(read_bounded(checked, limit=MAX_PROGRESS_BYTES, param='progress file', where=where))
        if not isinstance(data, dict):
            raise ValueError('expected a JSON object')
        if data.get('format') != _PROGRESS_FORMAT or data.get('status') not in ('running', 'complete', 'stopped'):
            raise ValueError(f'not a progress file of format {_PROGRESS_FORMAT}')
        return RunProgress(
            planned=tuple(PlannedSample.from_dict(item) for item in data['planned']),
            results=tuple(SampleResult.from_dict(item) for item in data['results']),
            status=data['status'],
        )
    except NiahConfigError as exc:
        raise ValueError(exc.detail) from None
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise ValueError(f'{path}: {str(exc)[:300]}') from None


def live_data_file(heatmap_html: str) -> str:
    """The data file a live page re-reads, by the page's file name: 'x_heatmap_en.html' -> 'x_heatmap_en.live.js'."""
    return heatmap_html.removesuffix('.html') + '.live.js'


def draw_progress(
    report_dir: str | os.PathLike[str],
    progress: RunProgress,
    *,
    prefix: str,
    live: bool,
    page: bool = True,
    title: str | None = None,
    effective: Mapping[str, EffectiveBound] | None = None,
    languages: Mapping[str, str] | None = None,
) -> list[Path]:
    """Each subset's page of a running (or stopped) run in `report_dir`: `live` ones re-read their data file.
    ``effective`` (a complete run's, per subset) is stated under the title as the final page states it;
    ``languages`` (subset -> 'en' / 'zh') as `plotting.plot_all` takes it: the language of each page's words."""
    results = [result for result in progress.results if not result.control]
    cells, answers = summarize_cells(results), samples_by_cell(results)
    now, run_name = _now(), prefix.removesuffix('_heatmap')
    paths = []
    for subset in progress.subsets():
        name = f'{prefix}_{file_name_part(subset)}.html'
        language = subset_language(subset, languages)
        text = page_text(language)
        line = f'{progress.line(name=run_name, text=text)} · {text.progress_updated.format(time=now)}'
        state = LivePage(
            cells=progress.live_cells(subset),
            status=progress.status,
            line=line,
            data_src=live_data_file(name) if live else None,
            tokenizer=progress.tokenizer(subset),
            effective=(effective or {}).get(subset),
        )
        paths.append(
            write_live_heatmap(
                cells,
                subset=subset,
                path=Path(report_dir) / name,
                live=state,
                answers=answers,
                title=title,
                page=page,
                language=language,
            )
        )
    return paths


def _pending_cells(progress: RunProgress, subset: str) -> list[CellSummary]:
    """Empty cells (n=0) for the planned cells of `subset` with nothing finished: the PNG draws them grey."""
    return [
        CellSummary(subset, length, depth, 0, None, None, None, 0, 0, None, None, tokenizer=progress.tokenizer(subset))
        for (length, depth), cell in progress.live_cells(subset).items()
        if cell.state == 'pending'
    ]


def find_unfinished_runs(root: str | os.PathLike[str]) -> list[Path]:
    """Every progress file (any prefix) under `root` of a run that is still going or stopped, sorted by path;
    a file that cannot be read counts (`draw_unfinished` then names the problem)."""
    root = Path(root)
    if not root.is_dir():
        return []
    names = {OutputFiles(prefix).progress for prefix in OUTPUT_PREFIXES}
    found = []
    for path in sorted(path for path in root.rglob('*.json') if path.name in names):
        try:
            finished = read_progress(path, root=root).status == 'complete'
        except ValueError:
            finished = False
        if not finished:
            found.append(path)
    return found


def draw_unfinished(
    progress_file: str | os.PathLike[str], *, show_score: bool = False, root: str | os.PathLike[str] | None = None
) -> list[Path]:
    """`evalscope-niah plot` of a run still going: each subset's PNG (pending cells grey, noted in the title) and
    a page that shows pending cells as such and does not refresh. ValueError when the file is not a progress file."""
    from .plotting import plot_heatmap_png  # matplotlib only when drawing
    from .png_fonts import png_language

    path = Path(progress_file)
    files = next(OutputFiles(prefix) for prefix in OUTPUT_PREFIXES if OutputFiles(prefix).progress == path.name)
    progress = read_progress(path, root=root)  # root: the work dir plot was given, which the file must not leave
    # The results file's bounds: a grid no heatmap draws is refused before anything is drawn.
    check_drawable(path, (_cell_of(item) for item in (*progress.planned, *progress.results)))
    results = [result for result in progress.results if not result.control]
    cells = summarize_cells(results)
    planned, done = progress.cell_counts()
    written = []
    for subset in progress.subsets():
        png = path.parent / f'{files.heatmap_prefix}_{file_name_part(subset)}.png'
        subset_cells = [cell for cell in cells if cell.subset == subset] + _pending_cells(progress, subset)
        language = png_language(subset_language(subset))  # the note in the words the PNG can draw
        text = page_text(language)
        state = text.progress_states[progress.status]
        note = text.unfinished_note.format(status=progress.status, state=state, done=done, total=len(planned))
        written.append(
            plot_heatmap_png(
                subset_cells, subset=subset, path=png, show_score=show_score, scoring_note=note, language=language
            )
        )
    written += draw_progress(path.parent, progress, prefix=files.heatmap_prefix, live=False)
    return written


class LiveRun:
    """Follows one run: `add` each finished sample (any thread), `update` after each (the run's main thread: writes
    when due), `finish` once at the end. Files go to `report_dir`, named by `files`."""

    def __init__(
        self,
        report_dir: str | os.PathLike[str],
        planned: Sequence[PlannedSample],
        *,
        files: OutputFiles,
        clock: Callable[[], float] = time.monotonic,
        languages: Mapping[str, str] | None = None,
    ) -> None:
        self._dir = Path(report_dir)
        self._languages = dict(languages or {})  # subset -> 'en' / 'zh': the language of its page's words
        self._planned = tuple(planned)
        self._files = files
        self._clock = clock
        self._results: list[SampleResult] = []
        self._lock = threading.Lock()
        self._written_at: float | None = None
        self._logged_at: float | None = None
        self._finished = False

    def add(self, result: SampleResult) -> None:
        with self._lock:
            self._results.append(result)

    def progress(self, status: RunStatus = 'running') -> RunProgress:
        with self._lock:
            return RunProgress(planned=self._planned, results=tuple(self._results), status=status)

    def update(self) -> None:
        """Write pages and the progress file when `WRITE_INTERVAL_S` has passed or every planned sample finished."""
        now = self._clock()
        progress = self.progress()
        all_done = len(progress.results) >= len(self._planned)
        if self._written_at is None or all_done or now - self._written_at >= WRITE_INTERVAL_S:
            self._write(progress, page=True)
            self._written_at = now
        if self._logged_at is None or now - self._logged_at >= LOG_INTERVAL_S:
            logger.info('%s', progress.line(name=self._files.prefix))
            self._logged_at = now

    def finish(self, *, complete: bool, threshold: float | None = None, mode: str = 'absolute') -> None:
        """The run ended (`complete`) or stopped: the data and progress files say so, and open pages stop
        re-reading. The pages themselves are left to the final outputs (`write_run_outputs`); a page left open ends
        as they do: the cells never sent shown as not tested, its title current, and (given the run's ``threshold``
        and ``mode``) the effective length, a bound worded as one."""
        if self._finished:
            return
        self._finished = True
        progress = self.progress('complete' if complete else 'stopped')
        effective = _effective_bounds(progress, threshold, mode) if complete and threshold is not None else None
        try:
            self._write(progress, page=not complete, effective=effective)
        except Exception as exc:  # a full disk: the run is over either way, and says so through its own error
            logger.warning('%s: the live pages could not be marked %s: %s', self._files.prefix, progress.status, exc)
        logger.info('%s', progress.line(name=self._files.prefix))

    def _write(
        self, progress: RunProgress, *, page: bool, effective: Mapping[str, EffectiveBound] | None = None
    ) -> None:
        try:
            atomic_write_text(self._dir / self._files.progress, json_text(progress.to_dict()))
            prefix = self._files.heatmap_prefix
            draw_progress(
                self._dir,
                progress,
                prefix=prefix,
                live=True,
                page=page,
                effective=effective,
                languages=self._languages,
            )
        except Exception as exc:  # a page that cannot be drawn must not stop the run; the final outputs come anyway
            if disk_full_error(exc) is not None:  # not a drawing problem: the run ends with one line (disk_space.py)
                raise
            logger.exception('%s: writing the live heatmap pages failed', self._files.prefix)


def _effective_bounds(progress: RunProgress, threshold: float, mode: str) -> dict[str, EffectiveBound]:
    needles = [result for result in progress.results if not result.control]
    return {
        subset: effective_context_length(needles, subset=subset, threshold=threshold, mode=mode).bound
        for subset in sorted({result.subset for result in needles})
    }


def _now() -> str:
    return datetime.now(timezone.utc).strftime('%H:%M:%S UTC')
