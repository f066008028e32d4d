"""outputs.py holds the one table of a run's file names: no other module of the package spells one out."""

from __future__ import annotations

from pathlib import Path

import evalscope_niah
from evalscope_niah.outputs import OUTPUT_FILE_NAMES

PACKAGE_DIR = Path(evalscope_niah.__file__).parent


def test_only_outputs_spells_out_a_file_name_of_the_run() -> None:
    spelled = {
        str(path.relative_to(PACKAGE_DIR)): [name for name in OUTPUT_FILE_NAMES if name in path.read_text('utf-8')]
        for path in PACKAGE_DIR.rglob('*.py')
        if path.name != 'outputs.py'
    }
    assert {module: names for module, names in spelled.items() if names} == {}
