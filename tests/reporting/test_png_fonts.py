"""Behavioural tests for evalscope_niah.reporting.png_fonts: the font shipped for Chinese PNGs has every glyph they
draw, is registered only when a Chinese PNG is drawn, draws them with no missing glyph, and a broken install falls
back to English with one warning."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import matplotlib
import pytest
from fontTools.ttLib import TTFont
from matplotlib import font_manager
from matplotlib.font_manager import FontProperties

from evalscope_niah.reporting import png_fonts
from evalscope_niah.reporting.length_status import EffectiveBound
from evalscope_niah.reporting.page_text import ZH, all_words, reason_text
from evalscope_niah.reporting.plotting import _build_heatmap_figure, plot_heatmap_png
from evalscope_niah.reporting.stats import CellSummary

REPO = Path(__file__).resolve().parents[2]


def _shipped_cmap() -> set[int]:
    return set(TTFont(png_fonts.SHIPPED_FONT).getBestCmap())


def test_the_shipped_font_has_a_glyph_for_every_character_of_every_chinese_word() -> None:
    """A Chinese word added to page_text without rebuilding the subset would draw an empty box: say which."""
    cmap = _shipped_cmap()
    words = [*all_words(ZH), reason_text('3 server errors, 1 cut reply', ZH)]
    missing = sorted({char for word in words for char in word if ord(char) not in cmap})
    assert not missing, (
        f'the shipped font {png_fonts.SHIPPED_FONT.name} has no glyph for {"".join(missing)!r}: rebuild it with '
        f'`{png_fonts.REBUILD_COMMAND}` (see evalscope_niah/data/fonts/README.md)'
    )
    assert set(map(ord, png_fonts.subset_characters())) <= cmap
    assert {ord(c) for c in '0123456789%()=.:·—'} <= cmap


def test_the_shipped_font_is_a_renamed_subset_with_its_license_beside_it() -> None:
    font = TTFont(png_fonts.SHIPPED_FONT)
    family = font['name'].getDebugName(1)
    # Its own name: the license asks it of a modified font, and matplotlib must not take a full Noto for it.
    assert family == png_fonts.SHIPPED_FAMILY and 'Noto' not in family and 'Source' not in family
    assert family not in png_fonts._CJK_FONTS
    assert 'Open Font License' in font['name'].getDebugName(13)
    # The characters of the heatmaps, not a whole CJK font (16 MB): a few hundred glyphs, tens of KB.
    assert len(font.getGlyphOrder()) < 2 * len(png_fonts.subset_characters())
    assert png_fonts.SHIPPED_FONT.stat().st_size < 150_000
    folder = png_fonts.SHIPPED_FONT.parent
    assert 'SIL OPEN FONT LICENSE Version 1.1' in (folder / 'OFL.txt').read_text('utf-8')
    readme = (folder / 'README.md').read_text('utf-8')
    assert 'Noto Sans CJK SC' in readme and '2.004' in readme and 'assets/fonts/build_cjk_subset.py' in readme
    assert (REPO / 'assets' / 'fonts' / 'build_cjk_subset.py').is_file()


def test_an_installed_full_cjk_font_is_preferred_and_the_shipped_one_otherwise(
    monkeypatch: pytest.MonkeyPatch, no_installed_cjk_font: None
) -> None:
    """A full font also has the glyphs of Chinese subset or model names, which the subset lacks."""
    assert png_fonts.png_font_families() == [png_fonts.SHIPPED_FAMILY, 'DejaVu Sans']
    monkeypatch.setattr(png_fonts, 'cjk_font', lambda: 'Noto Sans CJK SC')
    assert png_fonts.png_font_families() == ['Noto Sans CJK SC', 'DejaVu Sans']
    assert png_fonts.png_language('zh') == 'zh' and png_fonts.png_language('en') == 'en'


def test_the_shipped_font_is_registered_only_when_a_chinese_png_needs_it() -> None:
    """matplotlib's font list is left alone by an import and by English PNGs (start-up time; a fresh process, as
    this one's tests may have drawn Chinese already)."""
    script = f"""
from matplotlib import font_manager
from evalscope_niah.reporting import png_fonts
registered = lambda: any(f.fname == {str(png_fonts.SHIPPED_FONT)!r} for f in font_manager.fontManager.ttflist)
assert png_fonts.png_language('en') == 'en' and not registered()
png_fonts.cjk_font = lambda: None  # as on a machine without one
assert png_fonts.png_language('zh') == 'zh' and registered()
print('ok')
"""
    env = {**os.environ, 'PYTHONPATH': str(REPO)}
    done = subprocess.run([sys.executable, '-c', script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == 'ok', done.stderr


def _chinese_cells() -> list[CellSummary]:
    return [
        CellSummary('chinese', length, depth, 3, accuracy, accuracy, 1.0, 0, 0, None, None)
        for length, accuracy in ((1000, 1.0), (2000, 0.0))
        for depth in (0.0, 100.0)
    ]


def test_a_chinese_png_is_drawn_with_the_shipped_font_and_no_glyph_missing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, no_installed_cjk_font: None
) -> None:
    bound = EffectiveBound(1000, 2000, '3 server errors, 1 cut reply')
    note = ZH.rule_fallback_note
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.INFO, logger='matplotlib'):
        warnings.simplefilter('always')
        fig = _build_heatmap_figure(_chinese_cells(), subset='chinese', effective_length=bound, language='zh')
        texts = [fig.axes[0].title, fig.axes[0].xaxis.label, fig.axes[0].yaxis.label, fig.axes[1].yaxis.label]
        assert '大海捞针' in texts[0].get_text() and texts[1].get_text() == '上下文长度（token）'
        # The font matplotlib draws each label with is the shipped file.
        fonts = {Path(font_manager.findfont(FontProperties(family=text.get_fontfamily()))) for text in texts}
        assert fonts == {png_fonts.SHIPPED_FONT}
        fig.clear()
        png = plot_heatmap_png(  # drawn glyph by glyph: a glyph none of the fonts has is warned about here
            _chinese_cells(),
            subset='chinese',
            path=tmp_path / 'zh.png',
            effective_length=bound,
            scoring_note=note,
            language='zh',
        )
    assert png.read_bytes().startswith(b'\x89PNG')
    missing = [str(w.message) for w in caught if 'missing from font' in str(w.message)]
    assert not missing, missing
    assert 'findfont' not in caplog.text and 'not found' not in caplog.text


@pytest.mark.parametrize('broken', ['garbage', 'absent', 'other font'])
def test_a_broken_shipped_font_leaves_the_png_english_with_one_warning(
    broken: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    no_installed_cjk_font: None,
) -> None:
    """A damaged install: English words rather than empty boxes, and the log says why and what to do."""
    path = tmp_path / 'font.otf'
    if broken == 'garbage':
        path.write_bytes(png_fonts.SHIPPED_FONT.read_bytes()[:4] + b'\0' * 300)
    elif broken == 'other font':  # a real font without Chinese glyphs
        path = Path(matplotlib.get_data_path()) / 'fonts' / 'ttf' / 'DejaVuSans.ttf'
    monkeypatch.setattr(png_fonts, 'SHIPPED_FONT', path)
    with caplog.at_level(logging.WARNING, logger='evalscope_niah'):
        assert png_fonts.png_font_families() is None
        assert png_fonts.png_language('zh') == 'en' and png_fonts.png_language('zh') == 'en'
        fig = _build_heatmap_figure(_chinese_cells(), subset='chinese', language='zh')
    assert fig.axes[0].xaxis.label.get_text() == 'Context length (tokens)'
    fig.clear()
    warned = [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]
    assert len(warned) == 1, warned
    assert 'no font with Chinese glyphs' in warned[0] and str(path) in warned[0] and 'fonts-noto-cjk' in warned[0]
    if broken == 'other font':
        assert 'no glyph for' in warned[0] and png_fonts.REBUILD_COMMAND in warned[0]
