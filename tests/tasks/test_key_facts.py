"""The key fact of a needle the user wrote (tasks/single/key_facts.py), derived from needle and question: checked on
the needles and questions other tools document (EvalScope's two examples, Kamradt's tester, OpenCompass' NeedleBench),
on the needle bank's 56 entries against their hand-written answers, and on questions worded unlike the needle; then
end to end, through preview and a run's rule score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalscope_niah.params.kamradt_names import MULTI_NEEDLES, MULTI_QUESTION
from evalscope_niah.params.subsets import EN_ANSWER, EN_NEEDLE, EN_QUESTION, ZH_ANSWER, ZH_NEEDLE, ZH_QUESTION
from evalscope_niah.tasks.single.bank import load_needle_bank
from evalscope_niah.tasks.single.key_facts import derived_key, derived_keys
from tests.support.peer_configs import CDME_SINGLE, EVALSCOPE_MULTI, EVALSCOPE_SINGLE, PIZZA_NEEDLES
from tests.support.preview import preview_rows

NEEDLEBENCH_FILE = Path(__file__).parents[1] / 'data' / 'needlebench' / 'needles.jsonl'
PIZZA_KEYS = ('Figs', 'Prosciutto', 'Goat cheese')


@pytest.mark.parametrize(
    ('needles', 'question', 'language', 'keys'),
    [
        # EvalScope's single-needle example (its docs), with its question and worded otherwise
        (EVALSCOPE_SINGLE['needles'], EVALSCOPE_SINGLE['retrieval_question'], 'en', (EN_ANSWER,)),
        (EVALSCOPE_SINGLE['needles'], 'What is the most fun thing to do in San Francisco?', 'en', (EN_ANSWER,)),
        ([EN_NEEDLE], 'In San Francisco, what should one do for fun?', 'en', (EN_ANSWER,)),
        # EvalScope's multi-needle example (pizza) and Kamradt's multi_needle question for the same needles
        (EVALSCOPE_MULTI['needles'], EVALSCOPE_MULTI['retrieval_question'], 'en', PIZZA_KEYS),
        (MULTI_NEEDLES, MULTI_QUESTION, 'en', PIZZA_KEYS),
        # Kamradt's default needle and question (the same sentence, written on its own line)
        (['\n' + EN_NEEDLE + '\n'], EN_QUESTION, 'en', (EN_ANSWER,)),
        # OpenCompass NeedleBench's needle form ('Hidden on <island> is the legendary <item>.')
        (['Hidden on Emerald Island is the legendary Stardust Shard.'],
         'What legendary item is hidden on Emerald Island?', 'en', ('Stardust Shard',)),
        (['在翡翠岛上隐藏着传说中的星尘碎片。'], '翡翠岛上隐藏的传说物品是什么？', 'zh', ('星尘碎片',)),
        # CDME's Chinese needle with its format-asking question, and questions worded unlike the needle
        ([CDME_SINGLE['needle']], CDME_SINGLE['retrieval_question'], 'zh', (ZH_ANSWER,)),
        ([ZH_NEEDLE], '小明最想去实习的地方是哪里？', 'zh', (ZH_ANSWER,)),
        ([ZH_NEEDLE], '小明最喜欢在哪里实习？', 'zh', (ZH_ANSWER,)),
        ([ZH_NEEDLE], ZH_QUESTION, 'zh', (ZH_ANSWER,)),
        # our own, each asked in other words than the needle says it
        (["The lighthouse keeper's ginger cat answers to the name Pepperjack."], "What is the lighthouse keeper's cat "
         'called?', 'en', ('Pepperjack',)),
        (['The winning number in the Ashgrove raffle was 4417.'], 'Which number won the Ashgrove raffle?', 'en',
         ('4417',)),
        (['Mara keeps her spare key under a blue flowerpot by the garden shed.'], 'Where does Mara hide her spare key?',
         'en', ('blue flowerpot by the garden shed',)),
        (['老码头茶馆的招牌菜是桂花藕粉。'], '老码头茶馆最出名的菜是什么？', 'zh', ('桂花藕粉',)),
        (['石桥村每年秋天都会卖出整整2817斤板栗。'], '石桥村一年秋天卖多少斤板栗？', 'zh', ('2817',)),
    ],
)  # fmt: skip
def test_the_key_is_the_part_of_the_needle_that_answers(needles, question, language, keys) -> None:
    assert derived_keys(needles, question, language=language) == keys
    assert all(any(key in needle for needle in needles) for key in keys)  # a span of the needle, as written


def _entries() -> list[tuple[str, str, str, str]]:
    bank = [(item.id, item.needle, item.question, item.answer) for item in load_needle_bank()]
    records = [json.loads(line) for line in NEEDLEBENCH_FILE.read_text(encoding='utf-8').splitlines()]
    needlebench = [(f'needlebench-{n}', r['needle'], r['retrieval_question'], r['arg2']) for n, r in enumerate(records)]
    return bank + needlebench


@pytest.mark.parametrize('entry', _entries(), ids=lambda entry: entry[0])
def test_the_key_agrees_with_the_hand_written_answer(entry: tuple[str, str, str, str]) -> None:
    """Every needle bank entry and NeedleBench record, its answer hidden: the derived key is the answer, or holds
    it with a modifier of the needle ('largest turnip lantern' for 'turnip lantern': a right short answer is then a
    paraphrase a judge decides, never a certain fail), or is the answer without a word the question says ('pear' of
    'pear wood' asked 'What wood ...')."""
    _, needle, question, answer = entry
    key = derived_key(needle, question, language='zh' if '\u4e00' <= needle[0] <= '\u9fff' else 'en')
    assert key is not None and key in needle
    assert answer.casefold() in key.casefold() or key.casefold() in answer.casefold(), (key, answer)


def test_most_keys_are_the_hand_written_answer_exactly() -> None:
    entries = _entries()
    exact = [
        entry
        for entry in entries
        if (derived_key(entry[1], entry[2], language='zh' if entry[0].startswith('zh') else 'en') or '').casefold()
        == entry[3].casefold()
    ]
    assert len(exact) >= 0.75 * len(entries), len(exact)  # 50 of 63 when written


@pytest.mark.parametrize(
    ('needles', 'question'),
    [
        (['The teapot is kept on the top shelf.'], EN_QUESTION),  # a needle without its question
        ([EN_NEEDLE], ZH_QUESTION),  # EvalScope's English needle asked the Chinese default question
        ([EN_NEEDLE, 'The teapot is kept on the top shelf.'], EN_QUESTION),  # one needle of two has no key
        ([EN_NEEDLE], '   '),
    ],
)
def test_no_key_where_the_needle_does_not_answer_the_question(needles, question) -> None:
    assert derived_keys(needles, question, language='en') == ()


def test_preview_shows_the_derived_keys(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    extra = {'context_lengths': [600], 'document_depth_percents': [50]}
    given = {
        'local_path': str(fixture_corpus_dir),
        'subset_list': ['english'],
        'extra_params': {**extra, 'needles': [EN_NEEDLE], 'retrieval_question': 'What is the most fun thing to do?'},
    }
    (row,) = preview_rows(given, tmp_path / 'single.jsonl')
    assert row['answer_keys'] == [EN_ANSWER]
    pizza = {**given, 'extra_params': {**extra, 'needles': PIZZA_NEEDLES, 'retrieval_question': MULTI_QUESTION}}
    (row,) = preview_rows(pizza, tmp_path / 'pizza.jsonl')
    assert row['answer_keys'] == list(PIZZA_KEYS)
    # What is sent does not change: the answer-format guide stays the generic one without a given answer.
    guided = {**given, 'extra_params': {**given['extra_params'], 'guide': True}}
    (row,) = preview_rows(guided, tmp_path / 'guided.jsonl')
    assert EN_ANSWER not in row['question']


def test_real_answers_score_the_same_with_the_key_derived_as_with_the_key_given() -> None:
    """Kamradt-format real answers (tests/data/real_answers) whose needle and question are given: the derived key is
    the default's, so every rule verdict with needles the user wrote is the default's verdict."""
    from evalscope_niah.testing.real_answers import load_sets

    sets = load_sets(Path(__file__).parents[1] / 'data' / 'real_answers')
    items = [item for answers in sets.values() for item in answers if item.task == 'single' and item.needle]
    assert len(items) >= 300
    for item in items:
        (key,) = derived_keys([item.needle], item.question, language=item.language)
        assert key == item.key


def test_a_right_short_answer_to_a_needle_you_wrote_scores_right_in_a_run(fixture_corpus_dir: Path, tmp_path: Path):
    """EvalScope's parameters (needles + retrieval_question, no answer), the question worded unlike the needle,
    through run_task against the 127.0.0.1 test server, rule scores only: the short right answer passes, a wrong one
    fails, and each results row names the key it was scored against."""
    pytest.importorskip('evalscope')
    from evalscope import run_task

    from evalscope_niah.reporting.outputs import RESULTS_FILE
    from evalscope_niah.reporting.result_files import read_results
    from evalscope_niah.testing.openai_server import OpenAICompatServer
    from tests.support.reports import overall_scores
    from tests.support.tasks import task_config

    extra = {
        'needles': EVALSCOPE_SINGLE['needles'],
        'retrieval_question': 'What is the most fun thing to do in San Francisco?',
        'context_lengths': [700],
        'document_depth_percents': [10, 90],
    }
    replies = {'right': 'Eat a sandwich and sit in Dolores Park on a sunny day.', 'wrong': 'Visit Alcatraz.'}
    with OpenAICompatServer({name: (lambda messages, reply=reply: reply) for name, reply in replies.items()}) as server:
        for name in replies:
            work_dir = tmp_path / name
            config = task_config(server, fixture_corpus_dir, work_dir, model=name, extra=extra, subsets=['english'])
            accuracy = overall_scores(run_task(config)['needle_haystack'])['accuracy']
            assert accuracy == (1.0 if name == 'right' else 0.0)
            rows = read_results(next(work_dir.rglob(RESULTS_FILE)))
            assert len(rows) == 2 and {row.answer_keys for row in rows} == {(EN_ANSWER,)}
