"""Fixtures of the reporting tests: the fonts a Chinese PNG finds, as on a machine without a CJK font."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evalscope_niah.reporting import png_fonts


def _forget_fonts() -> None:
    png_fonts._register_shipped_font.cache_clear()
    png_fonts._warn_no_cjk_font.cache_clear()


@pytest.fixture
def no_installed_cjk_font(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No full CJK font installed (as here; a machine with one would otherwise never use the shipped font)."""
    _forget_fonts()
    monkeypatch.setattr(png_fonts, 'cjk_font', lambda: None)
    yield
    _forget_fonts()  # later tests find the real shipped font again, not a broken one a test put in its place


@pytest.fixture
def no_usable_cjk_font(no_installed_cjk_font: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Neither an installed CJK font nor the shipped one (its file gone: a damaged install)."""
    monkeypatch.setattr(png_fonts, 'SHIPPED_FONT', tmp_path / 'gone.otf')
