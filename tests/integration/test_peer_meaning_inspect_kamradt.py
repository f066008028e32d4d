"""inspect_evals' and Kamradt's configs as their users write them, run through EvalScope's run_task against the
127.0.0.1 test server: what the model was SENT (how many prompts, their lengths in the tool's tokenizer, where the
needle sits, which needles) against what the tool's own code would have produced for the same config.

The references below follow each tool's code (inspect_evals/niah/utils, LLMTest_NeedleInAHaystack's testers), written
out here, not imported from the package under test."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.making.tokenization import load_tokenizer
from evalscope_niah.tasks.single.bank import load_needle_bank
from evalscope_niah.testing.openai_server import OpenAICompatServer
from tests.support.tasks import task_config

pytest.importorskip('evalscope')

from evalscope import run_task

MODEL = 'mock-model'
CL100K = 'tiktoken:cl100k_base'  # inspect's and Kamradt's count for a model tiktoken does not know
SF_NEEDLE = 'The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.'
PIZZA = tuple(
    f'{name} one of the secret ingredients needed to build the perfect pizza.'
    for name in ('Figs are', 'Prosciutto is', 'Goat cheese is')
)


def _sent(extra: dict, tmp_path: Path, corpus: Path, *, subsets: list[str] | None = None) -> list[list[dict]]:
    """The messages of every chat request the run sent, in arrival order."""
    with OpenAICompatServer({MODEL: lambda messages: 'The document does not say.'}) as server:
        subsets = subsets or ['english']
        run_task(task_config(server, corpus, tmp_path / 'work', model=MODEL, extra=extra, subsets=subsets))
        return [request.messages for request in server.requests]


def _tokens(messages: list[dict]) -> int:
    tokenizer = load_tokenizer(CL100K)
    return tokenizer.count(tokenizer.render_chat(messages))


def _depth(messages: list[dict], needle: str, *, others: tuple[str, ...] = ()) -> float:
    """Where the needle starts, as a fraction of the haystack (the needle and ``others`` left out), in cl100k
    tokens."""
    text = messages[-1]['content']
    for other in others:
        text = text.replace(other, '')
    start = text.index(needle)
    haystack_start, haystack_end = _haystack_span(text)
    tokenizer = load_tokenizer(CL100K)
    before = tokenizer.count(text[haystack_start:start])
    after = tokenizer.count(text[start + len(needle) : haystack_end])
    return before / (before + after)


def _haystack_span(text: str) -> tuple[int, int]:
    # The default template wraps the document between the instruction and the question.
    start = text.index('<text>') + len('<text>') if '<text>' in text else 0
    end = text.index('</text>') if '</text>' in text else len(text)
    return start, end


def _bank_needle(messages: list[dict], entries: list) -> int:
    """The index (in the bank's English entries) of the one bank needle in the prompt."""
    text = messages[-1]['content']
    found = [index for index, entry in enumerate(entries) if entry.needle in text]
    assert len(found) == 1, found
    return found[0]


def _page_configs(section: str) -> list[dict]:
    """The ``extra_params`` blocks of a section of docs/en/coming-from.md, as the page writes them."""
    page = Path(__file__).resolve().parents[2].joinpath('docs', 'en', 'coming-from.md').read_text(encoding='utf-8')
    text = page.split(f'## {section}', 1)[1].split('\n## ', 1)[0]
    found = []
    for block in text.split('```python\n')[1:]:
        namespace: dict = {}
        exec(block.split('```', 1)[0], namespace)  # the page's own text, nothing else
        found.append(namespace['extra_params'])
    return found


def test_the_page_shows_the_configs_checked_here() -> None:
    assert _page_configs('inspect_evals `niah`') == [INSPECT_ONE, INSPECT_BANK]
    assert _page_configs("Kamradt's `LLMNeedleHaystackTester`") == [KAMRADT_README]


# ---- inspect_evals ------------------------------------------------------------------------------------------------

INSPECT_ONE = {'min_context': 1000, 'max_context': 2000, 'n_contexts': 1, 'n_positions': 1}
INSPECT_BANK = {
    'min_context': 1000,
    'max_context': 2000,
    'n_contexts': 2,
    'n_positions': 2,
    'n_needles': 3,
    'sample_method': 'sequential',
    'fixed_index': 2,
    'n_runs': 2,
}
KAMRADT_README = {'document_depth_percents': [50], 'context_lengths': [2000], 'final_context_length_buffer': 200}


def inspect_lengths(min_context: int, max_context: int, n_contexts: int) -> list[int]:
    # generate_context_lengths (needle and prompt tokens aside): max_context alone for one, else rounded even steps.
    if n_contexts == 1:
        return [max_context]
    step = (max_context - min_context) / (n_contexts - 1)
    return sorted({round(min_context + i * step) for i in range(n_contexts)})


def inspect_needle_order(n_needles: int, method: str, fixed_index: int, cells: int, runs: int, rows: int) -> list[int]:
    # sample_needles, stretch_or_squash_needles, repeat_with_shift; sample (run, length, position) takes
    # position + length * n_positions + run * cells.
    sequential = [(fixed_index + i) % rows for i in range(n_needles)]
    picked = [fixed_index] * n_needles if method == 'fixed' else sequential
    per_cell = picked[:cells] if len(picked) >= cells else (picked * (cells // len(picked) + 1))[:cells]
    return [per_cell[(row + run) % cells] for run in range(runs) for row in range(cells)]


def test_inspect_one_context_one_position_is_max_context_with_the_needle_in_the_middle(tmp_path, fixture_corpus_dir):
    # The config: inspect tests max_context alone, the needle in the middle of the buffers.
    sent = _sent(INSPECT_ONE, tmp_path, fixture_corpus_dir)
    assert len(sent) == 1
    assert _tokens(sent[0]) == inspect_lengths(1000, 2000, 1)[0] == 2000
    assert _depth(sent[0], SF_NEEDLE) == pytest.approx(0.5, abs=0.03)


def test_inspect_buffers_bound_the_positions(tmp_path, fixture_corpus_dir):
    # n_positions=3 between buffers of 300 and 100 tokens in 1500: positions at 300, 850 and 1400 of the haystack.
    extra = {'min_context': 1500, 'max_context': 1500, 'n_contexts': 1, 'n_positions': 3}
    extra |= {'start_buffer': 300, 'end_buffer': 100}
    sent = _sent(extra, tmp_path, fixture_corpus_dir)
    assert len(sent) == 3
    depths = sorted(_depth(messages, SF_NEEDLE) for messages in sent)
    haystack = 1500 - (_tokens(sent[0]) - _haystack_tokens(sent[0]))
    usable = haystack - 300 - 100
    expected = [(300 + round(i * usable / 2)) / haystack for i in range(3)]  # generate_needle_positions
    assert depths == pytest.approx(expected, abs=0.03)
    assert all(_tokens(messages) == 1500 for messages in sent)


def _haystack_tokens(messages: list[dict]) -> int:
    text = messages[-1]['content']
    start, end = _haystack_span(text)
    return load_tokenizer(CL100K).count(text[start:end])


def test_inspect_needle_bank_spread_over_the_cells_and_runs(tmp_path, fixture_corpus_dir):
    # The second config: inspect gives 8 samples holding needles 2, 3 and 4 spread over the cells.
    sent = _sent(INSPECT_BANK, tmp_path, fixture_corpus_dir)
    entries = [entry for entry in load_needle_bank() if entry.language == 'en']
    assert len(sent) == 2 * 2 * 2
    # Matched by cell, as the order of sending is ours (inspect's is runs, lengths, positions).
    expected = inspect_needle_order(3, 'sequential', 2, cells=4, runs=2, rows=len(entries))
    by_cell = {}
    for messages in sent:
        index = _bank_needle(messages, entries)
        length = _tokens(messages)
        depth = round(_depth(messages, entries[index].needle))
        by_cell.setdefault((length, depth), []).append(index)
    lengths = inspect_lengths(1000, 2000, 2)
    for cell, (length, depth) in enumerate((length, depth) for length in lengths for depth in (0, 1)):
        assert sorted(by_cell[(length, depth)]) == sorted(expected[cell::4]), (length, depth)
    assert {index for indices in by_cell.values() for index in indices} == {2, 3, 4}


def test_inspect_names_beside_evalscope_or_kamradt_names_are_refused(tmp_path):
    for extra, names in (
        ({'n_contexts': 2, 'context_lengths_num_intervals': 3}, ("inspect_evals' niah", "EvalScope's")),
        ({'n_needles': 2, 'final_context_length_buffer': 100}, ("inspect_evals' niah", "Kamradt's")),
    ):
        with OpenAICompatServer({MODEL: lambda messages: 'x'}) as server:
            with pytest.raises(NiahConfigError) as info:
                run_task(task_config(server, tmp_path, tmp_path / 'work', model=MODEL, extra=extra))
            assert not server.requests
        assert all(name in info.value.detail for name in names)


# ---- Kamradt's LLMNeedleHaystackTester -------------------------------------------------------------------------------


def kamradt_lengths(low: int, high: int, count: int) -> list[int]:
    # np.round(np.linspace(low, high, num=count, endpoint=True)).astype(int)
    np = pytest.importorskip('numpy')
    return [int(value) for value in np.round(np.linspace(low, high, num=count, endpoint=True))]


def kamradt_sigmoid(low: float, high: float, count: int) -> list[float]:
    # LLMNeedleHaystackTester.logistic over np.linspace(low, high, count).
    np = pytest.importorskip('numpy')

    def logistic(x: float) -> float:
        if x in (0, 100):
            return x
        return float(np.round(100 / (1 + math.exp(0.1 * (x - 50))), 3))

    return [logistic(x) for x in np.linspace(low, high, count)]


def test_kamradt_readme_command_single_needle(tmp_path, fixture_corpus_dir):
    # README: --document_depth_percents "[50]" --context_lengths "[2000]" (the model goes in TaskConfig), with his
    # default buffer written out so the config reads as his.
    sent = _sent(KAMRADT_README, tmp_path, fixture_corpus_dir)
    assert len(sent) == 1
    # Kamradt trims haystack + needle to 2000 - 200 cl100k tokens; here the whole prompt is 2000 - 200.
    assert _tokens(sent[0]) == 1800
    assert _depth(sent[0], SF_NEEDLE) == pytest.approx(0.5, abs=0.03)


def test_kamradt_defaults_grid_sigmoid_and_multi_needle(tmp_path, fixture_corpus_dir):
    # The README's multi-needle command, lengths shrunk: 3 lengths x 5 sigmoid depths, run.py's pizza needles.
    extra = {
        'multi_needle': True,
        'context_lengths_min': 1000,
        'context_lengths_max': 2000,
        'context_lengths_num_intervals': 3,
        'document_depth_percent_intervals': 5,
        'document_depth_percent_interval_type': 'sigmoid',
        'print_ongoing_status': False,
        'save_contexts': False,
    }
    sent = _sent(extra, tmp_path, fixture_corpus_dir)
    assert len(sent) == 3 * 5
    lengths = sorted({_tokens(messages) for messages in sent})
    assert lengths == [length - 200 for length in kamradt_lengths(1000, 2000, 3)]
    for messages in sent:
        text = messages[-1]['content']
        assert all(text.count(needle) == 1 for needle in PIZZA)
    firsts = sorted(_depth(m, PIZZA[0], others=PIZZA[1:]) * 100 for m in sent if _tokens(m) == 1300)
    assert firsts == pytest.approx(sorted(kamradt_sigmoid(0, 100, 5)), abs=3)
    # The rest spread to the end as his multi-needle tester spreads them: depth + i * (100 - depth) / 3 (checked
    # where the spread is wider than a sentence: near the end the needles share the last sentence boundaries).
    for messages in sent:
        depths = [_depth(messages, needle, others=tuple(n for n in PIZZA if n != needle)) * 100 for needle in PIZZA]
        step = (100 - depths[0]) / 3
        if step < 10:
            continue
        assert depths == pytest.approx([depths[0] + i * step for i in range(3)], abs=3)


@pytest.mark.parametrize(
    ('key', 'fragment'),
    [
        ('evaluator', 'judge'),
        ('model_to_test', 'TaskConfig model'),
        ('provider', 'TaskConfig model'),
        ('num_concurrent_requests', 'eval_batch_size'),
        ('haystack_dir', 'file_list'),
    ],
)
def test_kamradt_arguments_we_cannot_honour_are_refused(key, fragment, tmp_path):
    with OpenAICompatServer({MODEL: lambda messages: 'x'}) as server:
        with pytest.raises(NiahConfigError) as info:
            run_task(task_config(server, tmp_path, tmp_path / 'work', model=MODEL, extra={key: 'openai'}))
        assert not server.requests
    assert info.value.param == key and "Kamradt's" in info.value.detail and fragment in info.value.detail
