"""Interactive HTML heatmap of one subset: a plain table with inline CSS and a few lines of inline JS for the hover
tooltip and, when the samples are given, a click that shows the answers of a cell.  Self-contained, offline, a
few tens of KB without answers; coloured with the same colormap as the PNG.

Model output is untrusted: every text is HTML-escaped here, and the script only shows and hides elements, never
builds HTML from data.
"""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from matplotlib.colors import to_hex

from ..atomic import atomic_write_text
from .heatmap_style import CMAP, EMPTY_COLOR, effective_column, title_parts
from .labels import EMPTY_CELL, cell_grid, format_depth, length_axis_label, length_labels, length_unit, subset_tokenizer
from .stats import CellKey, CellSummary

if TYPE_CHECKING:
    from .records import SampleResult

__all__ = ['LiveCell', 'LivePage', 'plot_heatmap_html', 'script_json', 'write_live_heatmap']

# One line per `_hover_fields` entry; '{}' is replaced by the field.  The tooltip script fills them in on hover.
_HOVER_LINES = (
    'context length: {} tokens',  # a page names its tokenizer here: 'context length: 1,000 Qwen3 tokens'
    'depth: {}%',
    'mean accuracy: {}',
    'n: {}',
    'rule recall mean: {}',
    'judge failures: {}',
    'errors: {}',
    '95% CI: {}',
    'no final answer (not scored): {}',
)
# Separates the hover fields inside a cell's data-h attribute; no formatted field contains it.
_FIELD_SEP = '|'
# Colour stops of the legend bar: the gradient between them is linear, like the colormap itself.
_LEGEND_STOPS = 11
_LEGEND_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)

_HTML_CSS = """\
body{margin:16px 24px;font:13px/1.35 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;\
color:#222;background:#fff}
h1{font-size:17px;margin:0 0 2px}
.sub{margin:0 0 12px;color:#444}
table{border-collapse:separate;border-spacing:1px}
th{font-weight:normal;color:#333;white-space:nowrap}
tbody th{text-align:right;padding:0 6px 0 0}
tfoot th{padding:4px 2px 0}
td[data-h]{min-width:46px;height:26px;padding:0 4px;text-align:center;white-space:nowrap;color:#1a1a1a;\
font-variant-numeric:tabular-nums;cursor:default}
td[data-h]:hover{outline:2px solid #222;outline-offset:-1px}
td.e{color:#666}
td.ec,th.eff{border-right:2px dashed #1a1a1a}
th.eff{font-weight:700}
.effl{display:block;font-size:11px;font-weight:normal}
.axis{font-weight:600}
.yl{writing-mode:vertical-rl;transform:rotate(180deg);margin:0 4px}
.xl{padding-top:6px}
.leg{position:relative;min-width:84px;padding:0}
.bar{position:absolute;top:0;bottom:0;left:14px;width:14px;border:1px solid #999}
.tk{position:absolute;left:32px;transform:translateY(-50%);font-size:11px;line-height:1}
.tk:before{content:'';position:absolute;left:-5px;top:50%;width:4px;border-top:1px solid #666}
.ll{position:absolute;left:72px;top:50%;transform:translate(-50%,-50%) rotate(90deg)}
.note{margin-top:8px;font-size:12px;color:#555}
.sw{display:inline-block;width:12px;height:12px;vertical-align:-2px;border:1px solid #aaa}
#tip{position:fixed;z-index:1;pointer-events:none;white-space:pre;background:#1e1e1e;color:#fff;\
padding:6px 9px;border-radius:4px;font-size:12px;line-height:1.45}
"""

# Fills the tooltip from the hovered cell's data-h; the only script, inline, and no network access.
_HTML_JS = """\
(function(){
var L=%s,t=document.getElementById('tip'),g=document.getElementById('grid');
function hide(){t.hidden=true;}
g.addEventListener('mousemove',function(e){
var c=e.target.closest('td[data-h]');
if(!c){hide();return;}
var v=c.getAttribute('data-h').split('%s');
t.textContent=L.map(function(s,i){return s.replace('{}',v[i]);}).join('\\n');
t.hidden=false;
var r=t.getBoundingClientRect(),x=e.clientX+14,y=e.clientY+14;
if(x+r.width>innerWidth)x=Math.max(0,e.clientX-14-r.width);
if(y+r.height>innerHeight)y=Math.max(0,e.clientY-14-r.height);
t.style.left=x+'px';t.style.top=y+'px';
});
g.addEventListener('mouseleave',hide);
})();
"""


# Only with answers: the panel under the table that a click on a cell fills.
_ANSWERS_CSS = """\
td[data-a]{cursor:pointer}
.ans{margin-top:12px;max-width:960px}
.ans h2{font-size:14px;margin:0 0 6px}
.smp{border-top:1px solid #ddd;padding:6px 0}
.meta{margin:0 0 4px;color:#444}
.ans pre{margin:0;white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:6px;font-size:12px}
"""
# Shows the clicked cell's answer panel (by an id we generated) and hides the previous one; nothing else.
_ANSWERS_JS = """\
(function(){
var g=document.getElementById('grid'),shown=null;
g.addEventListener('click',function(e){
var c=e.target.closest('td[data-a]');
if(!c)return;
var p=document.getElementById('ans-'+c.getAttribute('data-a'));
if(shown)shown.hidden=true;
if(p){p.hidden=false;shown=p;p.scrollIntoView({block:'nearest'});}
});
})();
"""
# What a sample's line in the answers panel says of a reply with no final answer (SampleResult.no_answer).
_NO_ANSWER_STATUS = {
    'reasoning_only': 'only reasoning (see reasoning below)',
    'tool_call_only': 'only a tool call',
}
# A cell's panel lists at most this many samples; the results JSONL has them all.
_MAX_SAMPLES_PER_CELL = 20


def _fmt(value: float | None) -> str:
    return 'n/a' if value is None else f'{value:.2f}'


def _hover_lines(unit: str) -> list[str]:
    """`_HOVER_LINES` with the length in ``unit`` ('Qwen3 tokens')."""
    return [_HOVER_LINES[0].replace('tokens', unit), *_HOVER_LINES[1:]]


def _hover_fields(length: int, depth: float, cell: CellSummary | None) -> list[str]:
    if cell is None:
        return [f'{length:,}', format_depth(depth), 'no data', '0', 'n/a', '0', '0', 'n/a', '0']
    ci = 'n/a' if cell.ci_low is None or cell.ci_high is None else f'[{cell.ci_low:.2f}, {cell.ci_high:.2f}]'
    return [
        f'{length:,}',
        format_depth(depth),
        _fmt(cell.accuracy),
        str(cell.n),
        _fmt(cell.rule_recall),
        str(cell.judge_failures),
        str(cell.errors),
        ci,
        str(cell.no_answer),
    ]


def _color(value: float) -> str:
    """'#rrggbb' of an accuracy on the fixed 0-1 scale, exactly as the PNG colours it."""
    return to_hex(CMAP(value))


def _esc(text: str) -> str:
    return html.escape(text, quote=True).replace('\n', '<br>')


def _score(cell: CellSummary | None) -> float | None:
    """The cell's accuracy, or None when it has no colour (missing, nothing scored, or NaN)."""
    if cell is None or cell.accuracy is None or math.isnan(cell.accuracy):
        return None
    return cell.accuracy


def _cell_td(
    length: int, depth: float, cell: CellSummary | None, *, effective: bool = False, answers_id: int | None = None
) -> str:
    fields = _esc(_FIELD_SEP.join(_hover_fields(length, depth, cell)))
    score = _score(cell)
    # 'ec': the effective length's column, drawn with a dashed right border like the PNG's line.
    classes = ' '.join(name for name, on in (('e', score is None), ('ec', effective)) if on)
    class_attr = f' class="{classes}"' if classes else ''
    # data-a: the number of this cell's answer panel (ours, never data), shown by a click.
    answers_attr = '' if answers_id is None else f' data-a="{answers_id}"'
    if score is None:
        return f'<td{class_attr} style="background:{EMPTY_COLOR}" data-h="{fields}"{answers_attr}>{EMPTY_CELL}</td>'
    return f'<td{class_attr} style="background:{_color(score)}" data-h="{fields}"{answers_attr}>{score:.2f}</td>'


def _legend_td(n_rows: int) -> str:
    stops = ','.join(_color(i / (_LEGEND_STOPS - 1)) for i in reversed(range(_LEGEND_STOPS)))
    ticks = ''.join(f'<span class="tk" style="top:{100 * (1 - v):g}%">{v:g}</span>' for v in _LEGEND_TICKS)
    return (
        f'<td class="leg" rowspan="{n_rows}"><div class="bar" style="background:linear-gradient({stops})"></div>'
        f'{ticks}<span class="ll axis">accuracy</span></td>'
    )


# --------------------------------------------------------------------------------------------------------------------
# Answers panel
# --------------------------------------------------------------------------------------------------------------------


def _sample_status(sample: SampleResult) -> str:
    if sample.error is not None:
        return f'error: {sample.error}'
    if sample.budget_excluded:
        return 'budget exhausted (not scored)'
    if sample.no_answer_excluded:
        return f'no final answer: {_NO_ANSWER_STATUS[sample.no_answer]} (not scored)'
    return 'scored' if sample.accuracy is not None else 'not scored'


def _sample_meta(sample: SampleResult) -> str:
    parts = [
        f'score {_fmt(sample.accuracy)}',
        f'judge rating {sample.judge_rating:g}' if sample.judge_rating is not None else 'judge rating n/a',
        f'judge {sample.judge_status}',
        f'rule recall {_fmt(sample.rule_recall)}',
        *([f'scoring: {sample.scoring}'] if sample.scoring else []),
        _sample_status(sample),
    ]
    return ' · '.join(parts)


def _sample_html(sample: SampleResult) -> str:
    answer = '(no answer recorded)' if sample.answer is None else sample.answer
    # html.escape (not _esc): inside <pre> newlines stay newlines.
    text = f'<div class="smp"><p class="meta">{_esc(_sample_meta(sample))}</p><pre>{html.escape(answer)}</pre>'
    if sample.reasoning:
        text += f'<details><summary>reasoning</summary><pre>{html.escape(sample.reasoning)}</pre></details>'
    return text + '</div>'


def _answers_section(
    panel_id: int, length_label: str, depth: float, samples: Sequence[SampleResult], *, unit: str
) -> str:
    shown = samples[:_MAX_SAMPLES_PER_CELL]
    more = len(samples) - len(shown)
    heading = f'{length_label} {unit} · depth {format_depth(depth)}% · {len(samples)} sample(s)'
    tail = f'<p class="meta">{more} more in the results file</p>' if more else ''
    body = ''.join(_sample_html(sample) for sample in shown)
    return f'<section class="ans" id="ans-{panel_id}" hidden><h2>{_esc(heading)}</h2>{body}{tail}</section>'


def _answer_panels(
    subset: str,
    lengths: Sequence[int],
    depths: Sequence[float],
    answers: Mapping[CellKey, Sequence[SampleResult]],
    *,
    unit: str,
) -> tuple[dict[tuple[float, int], int], list[str]]:
    """Panel number per (depth, length) that has samples, and the panels' HTML, in grid order."""
    labels = dict(zip(lengths, length_labels(lengths), strict=True))
    ids: dict[tuple[float, int], int] = {}
    panels: list[str] = []
    for depth in depths:
        for length in lengths:
            samples = answers.get((subset, length, depth))
            if samples:
                ids[(depth, length)] = len(panels)
                panels.append(_answers_section(len(panels), labels[length], depth, samples, unit=unit))
    return ids, panels


# --------------------------------------------------------------------------------------------------------------------
# Document
# --------------------------------------------------------------------------------------------------------------------


def _heatmap_html(  # long because the page is one template filled top to bottom: splitting hides its order
    cells: Sequence[CellSummary],
    *,
    subset: str,
    title: str | None = None,
    effective_length: int | None = None,
    scoring_note: str | None = None,
    answers: Mapping[CellKey, Sequence[SampleResult]] | None = None,
    live: LivePage | None = None,
) -> str:
    """The whole HTML document for one subset: a coloured table with a hover tooltip, no external resources.

    Long because it is one template: each piece is built above and only put together here.
    """
    lengths, depths, grid = _page_grid(cells, subset=subset, live=live)
    column = effective_column(lengths, effective_length, subset=subset)
    labels = length_labels(lengths)
    tokenizer = subset_tokenizer(cells, subset=subset)
    unit = length_unit(tokenizer)
    heading, subheading = title_parts(subset, grid, title, tokenizer=tokenizer)
    if column is not None:
        subheading = f'{subheading} · effective context length: {labels[column]}'
    panel_ids, panels = _answer_panels(subset, lengths, depths, answers or {}, unit=unit) if live is None else ({}, [])
    live_cells = {} if live is None else _live_cells(subset, live, lengths, depths, grid, answers or {}, unit=unit)
    n_cols = len(lengths)
    rows = []
    for row, depth in enumerate(depths):
        parts = ['<tr>']
        if row == 0:
            parts.append(f'<th rowspan="{len(depths)}"><div class="yl axis">Needle depth (%)</div></th>')
        parts.append(f'<th>{_esc(format_depth(depth))}</th>')
        parts.extend(
            _cell_td(
                length,
                depth,
                grid.get((depth, length)),
                effective=col == column,
                answers_id=panel_ids.get((depth, length)),
            )
            if live is None
            else _live_td(live_cells[(depth, length)])
            for col, length in enumerate(lengths)
        )
        if row == 0:
            parts.append(_legend_td(len(depths)))
        parts.append('</tr>')
        rows.append(''.join(parts))
    col_labels = ''.join(
        f'<th class="eff">{_esc(label)}<span class="effl">effective</span></th>'
        if col == column
        else f'<th>{_esc(label)}</th>'
        for col, label in enumerate(labels)
    )
    has_empty = any(_score(grid.get((d, t))) is None for d in depths for t in lengths)
    note = (
        f'<p class="note"><span class="sw" style="background:{EMPTY_COLOR}"></span> '
        f'{EMPTY_CELL} = no scored sample</p>\n'
        if has_empty
        else ''
    )
    # Answers add their CSS, a hint, the panels and their script; without them the page is as it always was.
    css, script = _HTML_CSS, _HTML_JS % (json.dumps(_hover_lines(unit)), _FIELD_SEP)
    if live is not None:  # its cells and answers come from the data the page re-reads (see live_data_js)
        css += _ANSWERS_CSS + _LIVE_CSS
        script += _ANSWERS_JS + _live_script(live, live_cells)
        note = _live_note(live)
    elif panels:
        css += _ANSWERS_CSS
        script += _ANSWERS_JS
        note += '<p class="note">Click a cell to show its answers below.</p>\n' + '\n'.join(panels) + '\n'
    sub = f'<p class="sub">{_esc(subheading)}</p>\n'
    if scoring_note:
        sub += f'<p class="sub">{_esc(scoring_note)}</p>\n'
    if live is not None:  # the progress line, kept current by the script
        sub += f'<p id="live">{_esc(live.line)}</p>\n'
    doc_title = _esc(f'{heading} · {subheading}'.replace('\n', ' '))
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width,initial-scale=1">\n'
        f'<title>{doc_title}</title>\n<style>\n{css}</style>\n</head>\n<body>\n'
        f'<h1>{_esc(heading)}</h1>\n{sub}'
        '<table id="grid">\n<tbody>\n' + '\n'.join(rows) + '\n</tbody>\n<tfoot>\n'
        f'<tr><th colspan="2"></th>{col_labels}<th></th></tr>\n'
        f'<tr><th colspan="2"></th><th class="xl axis" colspan="{n_cols}">{_esc(length_axis_label(tokenizer))}</th>'
        '<th></th></tr>\n'
        '</tfoot>\n</table>\n'
        f'{note}<div id="tip" role="tooltip" hidden></div>\n<script>\n{script}</script>\n</body>\n</html>\n'
    )


def plot_heatmap_html(
    cells: Sequence[CellSummary],
    *,
    subset: str,
    path: str | os.PathLike[str],
    title: str | None = None,
    effective_length: int | None = None,
    scoring_note: str | None = None,
    answers: Mapping[CellKey, Sequence[SampleResult]] | None = None,
    live: LivePage | None = None,
) -> Path:
    """Save an interactive HTML heatmap of one subset (atomically); ValueError when the subset has no cells.

    The file is self-contained (plain HTML table, inline CSS and a few lines of inline JS for the hover tooltip;
    no external resources, works offline); identical inputs give identical bytes.  `effective_length` marks that
    length's column (header and a dashed border) and is stated under the title; `scoring_note` is a line under
    it.  `answers` maps (subset, context_length, depth_percent), as `stats.samples_by_cell` gives it, to the
    samples of that cell: a click on the cell then shows their answers, reasoning, score, judge rating and status
    (at most 20 per cell; all text HTML-escaped).  `live` draws the page of a run still going (`LivePage`): every
    planned cell, pending and not-tested ones marked, and a script that re-reads the sibling data file.
    """
    page = _heatmap_html(
        cells,
        subset=subset,
        title=title,
        effective_length=effective_length,
        scoring_note=scoring_note,
        answers=answers,
        live=live,
    )
    return atomic_write_text(path, page)


# --------------------------------------------------------------------------------------------------------------------
# Live page: the page of a run still going
# --------------------------------------------------------------------------------------------------------------------

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
    """

    cells: Mapping[tuple[int, float], LiveCell]
    status: RunStatus
    line: str
    data_src: str | None = None


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
if(s[2]){var x=el('details');x.appendChild(el('summary',null,'reasoning'));x.appendChild(el('pre',null,s[2]));
d.appendChild(x);}kids.push(d);});
if(c.m)kids.push(el('p','meta',c.m+' more in the results file'));
p.replaceChildren.apply(p,kids);
}
function apply(d){
Object.keys(d.cells).forEach(function(k){
var c=d.cells[k],td=tds[k];if(!td)return;
td.textContent=c.t;td.className=c.c;td.style.background=c.bg;td.setAttribute('data-h',c.h);
if(c.a.length){td.setAttribute('data-a',k);panel(k,c);}else td.removeAttribute('data-a');
});
st.textContent=d.line;
if(d.status!=='running'&&timer!==null){clearInterval(timer);timer=null;}
}
function reload(){var s=document.createElement('script');s.src=O.src+'?t='+Date.now();
s.onload=s.onerror=function(){s.remove();};document.head.appendChild(s);}
window.niahLive=apply;
apply(O.data);
if(O.src&&O.data.status==='running')timer=setInterval(reload,O.every);
})();
"""


def script_json(value: Any) -> str:
    """JSON that is safe inside a <script> element and in a .js file: no '<', '>' or '&' (no '</script>' or '<!--'
    can close or change the element) and no U+2028/U+2029 (line ends to older JavaScript)."""
    text = json.dumps(value, ensure_ascii=False, separators=(',', ':'))
    for char, escaped in (
        ('<', '\\u003c'),
        ('>', '\\u003e'),
        ('&', '\\u0026'),
        ('\u2028', '\\u2028'),
        ('\u2029', '\\u2029'),
    ):
        text = text.replace(char, escaped)
    return text


def _cell_key(row: int, col: int) -> str:
    return f'{row}-{col}'


def _live_hover(length: int, depth: float, cell: CellSummary | None, live: LiveCell) -> str:
    fields = _hover_fields(length, depth, cell)
    if live.state == 'untested':
        fields[2] = 'not tested (left out by the sweep)'
    elif live.finished < live.planned:
        fields[2] = f'{fields[2] if live.finished else "pending"} ({live.finished}/{live.planned} samples finished)'
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
) -> dict[tuple[float, int], dict[str, Any]]:
    """The data of every cell of the table, keyed by (depth, length): what `_live_td` draws and the script applies."""
    labels = dict(zip(lengths, length_labels(lengths), strict=True))
    data: dict[tuple[float, int], dict[str, Any]] = {}
    for row, depth in enumerate(depths):
        for col, length in enumerate(lengths):
            cell, state = grid.get((depth, length)), live.cells.get((length, depth), LiveCell(0, untested=True))
            text, css_class, background = _live_look(cell, state)
            samples = list(answers.get((subset, length, depth), ()))
            shown = samples[:_MAX_SAMPLES_PER_CELL]
            data[(depth, length)] = {
                'k': _cell_key(row, col),
                't': text,
                'c': css_class,
                'bg': background,
                'h': _live_hover(length, depth, cell, state),
                'hd': f'{labels[length]} {unit} · depth {format_depth(depth)}% · {len(samples)} sample(s)',
                'a': [_live_sample(sample) for sample in shown],
                'm': len(samples) - len(shown),
            }
    return data


def _live_sample(sample: SampleResult) -> list[str]:
    """[meta line, answer, reasoning] of one sample in a cell's panel (as `_sample_html` shows them)."""
    return [
        _sample_meta(sample),
        '(no answer recorded)' if sample.answer is None else sample.answer,
        sample.reasoning or '',
    ]


def _live_td(cell: Mapping[str, Any]) -> str:
    class_attr = f' class="{cell["c"]}"' if cell['c'] else ''
    return (
        f'<td data-c="{cell["k"]}"{class_attr} style="background:{cell["bg"]}" data-h="{_esc(cell["h"])}">'
        f'{_esc(cell["t"])}</td>'
    )


def _live_data(live: LivePage, cells: Mapping[tuple[float, int], Mapping[str, Any]]) -> dict[str, Any]:
    return {'status': live.status, 'line': live.line, 'cells': {cell['k']: cell for cell in cells.values()}}


def _live_script(live: LivePage, cells: Mapping[tuple[float, int], Mapping[str, Any]]) -> str:
    options = {'src': live.data_src, 'every': _RELOAD_MS, 'data': _live_data(live, cells)}
    return _LIVE_JS % script_json(options)


def _live_note(live: LivePage) -> str:
    swatches = (
        (_PENDING_BACKGROUND, f'{PENDING_CELL} = pending (planned, not answered yet)'),
        (_UNTESTED_BACKGROUND, f'{UNTESTED_CELL} = not tested (left out by the sweep)'),
        (EMPTY_COLOR, f'{EMPTY_CELL} = no scored sample'),
    )
    legend = ' &nbsp; '.join(f'<span class="sw" style="background:{bg}"></span> {_esc(text)}' for bg, text in swatches)
    return (
        f'<p class="note">{legend}; a score in italics: some of its samples are still pending.</p>\n'
        '<p class="note">Click a cell to show its answers below.</p>\n<div id="answers"></div>\n'
    )


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


def write_live_heatmap(
    cells: Sequence[CellSummary],
    *,
    subset: str,
    path: str | os.PathLike[str],
    live: LivePage,
    answers: Mapping[CellKey, Sequence[SampleResult]] | None = None,
    title: str | None = None,
    page: bool = True,
) -> Path:
    """Write a live page's data file (`live.data_src`, beside `path`) and, with `page`, the page itself; both
    atomically, the data first.  A run that has ended rewrites only the data (`page=False`): the page then holds
    the final heatmap, and the data tells a page still open on the live one that the run is over."""
    lengths, depths, grid = _page_grid(cells, subset=subset, live=live)
    unit = length_unit(subset_tokenizer(cells, subset=subset) if grid else None)
    data = _live_data(live, _live_cells(subset, live, lengths, depths, grid, answers or {}, unit=unit))
    if live.data_src is not None:
        atomic_write_text(Path(path).parent / live.data_src, f'niahLive({script_json(data)});\n')
    if page:
        plot_heatmap_html(cells, subset=subset, path=path, title=title, answers=answers, live=live)
    return Path(path)
