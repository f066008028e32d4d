"""How large a run may be, and the checks that refuse a larger one before any haystack is built (docs: parameter
table)."""

from __future__ import annotations

from ..errors import NiahConfigError
from .subsets import ResolvedSubset

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


def check_corpus_repeats(
    *, subset: ResolvedSubset, corpus_tokens: int, max_context_length: int, max_corpus_repeats: int
) -> None:
    """Refuse a longest context length that needs the corpus repeated more than ``max_corpus_repeats`` times.

    ``corpus_tokens`` may be a lower bound (a prefix indexed far enough for the longest length): the check only
    fails when the whole corpus is shorter than the longest length divided by the cap.
    """
    if corpus_tokens * max_corpus_repeats >= max_context_length:
        return
    times = max_context_length / max(corpus_tokens, 1)
    raise NiahConfigError(
        'max_corpus_repeats',
        f'context length {max_context_length:,} would repeat corpus file {subset.corpus_file!r} of subset '
        f'{subset.name!r} ({corpus_tokens:,} tokens) {times:,.1f} times, more than max_corpus_repeats='
        f'{max_corpus_repeats}; use a longer corpus, shorter context lengths, or raise max_corpus_repeats',
    )
