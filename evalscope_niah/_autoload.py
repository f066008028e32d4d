"""Register our adapter when EvalScope is imported, without importing EvalScope ourselves.

Installed two ways: by ``import evalscope_niah`` and, so that a plain ``evalscope eval`` runs ours, by the
``evalscope_niah.pth`` file in site-packages (which does nothing when ``EVALSCOPE_NIAH_AUTOLOAD=0``). Either way an
interpreter that never imports evalscope pays one tiny module import and one ``sys.meta_path`` entry.

The registration path, start to end (this is where it starts; each step is the one place that does its job):

1. ``evalscope_niah.pth`` (site-packages, run by ``site`` at every interpreter start): unless
   ``EVALSCOPE_NIAH_AUTOLOAD`` is off, ``import evalscope_niah``, whose ``__init__`` calls ``install()`` below.
2. ``install()``: if EvalScope is already imported, register now; else put one ``_EvalscopeFinder`` first on
   ``sys.meta_path``. It answers only for the module ``evalscope``, removes itself (one-shot) and wraps EvalScope's
   own loader in ``_RegisteringLoader``, which runs ``_register()`` once ``evalscope/__init__`` has executed (its
   registry and lazy resolvers exist by then). Nothing of EvalScope is imported by us before that moment.
3. ``_register()`` imports ``evalscope_niah.integration`` (the only package that imports EvalScope). Its
   ``__init__`` calls ``registration.register()`` itself as well: when our integration code is what imports
   EvalScope, the hook fires half-way and leaves registering to the package, so no import circle forms. A failure
   is one warning; EvalScope's other benchmarks keep working.
4. ``integration/registration.py`` ``register()`` (idempotent, loads no task plugin): ``niah`` through EvalScope's
   public ``register_benchmark`` / ``register_evaluator``, the metric declarations, and, unless
   ``EVALSCOPE_NIAH_OVERRIDE=0``, the guarded takeover of the built-in ``needle_haystack`` name.
5. ``integration/evalscope_surface.py``: every private EvalScope name that takeover (and the adapter) reaches,
   resolved by string and contract-tested (``missing_hooks``); a missing one leaves the registry as it was and
   warns that ``--datasets niah`` is ours.
"""

from __future__ import annotations

import sys

_TARGET = 'evalscope'  # by the end of evalscope/__init__ the registry and its lazy resolvers exist
_REGISTRATION = __package__ + '.integration.registration'


def _register() -> None:
    if _REGISTRATION in sys.modules:
        # Our integration code is itself importing evalscope (someone imported one of its modules first): the
        # integration package registers once it is complete. Returning here keeps the import graph free of circles.
        return
    try:
        from .integration import register

        register()
    except Exception as error:  # runs inside `import evalscope`: ours failing must not break EvalScope's benchmarks
        import warnings

        warnings.warn(
            f'evalscope-niah could not register its benchmarks ({type(error).__name__}: {error}); EvalScope and its '
            "other benchmarks work as usual. Run 'evalscope-niah doctor' to see why, or set "
            'EVALSCOPE_NIAH_AUTOLOAD=0 to stop loading it.',
            RuntimeWarning,
            stacklevel=2,
        )


class _RegisteringLoader:  # duck-typed: importing importlib.abc would cost ~30 ms at every start-up
    def __init__(self, wrapped) -> None:
        self._wrapped = wrapped

    def create_module(self, spec):
        return self._wrapped.create_module(spec)

    def exec_module(self, module) -> None:
        self._wrapped.exec_module(module)
        _register()

    def __getattr__(self, name: str):
        return getattr(self._wrapped, name)


class _EvalscopeFinder:
    def find_spec(self, name, path=None, target=None):
        if name != _TARGET:
            return None
        import importlib.util

        sys.meta_path.remove(self)  # one-shot, and find_spec below must not find us again
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _RegisteringLoader(spec.loader)
        return spec


def install() -> None:
    """Register now if evalscope is already imported, else as soon as it is."""
    if _TARGET in sys.modules and hasattr(sys.modules[_TARGET], 'run_task'):
        _register()
    elif not any(isinstance(finder, _EvalscopeFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _EvalscopeFinder())
