"""The page of a run still going: every planned cell drawn in its state (a score, pending, or not tested), the
answers of the finished ones on click, and a script that re-reads the page's data file until the run ends.

The data is text, colours and attributes only: the script sets them and builds the answer panels with textContent,
so nothing in the data (model answers included) is ever parsed as HTML; the embedded JSON is escaped for <script>
(`script_json`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..atomic import atomic_write_text
from ..escaping import script_json, shown_text
from .heatmap_html import (
    _ANSWERS_CSS,
    _ANSWERS_JS,
    _FIELD_SEP,
    _MAX_SAMPLES_PER_CELL,
    PageParts,
    _color,
    _esc,
    _hover_fields,
    _sample_meta,
    _score,
    answer_heading,
    plot_heatmap_html,
)
from .heatmap_style import EMPTY_COLOR, effective_mark, title_parts
from .labels import EMPTY_CELL, cell_grid, length_labels, length_unit, subset_tokenizer
from .length_status import EffectiveBound
from .page_text import EN, PageText, page_text
from .stats import CellKey, CellSummary

if TYPE_CHECKING:
    from .sample_record import SampleResult

__all__ = ['LiveCell', 'LivePage', 'RunStatus', 'write_live_heatmap']


# A cell's state on a live page: scored (all or some of its samples finished), waiting for its samples, or left
# out by the sweep (an adaptive sweep decides not to test it).
CellState = Literal['done', 'pending', 'untested']
PENDING_CELL = '…'
UNTESTED_CELL = '×'
_PENDING_BACKGROUND = 'repeating-linear-gradient(135deg,#e6e6e6 0 4px,#fafafa 4px 8px)'
_UNTESTED_BACKGROUND = '#ffffff'
# Run status the data file reports; the page re-reads the data only while it is 'running'.
RunStatus = Literal['running', 'complete', 'stopped']
# How often an open page re-reads its data file (the run rewrites it at most every few seconds).
_RELOAD_MS = 2000


@dataclass(frozen=True)
class LiveCell:
    """One planned cell of a live page: how many samples the run plans for it and how many have finished."""

    planned: int
    finished: int = 0
    untested: bool = False

    @property
    def state(self) -> CellState:
        if self.untested:
            return 'untested'
        return 'done' if self.finished else 'pending'


@dataclass(frozen=True)
class LivePage:
    """What a page drawn while its run goes knows beyond the finished cells.

    `cells` maps (context_length, depth_percent) -> `LiveCell` for every cell of the subset's plan; `status` and
    `line` (the progress line) are shown above the table; `data_src` is the sibling data file (`live_data_js`) the
    page re-reads while the run is 'running' (None: a snapshot, as `evalscope-niah plot` draws a running work dir).
    `effective` (once the run is complete) is stated under the title as the final page states it, so a page left
    open ends where the final page ends.
    """

    cells: Mapping[tuple[int, float], LiveCell]
    status: RunStatus
    line: str
    data_src: str | None = None
    # The tokenizer that counted the plan's lengths (its planned samples'): the axis names it before any cell is done.
    tokenizer: str | None = None
    effective: EffectiveBound | None = None


_LIVE_CSS = """\
#live{margin:0 0 10px;font-weight:600}
td.p{color:#777}
td.nt{color:#999;outline:1px dashed #bbb;outline-offset:-3px}
td.pt{font-style:italic}
"""

# Applies the data (cells, answers, progress line) to the page: text, colours and attributes only, and answer
# panels built with textContent, so nothing in the data is ever parsed as HTML. While the run goes, re-reads the
# data file with a fresh <script src> (fetch() of file:// is blocked in Chromium; a script element is not).
_LIVE_JS = """\
(function(){
var O=%s,g=document.getElementById('grid'),st=document.getElementById('live'),box=document.getElementById('answers');
var tds=Object.create(null),timer=null;
Array.prototype.forEach.call(g.querySelectorAll('td[data-c]'),function(td){tds[td.getAttribute('data-c')]=td;});
function el(tag,cls,text){var e=document.createElement(tag);if(cls)e.className=cls;if(text!=null)e.textContent=text;
return e;}
function panel(k,c){
var p=document.getElementById('ans-'+k);
if(!p){p=el('section','ans');p.id='ans-'+k;p.hidden=true;box.appendChild(p);}
var kids=[el('h2',null,c.hd)];
c.a.forEach(function(s){var d=el('div','smp');d.appendChild(el('p','meta',s[0]));d.appendChild(el('pre',null,s[1]));
if(s[2]){var x=el('details');x.appendChild(el('summary',null,O.reasoning));x.appendChild(el('pre',null,s[2]));
d.appendChild(x);}kids.push(d);});
if(c.m)kids.push(el('p','meta',c.m));
p.replaceChildren.apply(p,kids);
}
function apply(d){
document.title=d.doc;document.querySelector('h1').textContent=d.head;document.querySelector('p.sub').textContent=d.sub;
Object.keys(d.cells).forEach(function(k){
var c=d.cells[k],td=tds[k];if(!td)return;
td.textContent=c.t;td.className=c.c;td.style.background=c.bg;td.setAttribute('data-h',c.h);
if(c.a.length){td.setAttribute('data-a',k);panel(k,c);}else td.removeAttribute('data-a');
});
st.textContent=d.line;
var nt=document.getElementById('ntl');if(nt)nt.hidden=!g.querySelector('td.nt');
if(d.status!=='running'&&timer!==null){clearInterval(timer);timer=null;}
}
function reload(){var s=document.createElement('script');s.src=O.src+'?t='+Date.now();
s.onload=s.onerror=function(){s.remove();};document.head.appendChild(s);}
window.niahLive=apply;
apply(O.data);
if(O.src&&O.data.status==='running')timer=setInterval(reload,O.every);
})();
"""


def _cell_key(row: int, col: int) -> str:
    return f'{row}-{col}'


def _live_hover(length: int, depth: float, cell: CellSummary | None, live: LiveCell, text: PageText = EN) -> str:
    fields = _hover_fields(length, depth, cell, text)
    if live.state == 'untested':
        fields[2] = text.not_tested
    elif live.finished < live.planned:
        state = fields[2] if live.finished else text.pending
        fields[2] = text.pending_hover.format(state=state, finished=live.finished, planned=live.planned)
    return _FIELD_SEP.join(fields)


def _live_look(cell: CellSummary | None, live: LiveCell) -> tuple[str, str, str]:
    """(text, CSS class, background) of a cell in its state."""
    if live.state == 'untested':
        return UNTESTED_CELL, 'nt', _UNTESTED_BACKGROUND
    score = _score(cell)
    if live.state == 'pending':
        return PENDING_CELL, 'p', _PENDING_BACKGROUND
    partial = ' pt' if live.finished < live.planned else ''
    if score is None:
        return EMPTY_CELL, 'e' + partial, EMPTY_COLOR
    return f'{score:.2f}', partial.strip(), _color(score)


def _live_cells(
    subset: str,
    live: LivePage,
    lengths: Sequence[int],
    depths: Sequence[float],
    grid: Mapping[tuple[float, int], CellSummary],
    answers: Mapping[CellKey, Sequence[SampleResult]],
    *,
    unit: str,
    text: PageText,
) -> dict[tuple[float, int], dict[str, Any]]:
    """The data of every cell of the table, keyed by (depth, length): what `_live_td` draws and the script applies."""
    labels = dict(zip(lengths, length_labels(lengths), strict=True))
    data: dict[tuple[float, int], dict[str, Any]] = {}
    for row, depth in enumerate(depths):
        for col, length in enumerate(lengths):
            cell, state = grid.get((depth, length)), live.cells.get((length, depth), LiveCell(0, untested=True))
            cell_text, css_class, background = _live_look(cell, state)
            samples = list(answers.get((subset, length, depth), ()))
            shown = samples[:_MAX_SAMPLES_PER_CELL]
            data[(depth, length)] = {
                'k': _cell_key(row, col),
                't': cell_text,
                'c': css_class,
                'bg': background,
                'h': _live_hover(length, depth, cell, state, text),
                'hd': answer_heading(labels[length], unit, depth, len(samples), text),
                'a': [_live_sample(sample, text) for sample in shown],
                # The line under the panel when it lists fewer than the cell's samples ('' when all are shown).
                'm': text.more_in_results.format(n=len(samples) - len(shown)) if len(samples) > len(shown) else '',
            }
    return data


def _live_sample(sample: SampleResult, text: PageText) -> list[str]:
    """[meta line, answer, reasoning] of one sample in a cell's panel (as `_sample_html` shows them)."""
    return [
        _sample_meta(sample, text),
        text.no_answer_recorded if sample.answer is None else sample.answer,
        sample.reasoning or '',
    ]


def _live_td(cell: Mapping[str, Any]) -> str:
    class_attr = f' class="{cell["c"]}"' if cell['c'] else ''
    return (
        f'<td data-c="{cell["k"]}"{class_attr} style="background:{cell["bg"]}" data-h="{_esc(cell["h"])}">'
        f'{_esc(cell["t"])}</td>'
    )


def _live_data(
    live: LivePage, cells: Mapping[tuple[float, int], Mapping[str, Any]], heading: tuple[str, str]
) -> dict[str, Any]:
    head, sub = heading
    data = {
        'status': live.status,
        'line': live.line,
        # The title and the line under it as the page would draw them now (its first load's go stale).
        'head': head,
        'sub': sub,
        'doc': f'{head} · {sub}'.replace('\n', ' '),
        'cells': {cell['k']: cell for cell in cells.values()},
    }
    return _shown(data)


def _shown(value: Any) -> Any:
    """``value`` with every string as the final page shows it (`shown_text`): the script draws the decoded data
    as text, so an answer's or a tokenizer name's U+202E, ESC or BEL must arrive escaped, as the final page has it."""
    if isinstance(value, str):
        return shown_text(value)
    if isinstance(value, dict):
        return {key: _shown(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shown(item) for item in value]
    return value


def _live_script(live: LivePage, data: Mapping[str, Any], text: PageText) -> str:
    options = {'src': live.data_src, 'every': _RELOAD_MS, 'data': data, 'reasoning': text.reasoning}
    return _LIVE_JS % script_json(options)


def _live_note(*, untested: bool, rereads: bool, text: PageText = EN) -> str:
    """The legend of the cell states; 'not tested' only where a cell is (a pending one can turn up until the end).
    A page that re-reads its data has it hidden: its script shows it when the run ends with cells it never sent."""
    not_tested = (_UNTESTED_BACKGROUND, f'{UNTESTED_CELL} = {text.legend_not_tested}', 'ntl')
    swatches = (
        (_PENDING_BACKGROUND, f'{PENDING_CELL} = {text.legend_pending}', ''),
        *([not_tested] if untested or rereads else []),
        (EMPTY_COLOR, f'{EMPTY_CELL} = {text.no_scored_sample}', ''),
    )
    legend = ' &nbsp; '.join(
        f'<span{_legend_attrs(key, untested)}><span class="sw" style="background:{bg}"></span> {_esc(say)}</span>'
        for bg, say, key in swatches
    )
    return (
        f'<p class="note">{legend}{_esc(text.italics_note)}</p>\n'
        f'<p class="note">{_esc(text.click_hint)}</p>\n<div id="answers"></div>\n'
    )


def _legend_attrs(key: str, untested: bool) -> str:
    if not key:
        return ''
    return f' id="{key}"' + ('' if untested else ' hidden')


def _page_grid(
    cells: Sequence[CellSummary], *, subset: str, live: LivePage | None
) -> tuple[list[int], list[float], dict[tuple[float, int], CellSummary]]:
    """`cell_grid`, with every planned cell's length and depth on the axes of a live page (none may be done yet)."""
    if live is None:
        return cell_grid(cells, subset=subset)
    done = [cell for cell in cells if cell.subset == subset]
    lengths, depths, grid = cell_grid(done, subset=subset) if done else ([], [], {})
    lengths = sorted({*lengths, *(length for length, _ in live.cells)})
    depths = sorted({*depths, *(depth for _, depth in live.cells)})
    if not lengths or not depths:
        raise ValueError(f'no cells for subset {subset!r}')
    return lengths, depths, grid


def _heading(
    cells: Sequence[CellSummary],
    subset: str,
    live: LivePage,
    axes: tuple[Sequence[int], Mapping[tuple[float, int], CellSummary]],
    title: str | None,
    text: PageText,
) -> tuple[str, str]:
    """(title, the line under it), as the final page words them: with the effective length once the run is done."""
    lengths, grid = axes
    tokenizer = subset_tokenizer(cells, subset=subset) or live.tokenizer
    heading, subheading = title_parts(subset, grid, title, tokenizer=tokenizer, text=text)
    _, effective_text = effective_mark(lengths, live.effective, subset=subset, text=text)
    if effective_text is not None:
        subheading = f'{subheading} · {text.effective_html.format(label=effective_text)}'
    return heading, subheading


def _page_parts(
    cells: Sequence[CellSummary],
    *,
    subset: str,
    live: LivePage,
    answers: Mapping[CellKey, Sequence[SampleResult]],
    title: str | None,
    text: PageText = EN,
) -> tuple[PageParts, dict[str, Any]]:
    """The live page's pieces for `plot_heatmap_html`, and its data (what the data file holds)."""
    lengths, depths, grid = _page_grid(cells, subset=subset, live=live)
    tokenizer = subset_tokenizer(cells, subset=subset) or live.tokenizer
    unit = length_unit(tokenizer, text=text)
    live_cells = _live_cells(subset, live, lengths, depths, grid, answers, unit=unit, text=text)
    data = _live_data(live, live_cells, _heading(cells, subset, live, (lengths, grid), title, text))
    parts = PageParts(
        lengths=lengths,
        depths=depths,
        grid=grid,
        tds={key: _live_td(cell) for key, cell in live_cells.items()},
        css=_ANSWERS_CSS + _LIVE_CSS,
        script=_ANSWERS_JS + _live_script(live, data, text),
        note=_live_note(
            untested=any(cell['c'] == 'nt' for cell in live_cells.values()),
            rereads=live.data_src is not None and live.status == 'running',
            text=text,
        ),
        line=live.line,
        tokenizer=tokenizer,
    )
    return parts, data


def write_live_heatmap(
    cells: Sequence[CellSummary],
    *,
    subset: str,
    path: str | os.PathLike[str],
    live: LivePage,
    answers: Mapping[CellKey, Sequence[SampleResult]] | None = None,
    title: str | None = None,
    page: bool = True,
    language: str = 'en',
) -> Path:
    """Write a live page's data file (`live.data_src`, beside `path`) and, with `page`, the page itself; both
    atomically, the data first.  A run that has ended rewrites only the data (`page=False`): the page then holds
    the final heatmap, and the data tells a page still open on the live one that the run is over.  `language`
    ('en', 'zh': the subset's) is the language of the page's words."""
    parts, data = _page_parts(
        cells, subset=subset, live=live, answers=answers or {}, title=title, text=page_text(language)
    )
    if live.data_src is not None:
        atomic_write_text(Path(path).parent / live.data_src, f'niahLive({script_json(data)});\n')
    if page:
        plot_heatmap_html(cells, subset=subset, path=path, title=title, live=parts, language=language)
    return Path(path)
