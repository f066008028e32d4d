"""Everything that imports EvalScope lives in this package; the rest of evalscope_niah never does."""

from __future__ import annotations

from .registration import OVERRIDDEN_NAME, PUBLIC_NAME, build_meta, register, resolves_to_ours

__all__ = ['OVERRIDDEN_NAME', 'PUBLIC_NAME', 'build_meta', 'register', 'resolves_to_ours']
