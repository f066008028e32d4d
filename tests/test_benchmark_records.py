"""Every figure the README and the docs quote from a benchmark equals its dated record in benchmarks/results/ (a
re-measure updates both or fails here), every record has the one shape the benchmarks write, and the parts of the
docs that quote measurements hold no figure without a record."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.records import RESULTS, ROOT, check_references, unreferenced

PAGES = sorted([ROOT / 'README.md', ROOT / 'README_zh.md', *ROOT.glob('docs/*/*.md')])
PAGED = ('performance', 'index', 'scoring', 'many-gpus')
FENCE = re.compile(r'^```.*?^```', flags=re.MULTILINE | re.DOTALL)


def _section(text: str, heading: str) -> str:
    """The text under ``heading`` (a '## ' line) up to the next '## ' heading."""
    start = text.index(f'\n## {heading}\n')
    end = text.find('\n## ', start + 1)
    return text[start : end if end > 0 else None]


def _paragraphs_naming(text: str, needle: str) -> str:
    return '\n\n'.join(part for part in text.split('\n\n') if needle in part)


def _lines_before(text: str, needle: str, *, count: int = 3) -> str:
    """The line holding ``needle`` and the lines of its paragraph or list item before it, to ``count`` lines (a
    Chinese paragraph is one source line, an English one wraps: either way no neighbouring block is taken in)."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if needle in line)
    start = at
    while (
        at - start + 1 < count
        and start > 0
        and not lines[start].lstrip().startswith(('- ', '* '))
        and lines[start - 1].strip()
        and not lines[start - 1].lstrip().startswith('|')
    ):
        start -= 1
    window = '\n'.join(lines[start : at + 1])
    # To the end of the needle's sentence: a Chinese paragraph on one line holds the sentences after it too.
    after = window.index(needle)
    ends = [end for end in (window.find('。', after), window.find('. ', after)) if end >= 0]
    return window[: min(ends) + 1] if ends else window


def _quoting_parts() -> dict[str, str]:
    """The parts of the docs that quote measurements: performance pages whole, the README's and the home page's
    reasons to switch, the scoring page's agreement table and paste-check cost, and the many-GPUs page's summary of
    round robin's cost and its simulation at scale."""
    read = {page: page.read_text(encoding='utf-8') for page in PAGES}
    parts = {}
    for language, heading in (('', 'Why switch from the built-in'), ('_zh', '为什么换掉内置基准')):
        parts[f'README{language}.md'] = _section(read[ROOT / f'README{language}.md'], heading)
    for language in ('en', 'zh'):
        docs = ROOT / 'docs' / language
        parts[f'docs/{language}/performance.md'] = FENCE.sub('', read[docs / 'performance.md'])
        scoring = read[docs / 'scoring.md']
        # The agreement table, the paragraph introducing it, the one after it and the paste check's cost.
        parts[f'docs/{language}/scoring.md'] = '\n\n'.join(
            _paragraphs_naming(scoring, needle) for needle in ('bench_real_answers.py', 'real_answers-')
        )
        parts[f'docs/{language}/index.md'] = _paragraphs_naming(read[docs / 'index.md'], '- **')
        # The sentences around round robin's cost, the simulation's table and what it says (the measured router
        # tables are transcribed in router_grids-*.json, not referenced cell by cell).
        gpus = read[docs / 'many-gpus.md']
        parts[f'docs/{language}/many-gpus.md'] = '\n\n'.join(
            [_lines_before(gpus, 'round_robin_over_one_max'), _lines_before(gpus, 'hash_balance/128', count=2)]
            + [_paragraphs_naming(gpus, needle) for needle in ('rows/1m 8 ', 'key_saving/1m 8/')]
        )
    return parts


@pytest.mark.parametrize('page', PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_each_quoted_figure_equals_its_record(page: Path) -> None:
    mismatches = check_references(page.read_text(encoding='utf-8'), str(page.relative_to(ROOT)))
    assert not mismatches, '\n'.join(
        f'{m.where}: says {m.figure}, its record {m.reference} says {m.expected}' for m in mismatches
    )


def test_the_measuring_parts_quote_no_figure_without_a_record() -> None:
    parts = _quoting_parts()
    assert all(parts.values()), [name for name, text in parts.items() if not text]
    found = [f'{name}: {figure}' for name, text in parts.items() for figure in unreferenced(text)]
    assert not found, 'figures with no <!-- record: NAME.json#FIGURE --> after them:\n' + '\n'.join(found)


def test_the_pages_quote_records() -> None:
    """The check is not vacuous: the performance pages and the README reference records."""
    for name in ('README.md', 'README_zh.md', *(f'docs/{lang}/{page}.md' for lang in ('en', 'zh') for page in PAGED)):
        assert '<!-- record: ' in (ROOT / name).read_text(encoding='utf-8'), name


@pytest.mark.parametrize('record', sorted(RESULTS.glob('*.json')), ids=lambda path: path.name)
def test_every_record_has_the_one_shape(record: Path) -> None:
    data = json.loads(record.read_text(encoding='utf-8'))
    assert record.name == f'{record.stem.rsplit("-", 3)[0]}-{data["date"]}.json'
    assert data['benchmark'] and data['command'].startswith(('python benchmarks/', 'bash benchmarks/'))
    assert {'cores', 'cpu', 'load_note'} <= set(data['machine'])
    assert isinstance(data['figures'], dict) and data['figures']
    # A record not written by its script says where its figures come from and when they were measured.
    if 'source' in data:
        assert data['source'] and re.fullmatch(r'\d{4}-\d\d-\d\d', data['measured'])


def test_a_figure_that_drifts_from_its_record_is_named() -> None:
    good = (
        '1.5×<!-- record: run-2026-11-25.json#smoke/ratio_cold --> and '
        '16,698<!-- record: run-2026-11-25.json#judge_input/builtin_tokens -->'
    )
    assert check_references(good, 'x') == []
    drifted = good.replace('1.5×', '1.6×').replace('16,698', '16,699')
    assert [(m.figure, m.expected) for m in check_references(drifted, 'x')] == [('1.6', '1.5'), ('16,699', '16,698')]
    missing = check_references('2×<!-- record: run-2026-11-25.json#smoke/nothing -->', 'x')
    assert missing and 'unreadable' in missing[0].expected


def test_an_unreferenced_figure_is_named_but_a_goal_column_is_not() -> None:
    table = '| what | ratio | goal |\n| --- | --- | --- |\n| a | 3.7×<!-- record: r.json#a --> | 3× |'
    assert unreferenced(table) == []
    assert unreferenced(table.replace('<!-- record: r.json#a -->', '')) == ["'3.7×' in: | a | 3.7× ||"]
    assert unreferenced('takes 2.1 s, and `0.4 s` in code is not a figure') == [
        "'2.1 s' in: takes 2.1 s, and  in code is not a figure"
    ]
