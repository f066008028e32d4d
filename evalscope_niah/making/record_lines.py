"""Samples as the JSON lines `preview` writes, without serializing and scanning every prompt whole.

Prompts of a grid are cut from the same stretch of corpus, so the corpus is JSON-escaped once, in blocks
(``RepeatedCorpus.json_body``), and each line joins the blocks its context spans. The bytes are those of
``escaping.json_text(sample.to_record())`` encoded as UTF-8: both escapings work character by character. On the
1k-128k grid (114 MB of prompts) serializing this way costs a small part of what json.dumps and the scan did.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..escaping import json_text
from ..metadata import GridCell
from ..params.run_params import NiahParams
from .haystack import Haystack, HaystackBuilder
from .repeated_corpus import json_body
from .samples import SubsetSampler, subset_samplers

__all__ = ['context_json', 'iter_record_lines', 'record_line']

# Stands for the context in a record serialized before the context's own JSON is put in its place.
_CONTEXT_MARK = '\ue001NIAH-CONTEXT-JSON\ue001'
_CONTEXT_MARK_JSON = json_body(_CONTEXT_MARK)


def iter_record_lines(params: NiahParams, **options) -> Iterator[bytes]:
    """``iter_samples``'s samples as UTF-8 JSON lines (``record_line``), without the line end; options as for
    ``subset_samplers``."""
    for sampler, cells in subset_samplers(params, **options):
        for cell in cells:
            yield record_line(sampler, cell)


def record_line(sampler: SubsetSampler, cell: GridCell) -> bytes:
    """``json_text(sample.to_record(), allow_nan=True)`` of the cell's sample, UTF-8 encoded."""
    plan = sampler.plan(cell)
    sample, builder, haystack = sampler.build_with_haystack(plan)
    record = sample.to_record()
    record['messages'][-1]['content'] = sampler.prompt.user_message(context=_CONTEXT_MARK, question=plan.question)
    line = json_text(record, allow_nan=True).encode('utf-8')
    if line.count(_CONTEXT_MARK_JSON) != 1:  # the mark in a needle or question: serialize the record whole
        return json_text(sample.to_record(), allow_nan=True).encode('utf-8')
    before, after = line.split(_CONTEXT_MARK_JSON)
    return before + context_json(builder, haystack) + after


def context_json(builder: HaystackBuilder, haystack: Haystack) -> bytes:
    """``json_body(haystack.context)``, its corpus stretches taken from the corpus's escaped blocks."""
    pieces = []
    cursor = haystack.start
    for item in haystack.spliced:  # as HaystackBuilder._render places them between start and end
        if haystack.start <= item.position <= haystack.end:
            pieces += [builder.corpus.json_body(cursor, item.position), json_body(item.text)]
            cursor = item.position
    pieces.append(builder.corpus.json_body(cursor, haystack.end))
    return b''.join(pieces)
