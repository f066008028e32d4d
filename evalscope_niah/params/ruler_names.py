"""RULER's niah arguments in RULER's meaning: a config that holds one of them, as RULER's users write them
(``type_haystack: noise, num_needle_q: 4, ...``), is a RULER config, so it runs task ``ruler_niah`` with RULER's
defaults (niah.py's argparse defaults, ``tasks/ruler_niah/presets.py``) for the arguments left out, as Kamradt's names
make a config his (``params/kamradt_names.py``).

The arguments themselves are the ruler_niah task's own parameters (``tasks/ruler_niah/params.py``, where each is
checked); only their names live here, below the tasks, so the peer-name resolution can tell whose config it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TOOL = "RULER's niah"
TASK = 'ruler_niah'
# niah.py's arguments that say what a sample holds; no other tool uses these names.
OWNS = ('type_haystack', 'type_needle_k', 'type_needle_v', 'num_needle_k', 'num_needle_v', 'num_needle_q')


def expand(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with task ``ruler_niah`` chosen, unless a task is named (the run's, or a subset's: then the
    arguments belong to that choice, and are refused where no subset runs ruler_niah)."""
    if values.get('task') is not None or _subset_names_a_task(values.get('subsets')):
        return values
    return {**values, 'task': TASK}


def _subset_names_a_task(subsets: Any) -> bool:
    if not isinstance(subsets, Mapping):
        return False
    return any(isinstance(entry, Mapping) and entry.get('task') is not None for entry in subsets.values())
