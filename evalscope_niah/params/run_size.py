"""How large a run may be, and the checks that refuse a larger one before any haystack is built (docs: parameter
table)."""

from __future__ import annotations

from ..errors import NiahConfigError

# Largest context length, in tokens: beyond any model's window, small enough that a typo (an extra zero or three)
# fails at once instead of tokenizing gigabytes.
MAX_CONTEXT_LENGTH = 10_000_000
# How often the corpus may be repeated to fill the longest context length (parameter max_corpus_repeats). A
# haystack that is mostly copies of one short text tests little; raise it knowingly.
DEFAULT_MAX_CORPUS_REPEATS = 20
# Samples per run (grid cells x subsets, before EvalScope's limit/repeats). Above it the run is refused unless
# allow_large_grid is true: a typo in an interval count should not start a 100,000-request run.
MAX_SAMPLES_PER_RUN = 10_000
# Even with allow_large_grid: every cell is held in memory as a sample, and each axis is materialised as a list.
MAX_SAMPLES_HARD_LIMIT = 1_000_000
MAX_GRID_AXIS = 10_000  # values of one grid axis: lengths, depths, num_repeats, n_needles, n_runs


def check_sample_count(total: int, *, shape: str, allow_large_grid: bool) -> int:
    """Refuse ``total`` samples above ``MAX_SAMPLES_PER_RUN`` unless ``allow_large_grid``, and above
    ``MAX_SAMPLES_HARD_LIMIT`` always; ``shape`` says how the grid multiplies up to it. Returns ``total``."""
    if total > MAX_SAMPLES_HARD_LIMIT:
        raise NiahConfigError(
            'allow_large_grid',
            f'the run has {total:,} samples ({shape}); at most {MAX_SAMPLES_HARD_LIMIT:,} are possible',
        )
    if total > MAX_SAMPLES_PER_RUN and not allow_large_grid:
        raise NiahConfigError(
            'allow_large_grid',
            f'the run has {total:,} samples ({shape}), more than {MAX_SAMPLES_PER_RUN:,}; shrink the grid or set '
            'allow_large_grid: true',
        )
    return total
