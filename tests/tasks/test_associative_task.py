"""Task 'associative' end to end: previewed samples keep the no-overlap promise; a model that matches the
question's words literally fails, one that knows the hop succeeds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalscope_niah.tasks.associative.pairs import load_pairs, names, overlap
from evalscope_niah.testing.openai_server import OpenAICompatServer
from tests.support.preview import preview_rows
from tests.support.tasks import task_settings

DEPTHS = [0, 10, 20, 30, 40, 50, 60, 70, 80, 90]


def _preview(corpus_dir: Path, output: Path, **extra) -> list[dict]:
    extra_params = {'task': 'associative', 'context_lengths': [700], 'document_depth_percents': DEPTHS, **extra}
    return preview_rows({'local_path': str(corpus_dir), 'extra_params': extra_params}, output)


def test_preview_covers_thirty_pairs_per_language_without_overlap(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    rows = _preview(fixture_corpus_dir, tmp_path / 'samples.jsonl', num_repeats=4)
    corpora = {path.name: path.read_text(encoding='utf-8') for path in fixture_corpus_dir.iterdir()}
    for language in ('en', 'zh'):
        pairs = {pair.question: pair for pair in load_pairs(language)}
        rows_of = [row for row in rows if row['language'] == language]
        asked = {row['question'] for row in rows_of}
        assert len(asked) >= 30
        for row in rows_of:
            pair, name = pairs[row['question']], row['answer_keys'][0]
            assert overlap(pair) == set()
            assert name in row['needles'][0] and name not in row['question']
            assert name in names(language)
            assert not any(name in text for text in corpora.values())
            assert not any(form in text for form in pair.target_forms for text in corpora.values())


def _haystack(messages: list[dict]) -> str:
    return messages[-1]['content'].split('<text>', 1)[1].split('</text>', 1)[0]


def _question(messages: list[dict]) -> str:
    return messages[-1]['content'].rsplit('</text>', 1)[1]


_WORD = re.compile(r'\w+')


def literal_model(messages: list[dict]) -> str:
    """Answers from the sentence sharing the most words with the question (a lexical retriever)."""
    question = {word.lower() for word in _WORD.findall(_question(messages)) if len(word) > 3}
    sentences = re.split(r'(?<=[.!?])\s+', _haystack(messages))
    best = max(sentences, key=lambda sentence: len(question & {w.lower() for w in _WORD.findall(sentence)}))
    found = [name for name in names('en') if name in best]
    return found[0] if found else 'The text does not say.'


def hop_model(messages: list[dict]) -> str:
    """Knows the hop: finds the pair by its question, then the sentence holding the needle's key terms."""
    question = _question(messages)
    pair = next(pair for pair in load_pairs('en') if pair.question in question)
    haystack = _haystack(messages)
    for name in names('en'):
        if pair.needle_for(name) in haystack:
            return name
    return 'The text does not say.'


@pytest.mark.parametrize(('model', 'low', 'high'), [(literal_model, 0.0, 0.3), (hop_model, 0.9, 1.0)])
def test_literal_matching_fails_and_the_hop_succeeds(
    model, low: float, high: float, fixture_corpus_dir: Path, tmp_path: Path
) -> None:
    extra = {
        'task': 'associative',
        'context_lengths': [900],
        'document_depth_percents': [10, 50, 90],
        'num_repeats': 2,
        'associative_distractor': True,
    }
    with OpenAICompatServer({'m': model}) as server:
        from evalscope import TaskConfig, run_task

        settings = task_settings(server, fixture_corpus_dir, tmp_path, model='m', extra=extra, subsets=['english'])
        report = run_task(TaskConfig(**settings))['needle_haystack']
    accuracy = next(
        m.score
        for m in report.metrics
        if m.identity.name == 'accuracy' and m.identity.dimensions == {'scope': 'overall'}
    )
    assert low <= accuracy <= high


def _associative_meta(language: str):
    from evalscope_niah.metadata import SampleMeta
    from evalscope_niah.tasks.associative.task import AssociativeData

    pair, name = load_pairs(language)[0], names(language)[0]
    other = names(language)[1]
    meta = SampleMeta(
        subset='s',
        language=language,
        task='associative',
        context_length=1000,
        depth_percent=50.0,
        repeat=0,
        pick=0,
        needles=(pair.needle_for(name),),
        question=pair.question,
        reference_answer=name,
        answer_keys=(name,),
        start_token=0,
        divergence_token=0,
        task_data=AssociativeData(candidates=names(language)).to_json(),
    )
    return meta, pair, name, other


_ASSOCIATIVE_CASES = {
    'en': {
        'right': ('{name}.', 'pass'),
        'right, explained': ('{name}, because {needle}', 'pass'),
        'other name': ('{other}.', 'fail'),
        'name list': ('{name}, {other} or Marisol.', 'fail'),
        'negation': ('It is not {name}.', 'fail'),
        'refusal': ('The text does not say.', 'fail'),
        'paste': ('{paste}', 'fail'),
    },
    'zh': {
        'right': ('{name}。', 'pass'),
        'other name': ('{other}。', 'fail'),
        'name list': ('{name}、{other}或者别人。', 'fail'),
        'negation': ('不是{name}。', 'fail'),
        'refusal': ('文中没有提到。', 'fail'),
        'paste': ('{paste}', 'fail'),
    },
}


@pytest.mark.parametrize(
    ('language', 'category'), [(lang, cat) for lang, cases in _ASSOCIATIVE_CASES.items() for cat in cases]
)
def test_associative_answers_through_the_task_type(language: str, category: str) -> None:
    from evalscope_niah.scoring import PromptText
    from evalscope_niah.tasks import score_answer

    meta, pair, name, other = _associative_meta(language)
    template, expected = _ASSOCIATIVE_CASES[language][category]
    filler = ' '.join(
        load_pair.needle_for(n) for load_pair, n in zip(load_pairs(language)[1:8], names(language)[2:9], strict=True)
    )
    needle = pair.needle_for(name)
    answer = template.format(name=name, other=other, needle=needle[0].lower() + needle[1:], paste=filler + needle)
    # The other pairs stand in the haystack the model was shown, as in a run: the paste copies them.
    score = score_answer(answer, meta, prompt=PromptText(shown=filler + ' ' + needle + ' ' + filler))
    assert (score.accuracy >= 0.9) if expected == 'pass' else (score.accuracy <= 0.3), (answer, score)
