"""The live heatmap page in a real browser (Debian's chromium, driven by playwright through `executable_path`;
nothing is downloaded): a clicked cell shows its answers, a pending cell turns into a score while the page stays
open (the run rewrites the data file; the page re-reads it), and no script error is logged. Over file:// (where
Chromium blocks fetch) and over http."""

from __future__ import annotations

import dataclasses
import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalscope_niah.reporting.live import LiveRun, PlannedSample
from evalscope_niah.reporting.outputs import OutputFiles
from evalscope_niah.reporting.sample_record import SampleResult
from tests.support.results import EFFECTIVE_THRESHOLD

CHROMIUM = shutil.which('chromium')
if CHROMIUM is None:
    pytest.skip(
        "Debian's chromium is not installed (apt-get install chromium; .ci/run installs it)", allow_module_level=True
    )
sync_api = pytest.importorskip('playwright.sync_api', reason='the playwright package (the test extra) is missing')

LENGTHS = (600, 900)
DEPTHS = (0.0, 100.0)
HOSTILE_ANSWER = '<img src=x onerror="document.title=\'owned\'">the needle is 42</script>'


class Clock:
    """A clock the test moves: the live run writes when its write interval has passed on it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _result(length: int, depth: float, answer: str, accuracy: float) -> SampleResult:
    return SampleResult(
        subset='english',
        context_length=length,
        depth_percent=depth,
        accuracy=accuracy,
        rule_recall=accuracy,
        levenshtein=0.5,
        judge_accuracy=None,
        judge_status='not_called',
        answer=answer,
        tokenizer='Qwen/Qwen3-0.6B',
    )


@pytest.fixture(scope='module')
def browser() -> Iterator[object]:
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM)  # default file:// rules, as a user's browser
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """tmp_path over http on 127.0.0.1."""
    handler = functools.partial(QuietHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f'http://127.0.0.1:{server.server_address[1]}'
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # the base class names it so
        pass


def _console_error(message: object) -> str:
    return f'{message.text} at {message.location.get("url", "")}'


def _live_run(report_dir: Path, clock: Clock) -> LiveRun:
    planned = [PlannedSample('english', length, depth, length) for length in LENGTHS for depth in DEPTHS]
    return LiveRun(report_dir, planned, files=OutputFiles(), clock=clock)


@pytest.mark.parametrize('scheme', ['file', 'http'])
def test_a_live_page_shows_answers_and_turns_pending_cells_into_scores(
    scheme: str, browser: object, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    clock = Clock()
    run = _live_run(tmp_path, clock)
    run.add(_result(600, 0.0, HOSTILE_ANSWER, 1.0))
    run.update()  # the first update writes at once: one cell done, three pending
    page_file = tmp_path / f'{OutputFiles().heatmap_prefix}_english.html'
    url = page_file.as_uri() if scheme == 'file' else f'{request.getfixturevalue("served")}/{page_file.name}'

    page = browser.new_page()
    errors: list[str] = []
    page.on('pageerror', lambda exc: errors.append(f'pageerror: {exc}'))
    page.on('console', lambda message: errors.append(_console_error(message)) if message.type == 'error' else None)
    page.goto(url)

    done, pending = page.locator('td[data-c="0-0"]'), page.locator('td[data-c="0-1"]')
    assert done.text_content() == '1.00'
    assert pending.text_content() == '…' and pending.get_attribute('class') == 'p'
    assert 'running' in page.locator('#live').text_content()

    done.click()  # its answers show, as text: the hostile answer is shown, not run
    panel = page.locator('#ans-0-0')
    panel.wait_for(state='visible')
    assert HOSTILE_ANSWER in panel.locator('pre').first.text_content()
    assert page.title() != 'owned' and page.locator('img').count() == 0

    # The run goes on: the cell at 900 tokens, depth 0 finishes; the page picks it up without being reloaded.
    run.add(_result(900, 0.0, 'a later answer', 0.0))
    clock.now += 60
    run.update()
    page.wait_for_function("document.querySelector('td[data-c=\"0-1\"]').textContent === '0.00'")
    assert panel.is_visible()  # the panel the reader opened stays open across the update
    assert pending.get_attribute('class') in (None, '')
    pending.click()
    page.locator('#ans-0-1').wait_for(state='visible')
    assert 'a later answer' in page.locator('#ans-0-1').text_content()
    assert panel.is_hidden()  # one panel at a time

    run.finish(complete=True)  # the run ends: the page says so and stops re-reading
    page.wait_for_function("document.getElementById('live').textContent.indexOf('run complete') >= 0")
    assert page.locator('td[data-c="1-1"]').text_content() == '×'  # never sent by a complete run: not tested
    page.close()
    assert [error for error in errors if not error.endswith('/favicon.ico')] == []  # a browser asks http for one


def test_done_pending_and_untested_cells_look_different(browser: object, tmp_path: Path) -> None:
    from evalscope_niah.reporting.heatmap_live import LiveCell, LivePage, write_live_heatmap
    from evalscope_niah.reporting.stats import summarize_cells

    cells = {(600, 0.0): LiveCell(1, 1), (600, 100.0): LiveCell(1, 0), (900, 0.0): LiveCell(0, untested=True)}
    live = LivePage(cells=cells, status='complete', line='run complete', data_src=None)
    path = tmp_path / 'page.html'
    write_live_heatmap(summarize_cells([_result(600, 0.0, 'x', 1.0)]), subset='english', path=path, live=live)
    page = browser.new_page()
    errors: list[str] = []
    page.on('pageerror', lambda exc: errors.append(str(exc)))
    page.goto(path.as_uri())
    looks = [
        page.locator(f'td[data-c="{key}"]').evaluate(
            '(td) => [td.textContent, getComputedStyle(td).backgroundImage, getComputedStyle(td).backgroundColor]'
        )
        for key in ('0-0', '1-0', '0-1')  # done, pending, untested (900 at depth 0); 1-1 is off the plan: untested
    ]
    page.close()
    assert [look[0] for look in looks] == ['1.00', '…', '×']
    assert len({tuple(look[1:]) for look in looks}) == 3 and errors == []


# Drawn by a browser as themselves, these reorder or hide what follows (U+202E), or are a terminal's (ESC, BEL).
CONTROLS = 'needle \u202eevil\u202c \x1b[2J bell\x07 end'


def test_both_pages_show_control_and_bidi_characters_escaped_alike(browser: object, tmp_path: Path) -> None:
    # The live page's script draws answers and the progress line (with the tokenizer's name) from decoded JSON; it
    # drew U+202E, ESC and BEL raw while the final page showed them escaped. Both now show the same text.
    from evalscope_niah.escaping import shown_text
    from evalscope_niah.reporting.heatmap_html import plot_heatmap_html
    from evalscope_niah.reporting.stats import samples_by_cell, summarize_cells

    clock = Clock()
    tokenizer = 'tok\u202eenizer\x1b]0;title\x07'
    planned = [PlannedSample('english', 600, 0.0, 600, tokenizer)]
    run = LiveRun(tmp_path, planned, files=OutputFiles(), clock=clock)
    result = dataclasses.replace(_result(600, 0.0, CONTROLS, 1.0), tokenizer=tokenizer, reasoning=CONTROLS)
    run.add(result)
    run.update()
    live_file = tmp_path / f'{OutputFiles().heatmap_prefix}_english.html'
    final_file = tmp_path / 'final.html'
    plot_heatmap_html(summarize_cells([result]), subset='english', path=final_file, answers=samples_by_cell([result]))

    page = browser.new_page()
    shown = {}
    for name, path in (('live', live_file), ('final', final_file)):
        page.goto(path.as_uri())
        page.locator('td[data-a]').first.click()
        pre = page.locator('section.ans:not([hidden]) pre').first
        pre.wait_for(state='visible')
        body = page.locator('body').text_content()
        shown[name] = pre.text_content()
        assert not any(char in body for char in '\u202e\u202c\x1b\x07'), name  # nothing drawn raw anywhere
    line = page.goto(live_file.as_uri()) and page.locator('#live').text_content()
    page.close()
    assert shown['live'] == shown['final'] == shown_text(CONTROLS)
    assert '\\u202e' in shown['live'] and '\\u001b' in shown['live'] and '\\u0007' in shown['live']
    assert '\\u202eenizer' in line  # the tokenizer's name in the progress line


def test_a_page_left_open_ends_where_the_final_page_ends(browser: object, tmp_path: Path) -> None:
    """The page is opened early; the run then finishes with a cell never sent (an adaptive sweep's choice) and every
    sample at 900 tokens errored. Without a reload the open page shows that cell as not tested, the final page's title
    line, and the effective length as the bound the final page states."""
    from evalscope_niah.reporting.outputs import write_run_outputs

    clock, live_dir, final_dir = Clock(), tmp_path / 'live', tmp_path / 'final'
    run = _live_run(live_dir, clock)
    finished = [
        _result(600, 0.0, 'right', 1.0),
        _result(600, 100.0, 'right', 1.0),
        dataclasses.replace(_result(900, 0.0, '', 0.0), accuracy=None, rule_recall=None, answer=None, error='HTTP 500'),
    ]
    run.add(finished[0])
    run.update()  # the page as first loaded: one cell done, three pending, a title of n=1
    page = browser.new_page()
    errors: list[str] = []
    page.on('pageerror', lambda exc: errors.append(f'pageerror: {exc}'))
    page.goto((live_dir / f'{OutputFiles().heatmap_prefix}_english.html').as_uri())
    assert 'n=1' in page.locator('p.sub').first.text_content()
    assert page.locator('#ntl').is_hidden()

    for result in finished[1:]:
        run.add(result)
    write_run_outputs(final_dir, finished, threshold=EFFECTIVE_THRESHOLD, mode='absolute')
    run.finish(complete=True, threshold=EFFECTIVE_THRESHOLD, mode='absolute')
    page.wait_for_function("document.getElementById('live').textContent.indexOf('run complete') >= 0")

    final = browser.new_page()
    final.goto((final_dir / f'{OutputFiles().heatmap_prefix}_english.html').as_uri())
    final_sub, final_title = final.locator('p.sub').first.text_content(), final.title()
    final.close()
    assert final_sub.endswith('· effective context length: at least 600; 900 unknown: 1 server error')
    assert page.locator('p.sub').first.text_content() == final_sub
    assert page.title() == final_title and page.locator('h1').text_content() == 'Needle in a haystack'
    cells = {key: page.locator(f'td[data-c="{key}"]').text_content() for key in ('0-0', '1-0', '0-1', '1-1')}
    assert cells == {'0-0': '1.00', '1-0': '1.00', '0-1': '—', '1-1': '×'}  # 900 at depth 100: never sent
    assert page.locator('td.p').count() == 0  # nothing pending once the run is complete
    assert page.locator('#ntl').is_visible() and 'not tested' in page.locator('#ntl').text_content()
    page.close()
    assert errors == []
