"""The Chinese docs (README_zh.md, docs/zh/*.md) and the Chinese the code generates for them (the parameter
descriptions of docs/hooks, each task's ``description_zh``) use EvalScope's own Chinese terms (docs/zh/glossary.md),
full-width punctuation between Chinese characters, no straight quotes in prose and no English sentence outside
code. Each failure names file:line and what to write instead."""

from __future__ import annotations

import re
import runpy
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
