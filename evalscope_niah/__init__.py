"""Needle-in-a-haystack long-context retrieval benchmark for EvalScope.

Importing this package registers the ``needle_haystack`` adapter with EvalScope (now if EvalScope is already
imported, else when it is), without importing EvalScope itself.
"""

__version__ = '0.1.0'

from ._autoload import install as _install_autoload

_install_autoload()

__all__ = ['__version__']
