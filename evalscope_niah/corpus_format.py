"""Where corpora come from and how their files are read: the ModelScope dataset, and which names are JSON Lines."""

from __future__ import annotations

# The corpus dataset of EvalScope's built-in needle_haystack (PaulGraham_Essays.txt, Journey_to_the_West.txt).
DATASET_ID = 'AI-ModelScope/Needle-in-a-Haystack-Corpus'

# Corpus files read as JSON Lines (one record per line, the text in ``text_field``); any other name is plain text.
JSONL_SUFFIXES = ('.jsonl', '.json-lines')
DEFAULT_TEXT_FIELD = 'text'
# More files than this for one subset is a mistake (or an attack), not a corpus.
MAX_CORPUS_FILES = 1000


def is_jsonl_file(name: str) -> bool:
    return name.lower().endswith(JSONL_SUFFIXES)
