"""Rebuild the Chinese font shipped for the PNG heatmaps, evalscope_niah/data/fonts/niah-cjk-sc-subset.otf: Noto Sans
CJK SC Regular cut down to the characters a Chinese PNG draws (`png_fonts.subset_characters`), a few tens of KB
instead of 16 MB. Run it after changing a Chinese word in evalscope_niah/reporting/page_text.py (a test names the
characters the shipped font lacks).

    apt-get install -y fonts-noto-cjk        # or: apt-get download fonts-noto-cjk && dpkg-deb -x fonts-noto-cjk_*.deb x
    PYTHONPATH=. python assets/fonts/build_cjk_subset.py [--source PATH/NotoSansCJK-Regular.ttc]

The source is Noto Sans CJK (SIL Open Font License 1.1; the .ttc collection Debian ships, or upstream's
NotoSansCJKsc-Regular.otf). The subset gets a family name of its own (`png_fonts.SHIPPED_FAMILY`): the license
asks a modified font not to pass for the original, and matplotlib must not confuse it with an installed full font.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTCollection, TTFont

import evalscope_niah

ROOT = Path(__file__).resolve().parents[2]

SOURCE_FAMILY = 'Noto Sans CJK SC'
DEFAULT_SOURCES = (
    Path('/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc'),  # Debian / Ubuntu fonts-noto-cjk
    Path('/usr/share/fonts/google-noto-cjk/NotoSansCJK-Regular.ttc'),  # Fedora google-noto-sans-cjk-fonts
    Path('/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc'),  # Arch noto-fonts-cjk
)
# Names that say which font this is; the copyright, trademark, designer and license records stay as they are.
_RENAMED = (1, 3, 4, 6, 16, 17, 18, 21, 22)


def _source_font(path: Path) -> TTFont:
    """The Simplified-Chinese face of ``path``: the one of a collection named `SOURCE_FAMILY`, or the file itself."""
    if path.read_bytes()[:4] != b'ttcf':
        return TTFont(path)
    for font in TTCollection(path).fonts:
        if font['name'].getDebugName(1) == SOURCE_FAMILY:
            return font
    raise SystemExit(f'{path} has no face named {SOURCE_FAMILY!r}')


def _rename(font: TTFont, family: str) -> None:
    """Name the subset ``family`` (English names only: the original's Chinese ones name Noto)."""
    postscript = family.replace(' ', '') + '-Regular'
    names = font['name']
    names.names = [record for record in names.names if record.nameID not in _RENAMED]
    for name_id, value in ((1, family), (3, f'{postscript};evalscope-niah'), (4, family)):
        names.setName(value, name_id, 3, 1, 0x409)
    names.setName(postscript, 6, 3, 1, 0x409)
    names.setName('Regular', 2, 3, 1, 0x409)
    cff = font['CFF '].cff
    cff.fontNames = [postscript]
    top = cff.topDictIndex[0]
    top.FullName, top.FamilyName = family, family


def build(source: Path, target: Path) -> int:
    """Write the subset of ``source`` to ``target``; its size in bytes."""
    from evalscope_niah.reporting.png_fonts import SHIPPED_FAMILY, subset_characters

    font = _source_font(source)
    options = subset.Options()
    options.name_IDs = ['*']  # keep every record; _rename replaces those that name the font
    options.name_languages = [0x409]
    options.notdef_outline = True
    # Vertical writing and per-script baselines: matplotlib draws horizontal text only.
    options.drop_tables += ['VORG', 'vhea', 'vmtx', 'BASE']
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=subset_characters())
    subsetter.subset(font)
    _rename(font, SHIPPED_FAMILY)
    font.recalcTimestamp = False  # the source's date: a rebuild from the same source is the same bytes
    target.parent.mkdir(parents=True, exist_ok=True)
    font.save(target)
    return target.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--source', type=Path, help=f'the Noto Sans CJK file (default: the first of {DEFAULT_SOURCES})')
    parser.add_argument('--output', type=Path, help="default: the package's evalscope_niah/data/fonts/ file")
    args = parser.parse_args()
    if Path(evalscope_niah.__file__).resolve().parents[1] != ROOT:
        # The words are this checkout's: an installed package (imported at start-up by evalscope_niah.pth) has others.
        parser.error(f'evalscope_niah is imported from {evalscope_niah.__file__}: run with PYTHONPATH={ROOT}')
    from evalscope_niah.reporting.png_fonts import SHIPPED_FONT, subset_characters

    output = args.output or SHIPPED_FONT
    source = args.source or next((path for path in DEFAULT_SOURCES if path.is_file()), None)
    if source is None:
        parser.error('no Noto Sans CJK found: install fonts-noto-cjk or pass --source')
    size = build(source, output)
    print(f'{output}: {len(subset_characters())} characters, {size} bytes, from {source}')


if __name__ == '__main__':
    main()
