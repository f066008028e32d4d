"""Which font draws a PNG's Chinese words: matplotlib's own DejaVu Sans has no Chinese glyph (each would be drawn
as an empty box), so a Chinese subset's PNG is in Chinese only where a font with those glyphs is installed.
"""

from __future__ import annotations

from functools import cache

from matplotlib import font_manager

from ..escaping import inert_logger
from .page_text import EN, page_text

__all__ = ['cjk_font', 'png_language']

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


@cache
def cjk_font() -> str | None:
    """The first installed font of `_CJK_FONTS` (matplotlib's font list), None when there is none."""
    installed = {font.name for font in font_manager.fontManager.ttflist}
    return next((name for name in _CJK_FONTS if name in installed), None)


def png_language(language: str) -> str:
    """The language a PNG can be drawn in: ``language``, but English for Chinese without a font that has its glyphs
    (said once in the log), rather than empty boxes."""
    if page_text(language) is EN or cjk_font() is not None:
        return language
    _warn_no_cjk_font()
    return 'en'


@cache
def _warn_no_cjk_font() -> None:
    logger.warning(
        "no font with Chinese glyphs found (%s): the Chinese subset's PNG is labelled in English; its HTML page "
        'is in Chinese. Install one (e.g. apt install fonts-noto-cjk) to draw the PNG in Chinese',
        ', '.join(_CJK_FONTS[:3]),
    )
