"""The HTML heatmap's colours are the PNG colormap's, computed without matplotlib (whose import a smoke run does not
need before its PNG)."""

from __future__ import annotations

import math
import random
import subprocess
import sys

from matplotlib.colors import LinearSegmentedColormap, to_hex

from evalscope_niah.reporting import heatmap_style
from evalscope_niah.reporting.heatmap_style import accuracy_hex


def test_every_level_of_the_scale_is_the_matplotlib_colormaps_colour() -> None:
    cmap = heatmap_style.CMAP
    assert isinstance(cmap, LinearSegmentedColormap) and cmap.N == 256
    rng = random.Random(44)
    values = [i / 256 for i in range(257)] + [(i + 0.5) / 256 for i in range(256)] + [1 / 3, 2 / 3, 0.5]
    values += [rng.random() for _ in range(2000)] + [-0.5, 1.5, 0.0, 1.0]
    assert [accuracy_hex(value) for value in values] == [to_hex(cmap(value)) for value in values]
    assert accuracy_hex(math.nan) == to_hex(cmap(math.nan))
    assert accuracy_hex(0.0) == '#f0496e' and accuracy_hex(1.0) == '#0cd79f'  # the ends are the scale's stops


def test_the_html_heatmap_modules_do_not_import_matplotlib() -> None:
    code = (
        'import sys\n'
        'import evalscope_niah.reporting.heatmap_live, evalscope_niah.reporting.heatmap_html\n'
        'from evalscope_niah.reporting.heatmap_style import accuracy_hex\n'
        'accuracy_hex(0.5)\n'
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'matplotlib'))\n"
    )
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == '[]'
