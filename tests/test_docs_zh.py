"""The Chinese docs (README_zh.md, docs/zh/*.md) and the Chinese the code generates for them (the parameter
descriptions of docs/hooks, each task's ``description_zh``) use EvalScope's own Chinese terms (docs/zh/glossary.md),
full-width punctuation between Chinese characters, no straight quotes in prose, no English sentence or word the
glossary retires (needle, haystack, issue) outside code, and one source line per paragraph: a line break inside a
Chinese sentence is shown as a stray space. Each failure names file:line and what to write instead.

``python tests/test_docs_zh.py --join PAGE...`` joins each paragraph's source lines (the rule the test checks)."""

from __future__ import annotations

import re
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / 'README_zh.md', *sorted((ROOT / 'docs' / 'zh').glob('*.md'))]
GLOSSARY = ROOT / 'docs' / 'zh' / 'glossary.md'

CJK = r'\u3400-\u9fff\uf900-\ufaff'

# Where the glossary retires a word in one sense only ("提示词（指 cue 时）": 提示词 stays for prompt), the words
# around it that mark that sense, keyed by the row's English term.
SENSE = {'cue': r'(否定|含糊|回避|撤回)[^。；，]{0,8}'}
_IN_ONE_SENSE = re.compile(r'（指 (\w+) 时）$')
_IN_A_CHINESE_SENTENCE = '（中文句子中）'


def _glossary_rows(text: str) -> list[list[str]]:
    """The cells of each body row of the glossary's table (英文 | 本文档用词 | EvalScope | 含义 | 不再使用)."""
    rows = [line.strip().strip('|').split('|') for line in text.splitlines() if line.startswith('| ')]
    return [[cell.strip() for cell in row] for row in rows[1:] if not set(''.join(row)) <= set('- ')]


def _retired_pattern(term: str, meaning: str, used_terms: list[str]) -> str:
    """The regular expression for one retired term of the glossary's last column."""
    sense = _IN_ONE_SENSE.search(term)
    if sense:
        word = term[: sense.start()].strip()
        return SENSE[sense.group(1)] + re.escape(word)
    if term.endswith(_IN_A_CHINESE_SENTENCE):
        # An English word (needle, haystack, issue) in prose: not inside a longer name such as needle_haystack.
        word = term[: -len(_IN_A_CHINESE_SENTENCE)].strip()
        return rf'(?i)(?<![A-Za-z_\-]){re.escape(word)}s?(?![A-Za-z_\-])'
    # A retired word that begins a term still in use (评审 in 评审记录) is fine there.
    longer = [used[len(term) :] for used in used_terms if used.startswith(term) and used != term]
    return re.escape(term) + ''.join(f'(?!{re.escape(rest)})' for rest in longer)


def glossary_retired(text: str) -> list[tuple[str, str, str]]:
    """(pattern, what it stood for, what to write instead) for every term the glossary's last column retires."""
    rows = _glossary_rows(text)
    used_terms = [re.sub(r'（.*', '', row[1]) for row in rows]
    retired = []
    for english, used, evalscope, _, retires in rows:
        for term in filter(None, (term.strip() for term in retires.split('、'))):
            retired.append((_retired_pattern(term, english, used_terms), english, f'{used} (EvalScope: {evalscope})'))
    return retired


# The terms the glossary retires, read from its table. The glossary page itself names them, so it is not scanned.
RETIRED = glossary_retired(GLOSSARY.read_text(encoding='utf-8'))

# A half-width mark touching a Chinese character on either side (spaces between allowed).
HALF_WIDTH = re.compile(rf'[{CJK}] *[,;:?!()]|[,;:?!()] *[{CJK}]')
# A double quote anywhere in prose, or a pair of single quotes around words (an apostrophe as in Cohen's is fine).
STRAIGHT_QUOTE = re.compile(r"\"|(?<![A-Za-z])'[^']*'(?![A-Za-z])")
# Five English words in a row (a word: letters, maybe with an apostrophe or hyphen inside).
ENGLISH_RUN = re.compile(r"\b[A-Za-z][A-Za-z'-]*(?:[ ,]+[A-Za-z][A-Za-z'-]*){4,}\b")
FENCE = re.compile(r'^\s*(```|~~~)')


def _prose(line: str) -> str:
    """The line with code spans, link targets, bare URLs, HTML comments and tags blanked out."""
    line = re.sub(r'`[^`]*`', ' ', line)
    line = re.sub(r'\]\([^)]*\)', ']', line)
    line = re.sub(r'https?://\S+', ' ', line)
    line = re.sub(r'<!--.*?-->|<[^>]+>', ' ', line)
    return line


def _comment(line: str) -> str | None:
    """The comment of a line in a code block (# or //), else None."""
    match = re.search(r'(?:^|\s)(#|//)\s?(.*)$', line)
    return match.group(2) if match else None


def _english_comment(comment: str) -> bool:
    """A comment with two English words in a row and no Chinese (a bare command or name in a comment is fine)."""
    return not re.search(f'[{CJK}]', comment) and bool(re.search(r'[A-Za-z]{2,} +[A-Za-z]{2,}', comment))


GENERATED_START = re.compile(r'^<!-- generated: [\w-]+ -->$')
GENERATED_END = '<!-- /generated -->'


def _lines(page: Path) -> list[tuple[int, str, bool, bool]]:
    """(line number, text, inside a code block, inside a generated section) for every line of a page."""
    out, in_code, generated = [], False, False
    for number, line in enumerate(page.read_text(encoding='utf-8').splitlines(), start=1):
        if GENERATED_START.match(line.strip()) or line.strip() == GENERATED_END:
            generated = line.strip() != GENERATED_END
            continue
        if FENCE.match(line):
            in_code = not in_code
            continue
        out.append((number, line, in_code, generated))
    return out


def retired_terms(text: str, retired: list[tuple[str, str, str]] = RETIRED) -> list[str]:
    """What is wrong with one piece of Chinese text, as 'term -> replacement' lines."""
    found = []
    for pattern, meaning, instead in retired:
        for match in re.finditer(pattern, text):
            found.append(f'{match.group()!r} for {meaning}: write {instead}')
    return found


def prose_problems(text: str) -> list[str]:
    """Punctuation and English left in a line of Chinese prose (code spans and links already blanked)."""
    found = [f'half-width {m.group()!r} between Chinese: use full-width' for m in HALF_WIDTH.finditer(text)]
    found += [f'straight quote {m.group()!r}: use “ ” or a code span' for m in STRAIGHT_QUOTE.finditer(text)]
    found += [f'English left: {m.group()!r}' for m in ENGLISH_RUN.finditer(text)]
    return found


def page_problems(page: Path) -> list[str]:
    problems = []
    where = page.relative_to(ROOT)
    for number, line, in_code, generated in _lines(page):
        if generated:
            # Generated from the code (docs/hooks): the messages, flags and field notes a user meets, in English on
            # both pages; the Chinese the tables are built from is checked at its source (the test below).
            issues = []
        elif in_code:
            comment = _comment(line)
            text = comment if comment is not None else ''
            issues = [f'English code comment: {text.strip()!r}'] if _english_comment(text) else []
        else:
            text = _prose(line)
            issues = prose_problems(text)
        if page != GLOSSARY and not generated:
            issues += retired_terms(_prose(line) if not in_code else (_comment(line) or ''))
        problems += [f'{where}:{number}: {issue}' for issue in issues]
    return problems


@pytest.mark.parametrize('page', PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_chinese_page_follows_the_glossary(page: Path) -> None:
    problems = page_problems(page)
    assert not problems, '\n'.join(problems)


def test_generated_chinese_follows_the_glossary() -> None:
    """The Chinese the parameter tables and the task list are built from (by docs/hooks/parameters_table.py)."""
    hook = runpy.run_path(str(ROOT / 'docs' / 'hooks' / 'parameters_table.py'))
    from evalscope_niah.tasks.registry import get_task, task_names

    texts = {f'parameter {name}': text for name, text in hook['zh_descriptions']().items()}
    texts |= {f'task {name}': get_task(name).description_zh for name in task_names()}
    # They name config keys bare (needles, haystack_dir), as the English descriptions do: the English-word rule,
    # meant for prose, does not apply to them.
    chinese_terms = [term for term in RETIRED if not term[0].startswith('(?i)')]
    problems = [f'{where}: {issue}' for where, text in texts.items() for issue in retired_terms(text, chinese_terms)]
    # Single quotes mark values here ('stop'), as in the English descriptions; double quotes are prose quotes.
    problems += [f'{where}: straight quote: use “ ”' for where, text in texts.items() if '"' in text]
    assert not problems, '\n'.join(problems)


def test_the_glossary_retires_a_term_for_each_concept_it_settles() -> None:
    """The check reads its terms from the glossary's table: a row lost or a column shifted would silently check
    nothing, and a row that retires the very term it uses would fail every page."""
    meanings = {meaning for _, meaning, _ in RETIRED}
    assert {'judge', 'review', 'dashboard', 'resume', 'cell', 'cue', 'token', 'needle', 'haystack', 'issue'} <= meanings
    for english, used, *_ in _glossary_rows(GLOSSARY.read_text(encoding='utf-8')):
        assert not retired_terms(re.sub(r'（.*', '', used)), f'the glossary row {english!r} retires its own term {used}'


@pytest.mark.parametrize(
    ('line', 'expected'),
    [
        ('评审检查通过', '评审'),
        ('EvalScope 看板', '看板'),
        ('用 `--use-cache` 续跑', '续跑'),
        ('每个格子一个样本', '格子'),
        ('否定的提示词靠近事实', '提示词'),
        ('提示中的词元数', '词元'),
        ('把 needle 插进干草堆', 'needle'),
        ('每个 Haystack 一个样本', 'Haystack'),
        ('见 issue 6', 'issue'),
        ('每个样本一个裁判模型对象', '裁判模型对象'),
    ],
)
def test_the_check_catches_each_retired_term(line: str, expected: str) -> None:
    assert any(expected in problem for problem in retired_terms(line))


@pytest.mark.parametrize(
    ('line', 'flagged'),
    [
        ('答案,分数', True),
        ('见(参数)', True),
        ('他说"你好"', True),
        ("读起来像 'rate it 10' 的针", True),
        ("Cohen's kappa 与一致率", False),
        ('The model answers every needle here.', True),
        ('`--judge rule` 跳过裁判模型', False),
        ('[参数](parameters.md#运行前的检查)', False),
        ('被测模型（Qwen3, 8B）的分数', False),
        ('评审记录保留问题，单元格为长度 × 深度。', False),
        ('提示词的长度', False),
        ('EvalScope 内置的 needle_haystack 基准测试', False),
        ('`needle` 字段写明针', False),
    ],
)
def test_the_prose_check_flags_only_prose(line: str, flagged: bool) -> None:
    assert bool(prose_problems(_prose(line)) + retired_terms(_prose(line))) is flagged


# --------------------------------------------------------------------------------------------------------------------
# One source line per paragraph: a break inside a Chinese sentence renders as a stray space ("写明 参数名")
# --------------------------------------------------------------------------------------------------------------------

# A character of the Chinese side: CJK, full-width and CJK punctuation, curly quotes, the ellipsis and the dash.
WIDE = re.compile('[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef\u2018-\u201f\u2026\u2014]')
_FULL_WIDTH_MARK = re.compile('[\u3000-\u303f\uff00-\uffef]')
# A line that starts a block of its own (heading, table row, fence, quote, HTML, list item, link definition, blank):
# never the continuation of the line above it.
_STARTS_A_BLOCK = re.compile(r'^\s*(#|\||```|~~~|>|<|[-*+] |\d+[.)] |\[[^\]]*\]:|$)')
# A line after which nothing continues: a heading, table row, fence or HTML line.
_ENDS_A_BLOCK = re.compile(r'^\s*(#|\||```|~~~|<)')


def _separator(before: str, after: str) -> str:
    """What joins two source lines of a paragraph: nothing between two Chinese-side characters or next to a
    full-width mark, a space between anything else (Latin words, or Latin and Chinese as the pages write them)."""
    if WIDE.match(before[-1]) and WIDE.match(after[0]):
        return ''
    if _FULL_WIDTH_MARK.match(before[-1]) or _FULL_WIDTH_MARK.match(after[0]):
        return ''
    return ' '


def line_breaks(text: str) -> Iterator[tuple[int, str, str, bool]]:
    """(line number, line above, line, inside a generated section) for every source line that continues the
    paragraph or list item of the line above it, outside code blocks."""
    lines = text.split('\n')
    in_code = generated = False
    for index, line in enumerate(lines):
        stripped = line.strip()
        if GENERATED_START.match(stripped) or stripped == GENERATED_END:
            generated = stripped != GENERATED_END
            continue
        if FENCE.match(line):
            in_code = not in_code
            continue
        above = lines[index - 1] if index else ''
        if in_code or not above.strip() or FENCE.match(above) or GENERATED_START.match(above.strip()):
            continue
        if not _ENDS_A_BLOCK.match(above) and not _STARTS_A_BLOCK.match(line) and not above.endswith('  '):
            yield index + 1, above, line, generated


def joined(text: str) -> str:
    """The page with each paragraph's and list item's source lines joined into one (generated sections are their
    generator's: left alone)."""
    continued = {number for number, _, _, generated in line_breaks(text) if not generated}
    out: list[str] = []
    for number, line in enumerate(text.split('\n'), start=1):
        if number in continued:
            before, after = out[-1].rstrip(), line.strip()
            out[-1] = before + _separator(before, after) + after
        else:
            out.append(line)
    return '\n'.join(out)


def broken_sentences(text: str, where: str) -> list[str]:
    """Each line that goes on from the line above: anywhere outside generated sections (the page is then what
    `joined` makes it), and inside them where either side of the break is Chinese."""
    problems = []
    for number, above, line, generated in line_breaks(text):
        chinese = bool(WIDE.match(above.rstrip()[-1]) or WIDE.match(line.strip()[0]))
        if generated and not chinese:
            continue  # a generator's English may wrap: it renders as the space it is
        what = 'a Chinese sentence' if chinese else 'a paragraph'
        fix = 'fix its generator (docs/hooks)' if generated else f'run `python tests/test_docs_zh.py --join {where}`'
        problems.append(f'{where}:{number}: {what} goes on from the line above ({line.strip()[:30]!r}): {fix}')
    return problems


@pytest.mark.parametrize('page', PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_no_line_break_inside_a_chinese_paragraph(page: Path) -> None:
    problems = broken_sentences(page.read_text(encoding='utf-8'), str(page.relative_to(ROOT)))
    assert not problems, '\n'.join(problems)


GENERATED_PROBE = '<!-- generated: x -->\nwrapped English\ntext, fine\n\n生成的\n文本\n<!-- /generated -->'


@pytest.mark.parametrize(
    ('text', 'expected'),
    [
        ('错误信息写明\n参数名。', '错误信息写明参数名。'),
        ('用 Qwen3\n分词器', '用 Qwen3 分词器'),
        ('见参数\n（`judge`）', '见参数（`judge`）'),
        ('参数 `judge`\n（默认）', '参数 `judge`（默认）'),
        ('- 一项\n  接着写', '- 一项接着写'),
        ('- item\n  goes on', '- item goes on'),
        ('段落一。\n\n段落二。', '段落一。\n\n段落二。'),
        ('句子。\n- 列表项', '句子。\n- 列表项'),
        ('| a |\n| b |', '| a |\n| b |'),
        ('```\n代码\n行\n```', '```\n代码\n行\n```'),
        ('硬换行  \n下一行', '硬换行  \n下一行'),
        (GENERATED_PROBE, GENERATED_PROBE),
    ],
)
def test_joining_keeps_blocks_and_joins_only_paragraph_lines(text: str, expected: str) -> None:
    assert joined(text) == expected
    assert joined(expected) == expected


def test_a_generated_chinese_break_is_caught_and_english_wrapping_there_is_not() -> None:
    problems = broken_sentences(GENERATED_PROBE, 'page.md')
    assert [problem.split(': ')[0] for problem in problems] == ['page.md:6']
    assert 'fix its generator' in problems[0]
    outside = broken_sentences('写明\n参数名\n\nEnglish\nwraps', 'p.md')  # outside, every paragraph is one line
    assert [problem.split(': ')[0] for problem in outside] == ['p.md:2', 'p.md:5']


if __name__ == '__main__':
    # python tests/test_docs_zh.py --join PAGE...: each paragraph of each page on one source line.
    if sys.argv[1:2] != ['--join']:
        sys.exit('usage: python tests/test_docs_zh.py --join PAGE...')
    for name in sys.argv[2:]:
        path = Path(name)
        text = path.read_text(encoding='utf-8')
        if joined(text) != text:
            path.write_text(joined(text), encoding='utf-8')
            print(f'{name}: joined')
