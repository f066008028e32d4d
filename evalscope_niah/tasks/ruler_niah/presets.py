"""RULER's NIAH variants as data: each of its ``synthetic.yaml`` niah entries is a dict of RULER's own arguments,
named as RULER names it (``niah_multikey_2``) or with our prefix (``ruler_niah_multikey_2``)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# RULER's argument values this task honours (niah.py's --type_haystack / --type_needle_k / --type_needle_v choices).
HAYSTACK_TYPES = ('noise', 'essay', 'needle')
NEEDLE_TYPES = ('words', 'numbers', 'uuids')

# niah.py's argparse defaults: what a RULER argument left out means.
RULER_DEFAULTS: Mapping[str, object] = MappingProxyType(
    {
        'type_haystack': 'essay',
        'type_needle_k': 'words',
        'type_needle_v': 'numbers',
        'num_needle_k': 1,
        'num_needle_v': 1,
        'num_needle_q': 1,
    }
)


def _entry(haystack: str, key: str, value: str, k: int = 1, v: int = 1, q: int = 1) -> Mapping[str, object]:
    return MappingProxyType(
        {
            'type_haystack': haystack,
            'type_needle_k': key,
            'type_needle_v': value,
            'num_needle_k': k,
            'num_needle_v': v,
            'num_needle_q': q,
        }
    )


# The eight niah entries of RULER's scripts/synthetic.yaml, argument for argument.
PRESETS: Mapping[str, Mapping[str, object]] = MappingProxyType(
    {
        'niah_single_1': _entry('noise', 'words', 'numbers'),
        'niah_single_2': _entry('essay', 'words', 'numbers'),
        'niah_single_3': _entry('essay', 'words', 'uuids'),
        'niah_multikey_1': _entry('essay', 'words', 'numbers', k=4),
        'niah_multikey_2': _entry('needle', 'words', 'numbers'),
        'niah_multikey_3': _entry('needle', 'uuids', 'uuids'),
        'niah_multivalue': _entry('essay', 'words', 'numbers', v=4),
        'niah_multiquery': _entry('essay', 'words', 'numbers', q=4),
    }
)

# The prefix a preset may carry, so that it reads as ours beside other tools' names.
PRESET_PREFIX = 'ruler_'


def preset_names() -> tuple[str, ...]:
    """Every name a user may write for a preset: RULER's and ours."""
    return (*PRESETS, *(PRESET_PREFIX + name for name in PRESETS))


def preset(name: str) -> Mapping[str, object] | None:
    """The preset of a name as RULER writes it or with our prefix; None for any other name."""
    return PRESETS.get(name.removeprefix(PRESET_PREFIX)) if isinstance(name, str) else None
