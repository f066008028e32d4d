"""Everything that imports EvalScope lives in this package; the rest of evalscope_niah never does."""

from __future__ import annotations

from .registration import OVERRIDDEN_NAME, PUBLIC_NAME, build_meta, register, resolves_to_ours

__all__ = ['OVERRIDDEN_NAME', 'PUBLIC_NAME', 'build_meta', 'register', 'resolves_to_ours']

# Importing evalscope_niah promises ours is registered once EvalScope is imported. When this package is what imports
# EvalScope, the autoload hook fires while it is half-imported and leaves registering to it: without this line a
# later run_task got EvalScope's built-in needle_haystack (tests/params/test_params.py, then
# tests/serving/test_routing.py).
register()
