"""OpenCompass NeedleBench v2 configs (configs/datasets/needlebench_v2/needlebench_v2_4k/*.py) run through EvalScope's
run_task against the 127.0.0.1 test server as their users write them, and what the model was sent is checked against
what NeedleBench would send: how many samples, their lengths, where the needle sits, and which needle each repeat
asks (NeedleBench picks ``random.seed(repeat); random.choice(needles of the language)``).

Only the folder and the needle file change: the needle file is tests/data/needlebench/needles.jsonl, records of our
own in NeedleBench's layout. The forms that do not carry over (parallel, multi-reasoning) are refused by name.
"""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.making.corpus import DEMO_CORPUS_DIR, DEMO_CORPUS_FILES
from evalscope_niah.making.tokenization import load_tokenizer
from evalscope_niah.tasks.compose import parse_params
from evalscope_niah.testing.openai_server import OpenAICompatServer, needle_finder
from tests.support.reports import overall_scores
from tests.support.tasks import task_config

pytest.importorskip('evalscope')

from evalscope import run_task

MODEL = 'mock-model'
NOT_FOUND = 'The document does not say.'
NEEDLES_FILE = Path(__file__).parents[1] / 'data' / 'needlebench' / 'needles.jsonl'
# needlebench_v2_4k: context_lengths [1000, 2000, 3000, 4000], depths_list 0..100 step 10, gpt-4's tokenizer.
DEPTHS_LIST = [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
# One dataset dict of needlebench_v2_single_4k (English), minus the OpenCompass objects (abbr, type, path, *_cfg).
SINGLE_EN: dict[str, Any] = {
    'length': 1000,
    'depth': 100,
    'tokenizer_model': 'gpt-4',
    'file_list': ['PaulGrahamEssays.jsonl'],
    'num_repeats_per_file': 10,
    'length_buffer': 500,
    'language': 'English',
    'needle_file_name': 'needles.jsonl',
}
SINGLE_ZH: dict[str, Any] = {
    **SINGLE_EN,
    'depth': 0,
    'file_list': ['zh_finance.jsonl'],
    'length_buffer': 200,
    'language': 'Chinese',
}
# The whole grid of the English config as one run: its lists for the dict's one length and depth (lengths shrunk
# to the first two of four, and repeats to 2 of 10, to keep a test server round trip per cell fast).
GRID_EN: dict[str, Any] = {
    **{key: value for key, value in SINGLE_EN.items() if key not in ('length', 'depth')},
    'context_lengths': [1000, 2000],
    'document_depth_percents': DEPTHS_LIST,
    'num_repeats_per_file': 2,
}


def _folder(tmp_path: Path) -> Path:
    """NeedleBench's data folder: its corpus files as JSON Lines ({'text': ...}) and its needle file."""
    folder = tmp_path / 'needlebench'
    folder.mkdir(parents=True)
    for name, language in (('PaulGrahamEssays.jsonl', 'english'), ('zh_finance.jsonl', 'chinese')):
        text = (DEMO_CORPUS_DIR / DEMO_CORPUS_FILES[language]).read_text('utf-8')
        lines = [json.dumps({'text': paragraph}, ensure_ascii=False) for paragraph in text.split('\n') if paragraph]
        (folder / name).write_text('\n'.join(lines) + '\n', encoding='utf-8')
    shutil.copyfile(NEEDLES_FILE, folder / 'needles.jsonl')
    return folder


def _needlebench_picks(language: str, repeats: int) -> list[dict[str, str]]:
    """The records NeedleBench's origin dataset picks, one per repeat counter (written from its description)."""
    records = [json.loads(line) for line in NEEDLES_FILE.read_text('utf-8').splitlines() if line.strip()]
    lines = [record for record in records if record['language'] == language]
    picks = []
    for counter in range(repeats):
        random.seed(counter)
        picks.append(random.choice(lines))
    return picks


def _sent(extra: dict[str, Any], tmp_path: Path, *, right: bool) -> tuple[list[list[dict]], float]:
    responder = needle_finder if right else (lambda messages: NOT_FOUND)
    with OpenAICompatServer({MODEL: responder}) as server:
        subsets = ['chinese' if extra['language'] == 'Chinese' else 'english']  # the subset of the dict's language
        task = task_config(
            server, _folder(tmp_path), tmp_path / 'work', model=MODEL, extra=dict(extra), subsets=subsets
        )
        report = run_task(task)['needle_haystack']
        sent = [request.messages for request in server.requests]
    return sent, overall_scores(report)['accuracy']


def _context(messages: list[dict]) -> str:
    user = messages[-1]['content']
    return user.split('<text>\n', 1)[1].split('\n</text>', 1)[0]


@pytest.mark.parametrize(('config', 'language'), [(SINGLE_EN, 'English'), (SINGLE_ZH, 'Chinese')], ids=['en', 'zh'])
def test_needlebench_v2_single_dict_runs_as_written(config: dict, language: str, tmp_path: Path) -> None:
    sent, accuracy = _sent(config, tmp_path, right=True)
    assert accuracy >= 0.9, accuracy
    # num_repeats_per_file samples, each asking the needle NeedleBench picks for its repeat.
    picks = _needlebench_picks(language, config['num_repeats_per_file'])
    assert len(sent) == config['num_repeats_per_file']
    asked = Counter(next(d['needle'] for d in picks if d['needle'] in _context(m)) for m in sent)
    assert asked == Counter(d['needle'] for d in picks)
    for messages in sent:
        question = messages[-1]['content'].split('<question>\n', 1)[1]
        needle = next(d for d in picks if d['needle'] in _context(messages))
        assert question.startswith(needle['retrieval_question'])
    # Lengths: the whole prompt in gpt-4's tokenizer measures length - length_buffer, as written.
    tokenizer = load_tokenizer('tiktoken:cl100k_base')
    for messages in sent:
        assert tokenizer.count(tokenizer.render_chat(messages)) == config['length'] - config['length_buffer']
    # Depth: 100 ends the document with the needle, 0 opens it.
    for messages in sent:
        context = _context(messages)
        needle = next(d['needle'] for d in picks if d['needle'] in context)
        if config['depth'] == 100:
            assert context.rstrip().endswith(needle)
        else:
            assert context.startswith(needle)
    wrong, accuracy = _sent(config, tmp_path / 'wrong', right=False)
    assert len(wrong) == config['num_repeats_per_file'] and accuracy <= 0.3


def test_needlebench_v2_grid_as_one_run(tmp_path: Path) -> None:
    """Its context_lengths and depths_list as our lists: one sample per (length, depth, repeat), each repeat asking
    its NeedleBench pick at every length and depth."""
    sent, accuracy = _sent(GRID_EN, tmp_path / 'right', right=True)
    assert accuracy >= 0.9, accuracy
    repeats = GRID_EN['num_repeats_per_file']
    assert len(sent) == len(GRID_EN['context_lengths']) * len(DEPTHS_LIST) * repeats
    picks = _needlebench_picks('English', repeats)
    expected = Counter(
        (length - GRID_EN['length_buffer'], pick['needle'])
        for length in GRID_EN['context_lengths']
        for _ in DEPTHS_LIST
        for pick in picks
    )
    tokenizer = load_tokenizer('tiktoken:cl100k_base')
    seen = Counter()
    for messages in sent:
        needle = next(d['needle'] for d in picks if d['needle'] in _context(messages))
        seen[(tokenizer.count(tokenizer.render_chat(messages)), needle)] += 1
    assert seen == expected


@pytest.mark.parametrize(
    ('extra', 'key', 'says'),
    [
        # needlebench_v2_multi_retrieval_4k: the parallel form, a list of depths in one sample.
        ({**SINGLE_EN, 'depth': None, 'depths': DEPTHS_LIST}, 'depths', 'multi_retrieval'),
        # needlebench_v2_multi_reasoning_4k: num_needles chains from names.json.
        (
            {**SINGLE_EN, 'needle_file_name': 'names.json', 'num_needles': 3, 'diff': 10},
            'needle_file_name',
            'reasoning',
        ),
        ({**SINGLE_EN, 'quesiton_position': 'Start'}, 'quesiton_position', 'prompt_template'),
        ({**SINGLE_EN, 'needle_bank': 'other.jsonl'}, 'needle_file_name', 'needle_bank'),
    ],
    ids=['parallel', 'multi_reasoning', 'question_position', 'two_banks'],
)
def test_needlebench_forms_that_do_not_carry_over_are_refused(extra: dict, key: str, says: str) -> None:
    extra = {name: value for name, value in extra.items() if value is not None}
    with pytest.raises(NiahConfigError) as info:
        parse_params(extra)
    assert info.value.param == key
    assert says in str(info.value)
