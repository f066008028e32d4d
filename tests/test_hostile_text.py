"""Text we did not write is inert wherever it lands (issue 37, item 4): results files whose names, tokenizer and
answers hold markup, terminal escapes, bidi overrides and formulas go through `plot`, `compare`, the run's writers,
the demo's printer, `preview` and the logs; the pages are parsed as a browser tokenizes them, and every printed
line and every file written is scanned."""

from __future__ import annotations

import csv
import importlib
import io
import json
import logging
import os
import pkgutil
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

import evalscope_niah
from evalscope_niah import demo
from evalscope_niah.cli import main
from evalscope_niah.escaping import FORMULA_STARTS, inert_logger, shown_text, terminal_text, unsafe_characters
from evalscope_niah.reporting.labels import length_unit
from evalscope_niah.reporting.outputs import CELLS_FILE, RESULTS_FILE, write_run_outputs
from evalscope_niah.reporting.result_files import read_cells_csv, read_results, read_summary_json
from evalscope_niah.reporting.sample_record import SampleResult
from tests.support.results import EFFECTIVE_THRESHOLD

# What a browser, a terminal and a spreadsheet would act on.
# No '/' or '\\': the whole name is the length unit. '$x^{$' is broken mathtext: matplotlib would fail to draw it.
TOKENIZER = '<!--<script>\u2028\u2029&amp;<b>bold<b>$x^{$\u202e'
TITLE = '\x1b]0;pwned\x07'  # retitles the terminal
CLEAR = '\x1b[2J'  # clears it
BIDI = '\u202egnp.exe\u202c\u2066\u2069'
FORMULA = '=HYPERLINK("http://evil.example","click")'
SUBSETS = (f'{TITLE}{CLEAR}</script><!--{BIDI}', FORMULA)
ANSWER = f'</script><script>alert(1)</script><!--<script>{CLEAR}{BIDI}\x85\x9b31m\u2028'
MODEL_DIR = f'model{TITLE}{BIDI}'
# Every element a page of ours has; anything else was injected.
PAGE_TAGS = {
    'html', 'head', 'meta', 'title', 'style', 'body', 'h1', 'h2', 'p', 'table', 'tbody', 'tfoot', 'tr', 'th', 'td',
    'div', 'span', 'section', 'pre', 'details', 'summary', 'script',
}  # fmt: skip


def _results(*, subsets=SUBSETS, tokenizer=TOKENIZER, answer=ANSWER) -> list[SampleResult]:
    return [
        SampleResult(
            subset=subset,
            context_length=length,
            depth_percent=depth,
            accuracy=float(depth == 0.0),
            rule_recall=1.0,
            levenshtein=1.0,
            judge_accuracy=None,
            judge_status='not_called',
            answer=answer,
            reasoning=answer,
            tokenizer=tokenizer,
        )
        for subset in subsets
        for length in (1000, 2000)
        for depth in (0.0, 50.0)
    ]


def _work_dir(root: Path, results: list[SampleResult], *, model: str = MODEL_DIR) -> Path:
    report = root / 'reports' / model
    report.mkdir(parents=True)
    (report / RESULTS_FILE).write_text(''.join(json.dumps(r.to_dict()) + '\n' for r in results), encoding='utf-8')
    return root


def _assert_shown_not_obeyed(text: str, *, keep: str = '') -> None:
    assert unsafe_characters(text, keep=keep) == [], f'raw control characters in {text[:200]!r}'


def _assert_files_inert(root: Path) -> list[Path]:
    """Every file under root other than a PNG and the results files we planted holds no raw control character."""
    written = [p for p in root.rglob('*') if p.is_file() and p.suffix != '.png' and p.name != RESULTS_FILE]
    for path in written:
        # A CR inside a quoted CSV field is a line end for a spreadsheet; nothing else is allowed.
        _assert_shown_not_obeyed(path.read_text(encoding='utf-8'), keep='\r' if path.suffix == '.csv' else '')
        assert '\ufffd' not in path.read_text(encoding='utf-8')
    return written


class _Page(HTMLParser):
    """The page's elements, comments and the raw text of each script element, as a browser's tokenizer reads them."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.events: list[tuple[str, str]] = []
        self.comments: list[str] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in_script = False
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.events.append(('start', tag))
        if tag == 'script':
            self._in_script = True
            self.scripts.append('')

    def handle_endtag(self, tag: str) -> None:
        self.events.append(('end', tag))
        self._in_script = False

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)


def _pages(root: Path) -> dict[str, str]:
    return {path.name: path.read_text(encoding='utf-8') for path in sorted(root.rglob('*.html'))}


def _hover_lines(script: str) -> list[str]:
    literal = re.match(r'\n\(function\(\)\{\nvar L=(.*?),t=document', script, re.DOTALL)
    assert literal is not None
    return json.loads(literal.group(1))


def test_a_hostile_tokenizer_name_stays_inside_the_page_script_and_parses_back(tmp_path: Path) -> None:
    """The issue's case: a tokenizer named '<!--<script>' went into the script raw, and the browser read the rest of
    the page as script. Now the script holds no '<' at all (in a browser's script-data state only '<' can open
    '<!--', '<script' or '</script'), it ends where ours ends, and its data is the name, exactly."""
    assert length_unit(TOKENIZER) == f'{TOKENIZER} tokens'
    hostile = _work_dir(tmp_path / 'hostile', _results())
    benign = _work_dir(tmp_path / 'benign', _results(subsets=('a', 'b'), tokenizer='Qwen/Qwen3-0.6B', answer='x'))
    assert main(['plot', str(hostile)]) == 0 and main(['plot', str(benign)]) == 0
    pages, benign_pages = _pages(hostile), _pages(benign)
    assert len(pages) == len(SUBSETS) == len(benign_pages)
    for page, benign_page in zip(pages.values(), benign_pages.values(), strict=True):
        raw_script = page.split('<script>', 1)[1].split('</script>', 1)[0]
        assert '<' not in raw_script and '\u2028' not in raw_script and '\u2029' not in raw_script
        parsed, expected = _Page(page), _Page(benign_page)
        assert parsed.events == expected.events  # the same elements in the same order: none injected, none eaten
        assert {tag for _, tag in parsed.events} <= PAGE_TAGS and parsed.comments == []
        assert parsed.scripts == [raw_script] and raw_script.endswith('})();\n')
        # The data parses back to the name as the page shows it: controls and bidi as their escapes, as drawn text.
        assert _hover_lines(raw_script)[0] == f'context length: {{}} {shown_text(length_unit(TOKENIZER))}'
        shown = ''.join(parsed.text)
        assert terminal_text(ANSWER) in shown and '<script>alert(1)' in shown  # the answer is text, shown whole
        _assert_shown_not_obeyed(page)


def test_the_live_pages_data_holds_text_as_the_final_page_shows_it(tmp_path: Path) -> None:
    """The live page's script draws its data as text (textContent of decoded JSON): every string in it must
    already be shown as the final page shows it, or U+202E, ESC and BEL were drawn raw there (the browser check is
    tests/reporting/test_heatmap_browser.py)."""
    from evalscope_niah.reporting.live import LiveRun, PlannedSample
    from evalscope_niah.reporting.outputs import OutputFiles

    results = _results()
    planned = [PlannedSample(r.subset, r.context_length, r.depth_percent, 10, TOKENIZER) for r in results]
    run = LiveRun(tmp_path, planned, files=OutputFiles(), clock=lambda: 0.0)
    for result in results:
        run.add(result)
    run.update()
    texts = []
    for data_file in tmp_path.glob('*.live.js'):
        data = json.loads(data_file.read_text('utf-8').removeprefix('niahLive(').removesuffix(');\n'))
        texts += _strings(data)
    assert texts and any('\\u202e' in text for text in texts)  # the tokenizer's override, shown
    assert [text for text in texts if unsafe_characters(text, keep='\r')] == []


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [text for item in items for text in _strings(item)]


def test_compare_prints_names_shown_not_obeyed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: compare printed subset and folder names as they were, so '\\x1b]0;' retitled the
    terminal and '\\x1b[2J' cleared it. Each is now shown as its escape, the table still lines up."""
    run = _work_dir(tmp_path / 'run', _results())
    output = tmp_path / 'out' / 'compare.png'
    assert main(['compare', str(run), '--output', str(output)]) == 0
    out, err = capsys.readouterr()
    _assert_shown_not_obeyed(out + err)
    assert '\\u001b]0;pwned\\u0007\\u001b[2J' in out and terminal_text(MODEL_DIR) in out
    table = out.splitlines()[1:4]  # the header row and the model's row under the heading
    assert len({line.index(terminal_text(FORMULA)) for line in table if terminal_text(FORMULA) in line}) == 1
    _assert_files_inert(tmp_path / 'out')
    with open(output.with_suffix('.csv'), encoding='utf-8', newline='') as handle:
        rows = list(csv.reader(handle))
    _assert_cells_are_no_formulas(rows)
    assert [row[3] for row in rows[1:]] == [terminal_text(SUBSETS[0]), "'" + FORMULA]
    assert {row[0] for row in rows[1:]} == {terminal_text(MODEL_DIR)}


def _assert_cells_are_no_formulas(rows: list[list[str]]) -> None:
    for field in (field for row in rows for field in row):
        if field.startswith(tuple(start for start in FORMULA_STARTS if start != "'")):  # "'=": quoted, text
            assert re.fullmatch(r'-\d+(\.\d+)?(e-?\d+)?', field), f'a spreadsheet would run {field!r}'


def test_the_console_itself_gets_no_raw_escape(tmp_path: Path) -> None:
    """Through a real process's stdout and stderr (not pytest's capture): a compare and a failing plot."""
    run = _work_dir(tmp_path / 'run', _results())
    env = {**os.environ, 'PYTHONPATH': str(Path(evalscope_niah.__file__).parents[1])}
    command = [sys.executable, '-m', 'evalscope_niah.cli']
    compared = subprocess.run(
        [*command, 'compare', str(run), '--output', str(tmp_path / 'c.png')], capture_output=True, env=env, timeout=300
    )
    assert compared.returncode == 0, compared.stderr
    bad = _work_dir(tmp_path / 'bad', [], model=f'm{CLEAR}')  # a malformed file's error names its path
    (bad / 'reports' / f'm{CLEAR}' / RESULTS_FILE).write_text('{"subset": 1}\n', encoding='utf-8')
    plotted = subprocess.run([*command, 'plot', str(bad)], capture_output=True, env=env, timeout=300)
    assert plotted.returncode == 1 and b'm\\u001b[2J' in plotted.stderr
    for stream in (compared.stdout, compared.stderr, plotted.stdout, plotted.stderr):
        _assert_shown_not_obeyed(stream.decode('utf-8'))


def test_every_file_a_run_writes_is_inert_and_its_data_kept(tmp_path: Path) -> None:
    """Results JSONL and summary JSON keep the text exactly (JSON escapes), the CSVs quote formulas and show controls,
    the pages escape everything."""
    results = _results()
    write_run_outputs(tmp_path, results, threshold=EFFECTIVE_THRESHOLD, mode='absolute', judge_check={'x': ANSWER})
    written = {path.suffix for path in _assert_files_inert(tmp_path)}
    assert written == {'.csv', '.json', '.html'}
    _assert_shown_not_obeyed((tmp_path / RESULTS_FILE).read_text(encoding='utf-8'))
    cell = lambda r: (r.subset, r.context_length, r.depth_percent)  # noqa: E731
    assert sorted(read_results(tmp_path / RESULTS_FILE), key=cell) == sorted(results, key=cell)
    assert json.loads((tmp_path / 'needle_haystack_judge_check.json').read_text(encoding='utf-8')) == {'x': ANSWER}
    assert set(read_summary_json(tmp_path / 'needle_haystack_summary.json').effective_context_length) == set(SUBSETS)
    for path in tmp_path.glob('*.csv'):
        with open(path, encoding='utf-8', newline='') as handle:
            _assert_cells_are_no_formulas(list(csv.reader(handle)))
    cells = read_cells_csv(tmp_path / CELLS_FILE)
    assert {cell.subset for cell in cells} == {terminal_text(SUBSETS[0]), FORMULA}  # shown; the formula kept
    assert {cell.tokenizer for cell in cells} == {terminal_text(TOKENIZER)}


def test_the_demo_summary_is_shown_not_obeyed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run_outputs(tmp_path, _results(), threshold=EFFECTIVE_THRESHOLD, mode='absolute', plot=False)
    demo._print_summary(tmp_path, say=demo.run_demo.__kwdefaults__['say'])  # the printer run_demo uses
    out = capsys.readouterr().out
    _assert_shown_not_obeyed(out)
    assert f'subset: {terminal_text(SUBSETS[0])}' in out


def test_preview_prints_json_that_is_inert_and_means_the_same(
    fixture_corpus_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    needle = f'The code is\x85 7413.{BIDI}'
    extra = {'needles': [needle], 'context_lengths': [300], 'document_depth_percents': [50]}
    dataset_args = json.dumps(
        {'local_path': str(fixture_corpus_dir), 'subset_list': ['english'], 'extra_params': extra}
    )
    assert main(['preview', '--dataset-args', dataset_args, '--limit', '1']) == 0
    out = capsys.readouterr().out
    _assert_shown_not_obeyed(out)
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert record['needles'] == [needle] and needle in record['messages'][-1]['content']


def _package_loggers() -> dict[str, logging.Logger]:
    found = {}
    for info in pkgutil.walk_packages(evalscope_niah.__path__, 'evalscope_niah.'):
        if info.name.startswith('evalscope_niah.integration'):
            pytest.importorskip('evalscope')
        module = importlib.import_module(info.name)
        if isinstance(getattr(module, 'logger', None), logging.Logger):
            found[info.name] = module.logger
    return found


def test_every_logger_of_ours_makes_its_records_inert() -> None:
    """A logger's filter sees only what is logged on it, so each of ours carries the filter (none is made around
    `inert_logger`), and it reaches every handler: message, arguments and traceback shown, not obeyed."""
    sources = [path for path in Path(evalscope_niah.__file__).parent.rglob('*.py') if path.name != 'escaping.py']
    made_here = [path for path in sources if 'logging.getLogger(__name__)' in path.read_text(encoding='utf-8')]
    assert made_here == []
    loggers = _package_loggers()
    assert len(loggers) >= 10
    for name, logger in loggers.items():
        try:
            raise RuntimeError(f'server said {CLEAR}')
        except RuntimeError as exc:
            record = logger.makeRecord(name, logging.ERROR, __file__, 1, 'got %r then %s', (BIDI, TITLE), exc_info=(
                type(exc), exc, exc.__traceback__))  # fmt: skip
        assert logger.filter(record)
        text = logging.Formatter().format(record)
        _assert_shown_not_obeyed(text)
        assert '\\u001b]0;pwned\\u0007' in text and 'server said \\u001b[2J' in text


def test_evalscope_logs_of_a_run_are_inert(caplog: pytest.LogCaptureFixture) -> None:
    """EvalScope logs a retried call's error body on its own logger (it does not propagate): from the first run's
    adapter on, that logger shows it inert on the console and in eval_log.log alike."""
    pytest.importorskip('evalscope')
    from evalscope_niah.integration.secrets import run_redactor

    run_redactor(None)
    logger = logging.getLogger('evalscope')
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    try:
        logger.warning('Attempt 1 / 2 failed: %s', f'HTTP 500 {ANSWER}')
    finally:
        logger.removeHandler(handler)
    _assert_shown_not_obeyed(stream.getvalue())
    assert terminal_text(ANSWER) in stream.getvalue()


def test_inert_logger_is_the_one_filter(caplog: pytest.LogCaptureFixture) -> None:
    logger = inert_logger('evalscope_niah.tests.hostile')
    assert inert_logger('evalscope_niah.tests.hostile') is logger and len(logger.filters) == 1
    with caplog.at_level(logging.INFO, logger=logger.name):
        logger.info('subset %s', SUBSETS[0])
    _assert_shown_not_obeyed(caplog.text)


def test_a_run_whose_model_answers_hostile_text_writes_and_prints_it_inert(
    fixture_corpus_dir: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """End to end through EvalScope: the answers land in our files and in the logs inert (EvalScope's own console
    colours and progress bars are escape sequences on purpose, so what is printed is searched for the answer's)."""
    pytest.importorskip('evalscope')
    from evalscope import TaskConfig, run_task

    from evalscope_niah.testing.openai_server import OpenAICompatServer
    from tests.support.tasks import task_settings

    caplog.set_level(logging.DEBUG)
    extra = {'context_lengths': [600], 'document_depth_percents': [0, 100]}
    with OpenAICompatServer({'mock-model': lambda messages: ANSWER}, max_seconds=60) as server:
        run_task(TaskConfig(**task_settings(server, fixture_corpus_dir, tmp_path, model='mock-model', extra=extra)))
    report = tmp_path / 'reports' / 'mock-model'
    assert {r.answer for r in read_results(report / RESULTS_FILE)} == {ANSWER.strip()}  # kept, less the ends
    ours = [p for p in report.iterdir() if p.name.startswith('needle_haystack') and p.suffix != '.png']
    assert {p.suffix for p in ours} >= {'.jsonl', '.csv', '.json', '.html'}
    for path in ours:
        _assert_shown_not_obeyed(path.read_text(encoding='utf-8'), keep='\r' if path.suffix == '.csv' else '')
    out, err = capfd.readouterr()
    printed = out + err + caplog.text
    assert not any(raw in printed for raw in (CLEAR, '\u202e', '\x85', '\x9b', '\u2028'))
