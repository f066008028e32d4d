"""RULER's niah configs as its users write them (a synthetic.yaml entry, or its arguments), run through EvalScope's
run_task against the 127.0.0.1 test server, checked for *meaning*: what the model was sent against what RULER's
niah.py would have produced for that entry. Its length in the tokenizer (exact, the chat template included), how
many needles and which (the asked keys' needles, RULER's other keys' needles beside them, none of the asked keys
anywhere else), the haystack (the essay corpus, RULER's noise lines, or lines of other needles), the question (as
RULER words it), the needle's depth and how many samples; and that a model giving the values passes, one that does
not fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalscope_niah.making.tokenization import load_tokenizer
from evalscope_niah.tasks.ruler_niah.picks import NOISE_LINE
from evalscope_niah.tasks.ruler_niah.presets import RULER_DEFAULTS
from evalscope_niah.testing.openai_server import OpenAICompatServer
from tests.support.reports import overall_scores
from tests.support.ruler import SYNTHETIC_YAML
from tests.support.tasks import task_config

pytest.importorskip('evalscope')

from evalscope import run_task

MODEL = 'mock-model'
TOKENIZER = 'Qwen/Qwen3-0.6B'
GRID = {'context_lengths': [900], 'document_depth_percents': [0, 50, 100], 'tokenizer_path': TOKENIZER}
NEEDLE = re.compile(r'One of the special magic (\w+) for (\S+) is: (\S+)\.')
QUESTION = re.compile(r'What (?:is|are all) the special magic (\w+) for (.+?) mentioned in the provided text\?')


def _asked(text: str) -> tuple[str, list[str]]:
    kind, query = QUESTION.search(text).groups()
    return kind, [key for key in re.split(r', and |, ', query) if key]


def _right_model(messages: list[dict]) -> str:
    """Gives every value the prompt states for the asked keys, after RULER's answer prefix (which restates the keys,
    of the values' type in multikey_3): a model that found the needles."""
    text = messages[-1]['content']
    kind, keys = _asked(text)
    values = [value for _, key, value in NEEDLE.findall(text) if key in keys]
    return f'The special magic {kind} for {", ".join(keys)} mentioned in the provided text are: {", ".join(values)}.'


def _wrong_model(messages: list[dict]) -> str:
    return 'The text does not say.'


def _run(extra: dict, responder, tmp_path: Path, corpus: Path):
    with OpenAICompatServer({MODEL: responder}) as server:
        report = run_task(task_config(server, corpus, tmp_path / 'work', model=MODEL, extra=extra, subsets=['english']))
        return overall_scores(report['needle_haystack'])['accuracy'], [request.messages for request in server.requests]


def _rulers_arguments(name: str) -> dict:
    """The entry as RULER's users write its arguments (niah.py's names), with no task: the names make it RULER's."""
    haystack, key_type, value_type, k, v, q = SYNTHETIC_YAML[name]
    arguments = {
        'type_haystack': haystack, 'type_needle_k': key_type, 'type_needle_v': value_type,
        'num_needle_k': k, 'num_needle_v': v, 'num_needle_q': q,
    }  # fmt: skip
    # What equals niah.py's default is left out, as a RULER user leaves it out.
    return {arg: value for arg, value in arguments.items() if value != RULER_DEFAULTS[arg]} or {'num_needle_q': 1}


@pytest.mark.parametrize('form', ['preset', 'arguments'])
@pytest.mark.parametrize('name', SYNTHETIC_YAML)
def test_ruler_entry_sends_what_ruler_would(name: str, form: str, tmp_path: Path, fixture_corpus_dir: Path):
    haystack, _, value_type, k, v, q = SYNTHETIC_YAML[name]
    given = {'task': 'ruler_niah', 'ruler_preset': name} if form == 'preset' else _rulers_arguments(name)
    accuracy, sent = _run({**given, **GRID}, _right_model, tmp_path, fixture_corpus_dir)
    assert accuracy >= 0.9
    assert len(sent) == len(GRID['context_lengths']) * len(GRID['document_depth_percents'])  # samples
    tokenizer = load_tokenizer(TOKENIZER)
    essay = (fixture_corpus_dir / 'PaulGraham_Essays.txt').read_text(encoding='utf-8')
    for messages in sent:
        assert tokenizer.count(tokenizer.render_chat(messages)) == GRID['context_lengths'][0]
        text = messages[-1]['content']
        kind, keys = _asked(text)
        # RULER's wording: singular when one value is asked, its keys listed 'a, b, and c'
        assert kind == (value_type if q * v > 1 else value_type[:-1]) and len(keys) == q
        needles = NEEDLE.findall(text)
        asked = [needle for needle in needles if needle[1] in keys]
        assert len(asked) == q * v and {needle[0] for needle in asked} == {value_type}  # each key's v values
        others = [needle for needle in needles if needle[1] not in keys]
        if haystack == 'needle':  # the haystack is needles about other keys, one a line, the inserted ones too
            assert len(others) >= 5 and {needle[0] for needle in others} == {value_type}
            lines = text.split('<text>\n', 1)[1].split('\n</text>', 1)[0].split('\n')
            # One haystack line may be cut at the length: the last, or the one before a needle that ends the
            # document (depth 100 puts the needle after the cut).
            cut = [index for index, line in enumerate(lines) if line.strip() and not NEEDLE.fullmatch(line.strip())]
            assert len(cut) <= 1 and all(index >= len(lines) - 3 for index in cut), (cut, lines[-4:])
        else:  # RULER's other keys (max(k, q) - q of them), each with its v needles; nothing else of that form
            assert len(others) == (max(k, q) - q) * v
        if haystack == 'noise':  # nothing but RULER's noise sentences around the needles
            body = NEEDLE.sub('', text.split(QUESTION.search(text).group())[0])
            noise = set(re.findall(r'[A-Z][^.]*\.', NOISE_LINE))
            sentences = {s for s in re.findall(r'[A-Z][^.]*\.', body)}
            assert sentences - noise <= _template_sentences(text, body) and len(sentences & noise) == len(noise)
        if haystack == 'essay':
            assert any(len(line) > 40 and line in essay for line in text.split('\n'))


def _template_sentences(text: str, body: str) -> set[str]:
    """The sentences the user template wraps the haystack with (ours, not RULER's preamble)."""
    return set(re.findall(r'[A-Z][^.]*\.', body.split('The grass', 1)[0]))


def test_the_needle_stands_at_the_cells_depth(tmp_path: Path, fixture_corpus_dir: Path):
    extra = {'task': 'ruler_niah', 'type_haystack': 'noise', **GRID}
    _, sent = _run(extra, _wrong_model, tmp_path, fixture_corpus_dir)
    positions = []
    for messages in sent:
        text = messages[-1]['content']
        first, last = text.index('The grass'), text.rindex('There and back again.')
        positions.append((NEEDLE.search(text).start() - first) / (last - first))
    low, middle, high = sorted(positions)  # requests arrive in the server's order, not the grid's
    assert low < 0.05 and 0.4 < middle < 0.6 and high > 0.85


def test_a_model_that_does_not_find_them_fails(tmp_path: Path, fixture_corpus_dir: Path):
    extra = {'task': 'ruler_niah', 'ruler_preset': 'ruler_niah_multivalue', **GRID}
    accuracy, sent = _run(extra, _wrong_model, tmp_path, fixture_corpus_dir)
    assert accuracy <= 0.3 and len(sent) == 3


@pytest.mark.parametrize(
    ('extra', 'param'),
    [
        ({'task': 'ruler_niah', 'type_haystack': 'book'}, 'type_haystack'),
        ({'task': 'ruler_niah', 'max_seq_length': 4096}, 'max_seq_length'),
        ({'task': 'niah_multikey_2'}, 'task'),
        # RULER's arguments beside another tool's names: refused naming both tools
        ({'type_haystack': 'noise', 'final_context_length_buffer': 200}, 'final_context_length_buffer'),
        ({'num_needle_q': 4, 'tokenizer_model': 'gpt-4', 'length': 1000}, 'num_needle_q'),
    ],
    ids=['value', 'name', 'task', 'with-kamradt', 'with-cdme'],
)
def test_rulers_arguments_refused_before_any_request(extra: dict, param: str, tmp_path: Path, fixture_corpus_dir: Path):
    from evalscope_niah.errors import NiahConfigError

    with OpenAICompatServer({MODEL: _wrong_model}) as server:
        with pytest.raises(NiahConfigError) as info:
            run_task(task_config(server, fixture_corpus_dir, tmp_path / 'w', model=MODEL, extra=extra))
        assert not server.requests
    assert info.value.param == param and 'RULER' in str(info.value)
