"""How this run was entered: from a command line (``evalscope eval``, ``evalscope-niah eval``) or from Python
(``run_task``). Messages that tell the user what to change are written in the form the user wrote the run."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ['CLI_NAMES', 'entered_from_cli']

# The programs whose runs take flags: EvalScope's console script, and ours (it hands EvalScope argv[0] 'evalscope').
CLI_NAMES = ('evalscope', 'evalscope-niah')


def entered_from_cli() -> bool:
    """True when the process is one of the command lines above (its argv[0]), not a Python program calling
    ``run_task``."""
    argv = getattr(sys, 'argv', None) or ['']
    return Path(str(argv[0])).name in CLI_NAMES
