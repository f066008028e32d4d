"""Which fonts draw a PNG's Chinese words: matplotlib's own DejaVu Sans has no Chinese glyph (each would be drawn
as an empty box), so a Chinese subset's PNG uses an installed font with those glyphs, else the subset of Noto Sans CJK
SC shipped in the package (`SHIPPED_FONT`: the glyphs of every Chinese word of the heatmaps, nothing more).
"""

from __future__ import annotations

import string
from functools import cache
from pathlib import Path

from matplotlib import font_manager

from ..escaping import inert_logger
from .labels import EMPTY_CELL
from .page_text import EN, ZH, all_words, page_text

__all__ = ['SHIPPED_FONT', 'cjk_font', 'png_font_families', 'png_language', 'shipped_font', 'subset_characters']

logger = inert_logger(__name__)

# Fonts with the Chinese glyphs, Simplified-Chinese forms first (a Japanese face draws some characters in their
# Japanese forms); matplotlib's own DejaVu Sans has none, and a missing glyph is drawn as an empty box.
_CJK_FONTS = (
    'Noto Sans CJK SC',
    'Noto Sans SC',
    'Source Han Sans SC',
    'Source Han Sans CN',
    'WenQuanYi Zen Hei',
    'WenQuanYi Micro Hei',
    'Microsoft YaHei',
    'PingFang SC',
    'Hiragino Sans GB',
    'SimHei',
    'Heiti SC',
    'Droid Sans Fallback',
    'Noto Sans CJK JP',
    'Source Han Sans',
)

# In the package (pyproject's wheel packages take evalscope_niah/ whole); assets/fonts/build_cjk_subset.py makes it.
SHIPPED_FONT = Path(__file__).parents[1] / 'data' / 'fonts' / 'niah-cjk-sc-subset.otf'
# The family name the build gives it: not Noto's, so matplotlib never takes an installed full Noto Sans CJK SC for
# the subset or the subset for it.
SHIPPED_FAMILY = 'NIAH CJK SC Subset'
# For every glyph the first family lacks (a subset or model name in another script).
_FALLBACK_FAMILY = 'DejaVu Sans'
REBUILD_COMMAND = 'PYTHONPATH=. python assets/fonts/build_cjk_subset.py'


def subset_characters() -> str:
    """Every character a Chinese PNG draws in its own words (sorted, no duplicates): all of the Chinese heatmap
    words (`page_text.ZH`, the HTML page's too: a word moved onto the PNG needs no rebuild), printable ASCII
    (digits, units, model ids) and the separators the labels put between them."""
    drawn = set(''.join(all_words(ZH))) | set(string.printable.strip()) | {' ', EMPTY_CELL, '·'}
    return ''.join(sorted(drawn))


@cache
def cjk_font() -> str | None:
    """The first installed font of `_CJK_FONTS` (matplotlib's font list), None when there is none."""
    installed = {font.name for font in font_manager.fontManager.ttflist}
    return next((name for name in _CJK_FONTS if name in installed), None)


def shipped_font() -> str | None:
    """The shipped subset's family, registered with matplotlib's font manager on first use (a Chinese PNG without
    an installed CJK font); None when its file is missing, unreadable or lacks a glyph of `subset_characters` (a
    broken install): the PNG is then English rather than boxes."""
    return _register_shipped_font()[0]


@cache
def _register_shipped_font() -> tuple[str | None, str]:
    """(the shipped font's family, '') once registered; (None, why not) when it cannot be used."""
    try:
        font = font_manager.get_font(SHIPPED_FONT)
        charmap = font.get_charmap()
        family = font_manager.ttfFontProperty(font).name
    except Exception as exc:  # FreeType's RuntimeError, OSError, ValueError: each means no usable font
        return None, f'{SHIPPED_FONT}: {type(exc).__name__}: {exc}'
    missing = ''.join(char for char in subset_characters() if ord(char) not in charmap)
    if missing:  # not the file the build wrote (or one built before a word was added)
        return None, f'{SHIPPED_FONT} has no glyph for {missing[:20]!r}; rebuild it: {REBUILD_COMMAND}'
    font_manager.fontManager.addfont(SHIPPED_FONT)
    return family, ''


def png_font_families() -> list[str] | None:
    """matplotlib's font.family for a Chinese PNG: an installed full CJK font (it also has the glyphs of names in
    the data), else the shipped subset, each followed by DejaVu Sans for what it lacks; None when neither exists."""
    family = cjk_font() or shipped_font()
    return None if family is None else [family, _FALLBACK_FAMILY]


def png_language(language: str) -> str:
    """The language a PNG can be drawn in: ``language``, but English for Chinese without a font that has its glyphs
    (said once in the log), rather than empty boxes."""
    if page_text(language) is EN or png_font_families() is not None:
        return language
    _warn_no_cjk_font()
    return 'en'


@cache
def _warn_no_cjk_font() -> None:
    logger.warning(
        'no font with Chinese glyphs: none of %s is installed and the one shipped is unusable (%s); the Chinese '
        "subset's PNG is labelled in English, its HTML page is in Chinese. Reinstall evalscope-niah, or install a "
        'CJK font (e.g. apt install fonts-noto-cjk)',
        ', '.join(_CJK_FONTS[:3]),
        _register_shipped_font()[1],
    )
