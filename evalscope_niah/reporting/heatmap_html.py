"""Interactive HTML heatmap of one subset: a plain table with inline CSS and a few lines of inline JS for the hover
tooltip and, when the samples are given, a click that shows the answers of a cell.  Self-contained, offline, a
few tens of KB without answers; coloured with the same colormap as the PNG.

Model output is untrusted: every text goes through `escaping.html_text`, data in the script through
`escaping.script_json`, and the script only shows and hides elements, never builds HTML from data.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..atomic import atomic_write_text
from ..escaping import html_text, script_json, shown_text
from .heatmap_style import EMPTY_COLOR, accuracy_hex, effective_mark, title_parts
from .labels import EMPTY_CELL, cell_grid, format_depth, length_axis_label, length_labels, length_unit, subset_tokenizer
from .page_text import EN, PageText, page_text, reason_text
from .stats import CellKey, CellSummary

if TYPE_CHECKING:
    from .length_status import EffectiveBound
    from .sample_record import SampleResult

__all__ = ['PageParts', 'plot_heatmap_html']

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
# A cell's panel lists at most this many samples; the results JSONL has them all.
_MAX_SAMPLES_PER_CELL = 20


def _fmt(value: float | None, text: PageText = EN) -> str:
    return text.not_available if value is None else f'{value:.2f}'


def _hover_lines(unit: str, text: PageText = EN) -> list[str]:
    """The tooltip's lines (`PageText.hover_lines`, one per `_hover_fields` entry; '{}' is replaced by the field)
    with the length in ``unit``: 'context length: 1,000 Qwen3 tokens'."""
    return [f'{text.hover_lines[0]} {unit}', *text.hover_lines[1:]]


def _hover_fields(length: int, depth: float, cell: CellSummary | None, text: PageText = EN) -> list[str]:
    na = text.not_available
    if cell is None:
        return [f'{length:,}', format_depth(depth), text.no_data, '0', na, '0', '0', na, '0']
    ci = na if cell.ci_low is None or cell.ci_high is None else f'[{cell.ci_low:.2f}, {cell.ci_high:.2f}]'
    return [
        f'{length:,}',
        format_depth(depth),
        # A cell with samples and no score is unknown (why: '3 server errors'), never a 0 (length_status.py).
        text.unknown_cell.format(reason=reason_text(cell.unknown, text)) if cell.unknown else _fmt(cell.accuracy, text),
        str(cell.n),
        _fmt(cell.rule_recall, text),
        str(cell.judge_failures),
        str(cell.errors),
        ci,
        str(cell.no_answer),
    ]


def _color(value: float) -> str:
    """'#rrggbb' of an accuracy on the fixed 0-1 scale, exactly as the PNG colours it."""
    return accuracy_hex(value)


def _esc(text: str) -> str:
    return html_text(text).replace('\n', '<br>')


def _score(cell: CellSummary | None) -> float | None:
    """The cell's accuracy, or None when it has no colour (missing, nothing scored, or NaN)."""
    if cell is None or cell.accuracy is None or math.isnan(cell.accuracy):
        return None
    return cell.accuracy


def _cell_td(
    length: int,
    depth: float,
    cell: CellSummary | None,
    *,
    effective: bool = False,
    answers_id: int | None = None,
    text: PageText = EN,
) -> str:
    fields = _esc(_FIELD_SEP.join(_hover_fields(length, depth, cell, text)))
    score = _score(cell)
    # 'ec': the effective length's column, drawn with a dashed right border like the PNG's line.
    classes = ' '.join(name for name, on in (('e', score is None), ('ec', effective)) if on)
    class_attr = f' class="{classes}"' if classes else ''
    # data-a: the number of this cell's answer panel (ours, never data), shown by a click.
    answers_attr = '' if answers_id is None else f' data-a="{answers_id}"'
    if score is None:
        return f'<td{class_attr} style="background:{EMPTY_COLOR}" data-h="{fields}"{answers_attr}>{EMPTY_CELL}</td>'
    return f'<td{class_attr} style="background:{_color(score)}" data-h="{fields}"{answers_attr}>{score:.2f}</td>'


def _legend_td(n_rows: int, text: PageText) -> str:
    stops = ','.join(_color(i / (_LEGEND_STOPS - 1)) for i in reversed(range(_LEGEND_STOPS)))
    ticks = ''.join(f'<span class="tk" style="top:{100 * (1 - v):g}%">{v:g}</span>' for v in _LEGEND_TICKS)
    return (
        f'<td class="leg" rowspan="{n_rows}"><div class="bar" style="background:linear-gradient({stops})"></div>'
        f'{ticks}<span class="ll axis">{_esc(text.accuracy)}</span></td>'
    )


# --------------------------------------------------------------------------------------------------------------------
# Answers panel
# --------------------------------------------------------------------------------------------------------------------


def _sample_status(sample: SampleResult, text: PageText) -> str:
    if sample.error is not None:
        return text.status_error.format(error=sample.error)
    if sample.budget_excluded:
        return text.status_budget
    if sample.no_answer_excluded:
        return text.status_no_answer.format(why=text.no_answer_why[sample.no_answer])
    return text.status_scored if sample.accuracy is not None else text.status_not_scored


def _sample_meta(sample: SampleResult, text: PageText = EN) -> str:
    rating = text.not_available if sample.judge_rating is None else f'{sample.judge_rating:g}'
    parts = [
        text.meta_score.format(_fmt(sample.accuracy, text)),
        text.meta_judge_rating.format(rating),
        text.meta_judge.format(sample.judge_status),
        text.meta_rule_recall.format(_fmt(sample.rule_recall, text)),
        *([text.meta_scoring.format(sample.scoring)] if sample.scoring else []),
        _sample_status(sample, text),
    ]
    return ' · '.join(parts)


def answer_heading(length_label: str, unit: str, depth: float, samples: int, text: PageText) -> str:
    """The heading of a cell's answers panel: '4k Qwen3 tokens · depth 50% · 3 sample(s)'."""
    return text.answers_heading.format(length=length_label, unit=unit, depth=format_depth(depth), n=samples)


def _sample_html(sample: SampleResult, text: PageText) -> str:
    answer = text.no_answer_recorded if sample.answer is None else sample.answer
    # html_text (not _esc): inside <pre> newlines stay newlines.
    html = f'<div class="smp"><p class="meta">{_esc(_sample_meta(sample, text))}</p><pre>{html_text(answer)}</pre>'
    if sample.reasoning:
        html += f'<details><summary>{_esc(text.reasoning)}</summary><pre>{html_text(sample.reasoning)}</pre></details>'
    return html + '</div>'


def _answers_section(
    panel_id: int, length_label: str, depth: float, samples: Sequence[SampleResult], *, unit: str, text: PageText
) -> str:
    shown = samples[:_MAX_SAMPLES_PER_CELL]
    more = len(samples) - len(shown)
    heading = answer_heading(length_label, unit, depth, len(samples), text)
    tail = f'<p class="meta">{_esc(text.more_in_results.format(n=more))}</p>' if more else ''
    body = ''.join(_sample_html(sample, text) for sample in shown)
    return f'<section class="ans" id="ans-{panel_id}" hidden><h2>{_esc(heading)}</h2>{body}{tail}</section>'


def _answer_panels(
    subset: str,
    lengths: Sequence[int],
    depths: Sequence[float],
    answers: Mapping[CellKey, Sequence[SampleResult]],
    *,
    unit: str,
    text: PageText,
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
                panels.append(_answers_section(len(panels), labels[length], depth, samples, unit=unit, text=text))
    return ids, panels


@dataclass(frozen=True)
class PageParts:
    """The pieces a page of a run still going (heatmap_live.py) puts in place of the final page's: the axes (every
    planned cell, finished or not), the finished cells, each cell's <td>, and extra CSS, notes and script; `line` is
    the progress line shown above the table."""

    lengths: Sequence[int]
    depths: Sequence[float]
    grid: Mapping[tuple[float, int], CellSummary]
    tds: Mapping[tuple[float, int], str]
    css: str
    script: str
    note: str
    line: str
    # The tokenizer that counted the plan's lengths: names the length axis before any cell of the subset is done.
    tokenizer: str | None = None


# --------------------------------------------------------------------------------------------------------------------
# Document
# --------------------------------------------------------------------------------------------------------------------


def _table_rows(
    lengths: Sequence[int],
    depths: Sequence[float],
    grid: Mapping[tuple[float, int], CellSummary],
    *,
    column: int | None,
    panel_ids: Mapping[tuple[float, int], int],
    live: PageParts | None,
    text: PageText,
) -> list[str]:
    """One <tr> per depth: the y-axis label (first row only), the depth, a <td> per length, the legend (first row
    only).  A live page brings its own <td>s."""
    rows = []
    for row, depth in enumerate(depths):
        parts = ['<tr>']
        if row == 0:
            parts.append(f'<th rowspan="{len(depths)}"><div class="yl axis">{_esc(text.depth_axis)}</div></th>')
        parts.append(f'<th>{_esc(format_depth(depth))}</th>')
        parts.extend(
            _cell_td(
                length,
                depth,
                grid.get((depth, length)),
                effective=col == column,
                answers_id=panel_ids.get((depth, length)),
                text=text,
            )
            if live is None
            else live.tds[(depth, length)]
            for col, length in enumerate(lengths)
        )
        if row == 0:
            parts.append(_legend_td(len(depths), text))
        parts.append('</tr>')
        rows.append(''.join(parts))
    return rows


def _column_labels(labels: Sequence[str], column: int | None, text: PageText) -> str:
    """The x-axis' <th>s; the effective length's says so."""
    return ''.join(
        f'<th class="eff">{_esc(label)}<span class="effl">{_esc(text.effective_column)}</span></th>'
        if col == column
        else f'<th>{_esc(label)}</th>'
        for col, label in enumerate(labels)
    )


def _empty_cell_note(
    lengths: Sequence[int], depths: Sequence[float], grid: Mapping[tuple[float, int], CellSummary], text: PageText
) -> str:
    """The line that explains the empty cell's colour, only when the table has one."""
    if all(_score(grid.get((d, t))) is not None for d in depths for t in lengths):
        return ''
    swatch = f'<span class="sw" style="background:{EMPTY_COLOR}"></span>'
    return f'<p class="note">{swatch} {EMPTY_CELL} = {_esc(text.no_scored_sample)}</p>\n'


def _css_script_note(
    note: str, panels: Sequence[str], *, unit: str, live: PageParts | None, text: PageText
) -> tuple[str, str, str]:
    """The page's CSS, script and notes under the table.  Answers add their CSS, a hint, the panels and their
    script; without them the page is as it always was.  A live page's cells and answers come from the data it
    re-reads (heatmap_live.py), so it brings its own."""
    # The tooltip's script draws these labels as text: the unit (a tokenizer's name) is shown as the page shows it.
    labels = [shown_text(line) for line in _hover_lines(unit, text)]
    css, script = _HTML_CSS, _HTML_JS % (script_json(labels), _FIELD_SEP)
    if live is not None:
        return css + live.css, script + live.script, live.note
    if panels:
        hint = f'<p class="note">{_esc(text.click_hint)}</p>\n'
        return css + _ANSWERS_CSS, script + _ANSWERS_JS, note + hint + '\n'.join(panels) + '\n'
    return css, script, note


def _sub_lines(subheading: str, scoring_note: str | None, live: PageParts | None) -> str:
    """The lines under the title: the subheading, the scoring note, and a live page's progress line (kept current
    by its script)."""
    sub = f'<p class="sub">{_esc(subheading)}</p>\n'
    if scoring_note:
        sub += f'<p class="sub">{_esc(scoring_note)}</p>\n'
    if live is not None:
        sub += f'<p id="live">{_esc(live.line)}</p>\n'
    return sub


def _heatmap_html(
    cells: Sequence[CellSummary],
    *,
    subset: str,
    title: str | None = None,
    effective_length: EffectiveBound | int | None = None,
    scoring_note: str | None = None,
    answers: Mapping[CellKey, Sequence[SampleResult]] | None = None,
    live: PageParts | None = None,
    text: PageText = EN,
) -> str:
    """The whole HTML document for one subset: a coloured table with a hover tooltip, no external resources.
    One template filled top to bottom: each piece is built above and only put together here."""
    lengths, depths, grid = cell_grid(cells, subset=subset) if live is None else (live.lengths, live.depths, live.grid)
    column, effective_text = effective_mark(lengths, effective_length, subset=subset, text=text)
    labels = length_labels(lengths)
    tokenizer = subset_tokenizer(cells, subset=subset) or (live.tokenizer if live is not None else None)
    unit = length_unit(tokenizer, text=text)
    heading, subheading = title_parts(subset, grid, title, tokenizer=tokenizer, text=text)
    if effective_text is not None:
        subheading = f'{subheading} · {text.effective_html.format(label=effective_text)}'
    panel_ids, panels = (
        _answer_panels(subset, lengths, depths, answers or {}, unit=unit, text=text) if live is None else ({}, [])
    )
    rows = _table_rows(lengths, depths, grid, column=column, panel_ids=panel_ids, live=live, text=text)
    empty_note = _empty_cell_note(lengths, depths, grid, text)
    css, script, note = _css_script_note(empty_note, panels, unit=unit, live=live, text=text)
    doc_title = _esc(f'{heading} · {subheading}'.replace('\n', ' '))
    return (
        f'<!DOCTYPE html>\n<html lang="{text.html_lang}">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width,initial-scale=1">\n'
        f'<title>{doc_title}</title>\n<style>\n{css}</style>\n</head>\n<body>\n'
        f'<h1>{_esc(heading)}</h1>\n{_sub_lines(subheading, scoring_note, live)}'
        '<table id="grid">\n<tbody>\n' + '\n'.join(rows) + '\n</tbody>\n<tfoot>\n'
        f'<tr><th colspan="2"></th>{_column_labels(labels, column, text)}<th></th></tr>\n'
        f'<tr><th colspan="2"></th><th class="xl axis" colspan="{len(lengths)}">'
        f'{_esc(length_axis_label(tokenizer, text=text))}</th><th></th></tr>\n'
        '</tfoot>\n</table>\n'
        f'{note}<div id="tip" role="tooltip" hidden></div>\n<script>\n{script}</script>\n</body>\n</html>\n'
    )


def plot_heatmap_html(
    cells: Sequence[CellSummary],
    *,
    subset: str,
    path: str | os.PathLike[str],
    title: str | None = None,
    effective_length: EffectiveBound | int | None = None,
    scoring_note: str | None = None,
    answers: Mapping[CellKey, Sequence[SampleResult]] | None = None,
    live: PageParts | None = None,
    language: str = 'en',
) -> Path:
    """Save an interactive HTML heatmap of one subset (atomically); ValueError when the subset has no cells.

    The file is self-contained (plain HTML table, inline CSS and a few lines of inline JS for the hover tooltip;
    no external resources, works offline); identical inputs give identical bytes.  `effective_length` marks that
    length's column (header and a dashed border) and is stated under the title (a bound, length_status.EffectiveBound,
    marks the lengths known to pass and is stated as a bound, naming the unknown length); `scoring_note` is a line under
    it.  `answers` maps (subset, context_length, depth_percent), as `stats.samples_by_cell` gives it, to the
    samples of that cell: a click on the cell then shows their answers, reasoning, score, judge rating and status
    (at most 20 per cell; all text HTML-escaped).  `live` (heatmap_live.py) draws the page of a run still going:
    its axes, cells, notes and script in place of the final page's.  `language` ('en', 'zh': the subset's) is the
    page's lang attribute and the language of its words.
    """
    page = _heatmap_html(
        cells,
        subset=subset,
        title=title,
        effective_length=effective_length,
        scoring_note=scoring_note,
        answers=answers,
        live=live,
        text=page_text(language),
    )
    return atomic_write_text(path, page)
