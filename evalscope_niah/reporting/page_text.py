"""The words the heatmaps show (PNG, HTML page, live page), one table per language: a subset's files speak its
language ('en', 'zh'), and every word they show is here, so a language is added in one place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields

from ..params.subsets import DEFAULT_SUBSETS

__all__ = ['EN', 'ZH', 'PageText', 'all_words', 'page_text', 'reason_text', 'subset_language']


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
    served_tokens: str  # lengths relabelled with the server's counts, its model unnamed (`plot --served-tokens`)
    served_title: str  # the default title of `plot --served-tokens`
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
    bound_at_least: str  # {label}: an effective length known only from below
    bound_unknown: str  # the effective length when even the shortest length is unknown
    bound: str  # {known} {length} {reason}
    too_few_scored: str  # why a length is unknown when no sample of it failed to score
    unknown_cell: str  # {reason}: a cell with samples and no score
    # length_status's words for samples sent and not scored ('server errors'), each as '{n} ...' in this language.
    unscored_kinds: Mapping[str, str]
    list_separator: str  # between the parts of a list in running text ('3 server errors, 1 cut reply')


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
    served_tokens='served tokens',
    served_title='Needle in a haystack (tokens the model read)',
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
    bound_at_least='at least {label}',
    bound_unknown='unknown',
    bound='{known}; {length} unknown: {reason}',
    too_few_scored='too few scored samples',
    unknown_cell='unknown ({reason})',
    unscored_kinds={
        'server error': '{n} server error',
        'server errors': '{n} server errors',
        'cut reply': '{n} cut reply',
        'cut replies': '{n} cut replies',
        'reply with no final answer': '{n} reply with no final answer',
        'replies with no final answer': '{n} replies with no final answer',
        'sample not tested': '{n} sample not tested',
        'samples not tested': '{n} samples not tested',
    },
    list_separator=', ',
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
    served_tokens='模型读入的 token',
    served_title='大海捞针（按模型读入的 token 计）',
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
    bound_at_least='至少 {label}',
    bound_unknown='未知',
    bound='{known}；{length} 未知：{reason}',
    too_few_scored='已评分的样本太少',
    unknown_cell='未知（{reason}）',
    unscored_kinds={
        'server error': '{n} 个服务错误',
        'server errors': '{n} 个服务错误',
        'cut reply': '{n} 个被截断的回复',
        'cut replies': '{n} 个被截断的回复',
        'reply with no final answer': '{n} 个没有最终答案的回复',
        'replies with no final answer': '{n} 个没有最终答案的回复',
        'sample not tested': '{n} 个样本未测试',
        'samples not tested': '{n} 个样本未测试',
    },
    list_separator='、',
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


_COUNTED = re.compile(r'(\d+) (.+)')


def reason_text(reason: str | None, text: PageText) -> str:
    """Why a length or cell is unknown (length_status.unscored_reason's '3 server errors, 1 cut reply', or None:
    too few scored samples) in ``text``'s language; a part it has no words for is shown as it is."""
    if reason is None:
        return text.too_few_scored
    parts = []
    for part in reason.split(', '):
        counted = _COUNTED.fullmatch(part)
        words = text.unscored_kinds.get(counted.group(2)) if counted else None
        parts.append(words.format(n=counted.group(1)) if counted and words else part)
    return text.list_separator.join(parts)


def all_words(text: PageText) -> list[str]:
    """Every string of ``text`` (tuples and mappings' values included, in field order): what a font drawing its
    language must have the glyphs of."""
    found: list[str] = []
    pending: list[object] = [getattr(text, field.name) for field in fields(text)]
    while pending:
        value = pending.pop(0)
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, Mapping):
            pending[:0] = value.values()
        elif isinstance(value, tuple):
            pending[:0] = value
    return found
