"""How this run was entered: from a command line (``evalscope eval``, ``evalscope-niah eval``) or from Python
(``run_task``). Messages that tell the user what to change are written in the form the user wrote the run."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import NiahConfigError

__all__ = ['CLI_NAMES', 'entered_from_cli', 'refusal_ends_cli_run']

# The programs whose runs take flags: EvalScope's console script, and ours (it hands EvalScope argv[0] 'evalscope').
CLI_NAMES = ('evalscope', 'evalscope-niah')


def entered_from_cli() -> bool:
    """True when the process is one of the command lines above (its argv[0]), not a Python program calling
    ``run_task``."""
    argv = getattr(sys, 'argv', None) or ['']
    return Path(str(argv[0])).name in CLI_NAMES


@contextmanager
def refusal_ends_cli_run() -> Iterator[None]:
    """A NiahConfigError inside ends a command-line run with one line and exit status 2, as ``evalscope-niah``
    ends every refusal, instead of EvalScope's traceback; from Python it is raised as it is, for the caller."""
    try:
        yield
    except NiahConfigError as exc:
        if not entered_from_cli():
            raise
        print(f'evalscope-niah: error: {exc}', file=sys.stderr)
        raise SystemExit(2) from None
