"""Human-readable labels for the grid: token counts ('4k', '128k'), depths ('33.33'), the tokenizer that counted
them ('Qwen3 tokens'), the plain-text cell table the CLI and the demo print, and the words the heatmaps show, one
table per language (`PageText`: a subset's pages and PNG speak its language).  Shared by the heatmaps, the
comparison figure and the OpenCompass writer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..inert import terminal_text
from ..making.tokenization import TIKTOKEN_PREFIX
from ..params.subsets import DEFAULT_SUBSETS
from ..vocabulary import SERVED_TOKENIZER_PREFIX
from .stats import CellSummary

__all__ = [
    'EMPTY_CELL',
    'EN',
    'ZH',
    'PageText',
    'cell_grid',
    'file_name_part',
    'format_cell_table',
    'format_depth',
    'format_tokens',
    'length_axis_label',
    'length_labels',
    'length_unit',
    'page_text',
    'subset_language',
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


def length_unit(tokenizer: str | None, *, text: PageText | None = None) -> str:
    """What a length counts: 'Qwen3 tokens', or 'tokens' when the tokenizer is unknown (files from before it was
    recorded); in ``text``'s language (English by default)."""
    text = text or EN
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


@dataclass(frozen=True)
class PageText:
    """Every word the heatmaps (PNG, HTML page, live page) show, in one language; '{name}' fields are filled by
    ``str.format``.  Data (subset names, answers, tokenizer names, the judge's status words) is shown as it is."""

    html_lang: str  # the page's lang attribute: the browser picks the glyph forms by it (CJK differs by region)
    default_title: str
    subtitle: str  # {subset} {mean} {n}
    lengths_in: str  # {unit}: ' · lengths in Qwen3 tokens'
    not_available: str
    effective_png: str  # {label}
    effective_html: str  # {label}
    effective_column: str
    depth_axis: str
    length_axis: str  # {unit}
    named_tokens: str  # {name}
    tokens: str
    accuracy: str
    empty_png: str
    no_scored_sample: str
    click_hint: str
    hover_lines: tuple[str, ...]  # '{}' is the field, in `heatmap_html._hover_fields` order; the first is the length
    no_data: str
    status_error: str  # {error}
    status_budget: str
    status_no_answer: str  # {why}
    no_answer_why: Mapping[str, str]  # SampleResult.no_answer -> what the panel says
    status_scored: str
    status_not_scored: str
    meta_score: str  # {}
    meta_judge_rating: str  # {}
    meta_judge: str  # {}
    meta_rule_recall: str  # {}
    meta_scoring: str  # {}
    no_answer_recorded: str
    reasoning: str
    more_in_results: str  # {n}; also filled by the live page's script, so '{n}' must stay as written
    answers_heading: str  # {length} {unit} {depth} {n}
    rule_fallback_note: str
    sweep_note: str  # {tested} {total}
    pending_hover: str  # {state} {finished} {planned}
    pending: str
    not_tested: str
    legend_pending: str
    legend_not_tested: str
    italics_note: str
    progress_cells: str  # {done} {total}
    progress_samples: str  # {done} {total}
    progress_tokens: str  # {sent} {planned} {by}
    progress_errors: str  # {n}
    progress_states: Mapping[str, str]  # RunStatus -> what the line says
    progress_updated: str  # {time}
    unfinished_note: str  # {status} (as RunStatus), {state} (as progress_states), {done} {total}


EN = PageText(
    html_lang='en',
    default_title='Needle in a haystack',
    subtitle='subset: {subset} · mean accuracy {mean} (n={n})',
    lengths_in=' · lengths in {unit}',
    not_available='n/a',
    effective_png='effective: {label}',
    effective_html='effective context length: {label}',
    effective_column='effective',
    depth_axis='Needle depth (%)',
    length_axis='Context length ({unit})',
    named_tokens='{name} tokens',
    tokens='tokens',
    accuracy='accuracy',
    empty_png='grey = no scored sample',
    no_scored_sample='no scored sample',
    click_hint='Click a cell to show its answers below.',
    hover_lines=(
        'context length: {}',
        'depth: {}%',
        'mean accuracy: {}',
        'n: {}',
        'rule recall mean: {}',
        'judge failures: {}',
        'errors: {}',
        '95% CI: {}',
        'no final answer (not scored): {}',
    ),
    no_data='no data',
    status_error='error: {error}',
    status_budget='budget exhausted (not scored)',
    status_no_answer='no final answer: {why} (not scored)',
    no_answer_why={'reasoning_only': 'only reasoning (see reasoning below)', 'tool_call_only': 'only a tool call'},
    status_scored='scored',
    status_not_scored='not scored',
    meta_score='score {}',
    meta_judge_rating='judge rating {}',
    meta_judge='judge {}',
    meta_rule_recall='rule recall {}',
    meta_scoring='scoring: {}',
    no_answer_recorded='(no answer recorded)',
    reasoning='reasoning',
    more_in_results='{n} more in the results file',
    answers_heading='{length} {unit} · depth {depth}% · {n} sample(s)',
    rule_fallback_note='scored by rule: the judge failed qualification',
    sweep_note='adaptive sweep: {tested} of {total} cells tested; grey = not tested',
    pending_hover='{state} ({finished}/{planned} samples finished)',
    pending='pending',
    not_tested='not tested (left out by the sweep)',
    legend_pending='pending (planned, not answered yet)',
    legend_not_tested='not tested (left out by the sweep)',
    italics_note='; a score in italics: some of its samples are still pending.',
    progress_cells='{done}/{total} cells done',
    progress_samples='{done}/{total} samples',
    progress_tokens='{sent}/{planned} prompt tokens sent{by}',
    progress_errors='{n} error(s)',
    progress_states={'running': 'running', 'complete': 'run complete', 'stopped': 'run stopped'},
    progress_updated='updated {time}',
    unfinished_note='run {status}: {done}/{total} cells done, grey ones pending',
)

# EvalScope's Chinese terms (docs/zh/glossary.md): 针, 裁判模型, 单元格, token, 子集.
ZH = PageText(
    html_lang='zh-CN',
    default_title='大海捞针',
    subtitle='子集：{subset} · 平均准确率 {mean}（n={n}）',
    lengths_in=' · 长度单位：{unit}',
    not_available='无',
    effective_png='有效长度：{label}',
    effective_html='有效上下文长度：{label}',
    effective_column='有效长度',
    depth_axis='针的深度（%）',
    length_axis='上下文长度（{unit}）',
    named_tokens='{name} token',
    tokens='token',
    accuracy='准确率',
    empty_png='灰色 = 没有已评分的样本',
    no_scored_sample='没有已评分的样本',
    click_hint='点击单元格，在下方查看它的回答。',
    hover_lines=(
        '上下文长度：{}',
        '深度：{}%',
        '平均准确率：{}',
        '样本数：{}',
        '规则召回率均值：{}',
        '裁判模型失败：{}',
        '错误：{}',
        '95% 置信区间：{}',
        '没有最终答案（不评分）：{}',
    ),
    no_data='无数据',
    status_error='错误：{error}',
    status_budget='预算用尽（不评分）',
    status_no_answer='没有最终答案：{why}（不评分）',
    no_answer_why={'reasoning_only': '只有推理（见下方推理）', 'tool_call_only': '只有工具调用'},
    status_scored='已评分',
    status_not_scored='未评分',
    meta_score='得分 {}',
    meta_judge_rating='裁判模型打分 {}',
    meta_judge='裁判模型 {}',
    meta_rule_recall='规则召回率 {}',
    meta_scoring='评分方式：{}',
    no_answer_recorded='（没有记录回答）',
    reasoning='推理',
    more_in_results='另有 {n} 个样本，见结果文件',
    answers_heading='{length} {unit} · 深度 {depth}% · {n} 个样本',
    rule_fallback_note='按规则评分：裁判模型未通过裁判模型检查',
    sweep_note='自适应扫描：{total} 个单元格中测试了 {tested} 个；灰色 = 未测试',
    pending_hover='{state}（{finished}/{planned} 个样本已完成）',
    pending='等待中',
    not_tested='未测试（扫描时略过）',
    legend_pending='等待中（已计划，尚未回答）',
    legend_not_tested='未测试（扫描时略过）',
    italics_note='；斜体的分数：该单元格还有样本在等待。',
    progress_cells='单元格 {done}/{total} 已完成',
    progress_samples='样本 {done}/{total}',
    progress_tokens='已发送提示 token {sent}/{planned}{by}',
    progress_errors='{n} 个错误',
    progress_states={'running': '运行中', 'complete': '运行完成', 'stopped': '运行已停止'},
    progress_updated='更新于 {time}',
    unfinished_note='{state}：单元格 {done}/{total} 已完成，灰色的仍在等待',
)

_PAGE_TEXTS = {'en': EN, 'zh': ZH}


def page_text(language: str | None) -> PageText:
    """The heatmap words for a subset's language ('en', 'zh'); English for any other."""
    return _PAGE_TEXTS.get(language or 'en', EN)


def subset_language(subset: str, languages: Mapping[str, str] | None = None) -> str:
    """The language of a subset's pages: as the run's subsets say (``languages``: subset -> 'en' / 'zh'), else the
    built-in subset's of that name (a results file does not record it: `evalscope-niah plot`), else English."""
    if languages and subset in languages:
        return languages[subset]
    default = DEFAULT_SUBSETS.get(subset)
    return (default.language if default is not None else None) or 'en'
