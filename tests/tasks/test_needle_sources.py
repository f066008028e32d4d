"""The needle bank, reasoning chains, multi-value sets and answer-format hints, on the real shipped data."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.making.corpus import DEMO_CORPUS_DIR, DEMO_CORPUS_FILES
from evalscope_niah.making.haystack import find_needle_in_corpus
from evalscope_niah.tasks.answer_format import answer_format_guide
from evalscope_niah.tasks.multi_retrieval.facts import MULTI_KEYS, multi_retrieval_set
from evalscope_niah.tasks.reasoning.chains import pick_chain, reasoning_chains
from evalscope_niah.tasks.single.bank import BUILTIN_BANK_FILE, BankNeedle, load_needle_bank, pick_needles

# Present on a development machine, absent from a fresh clone (CI).
SHARED_CORPUS_DIR = Path(__file__).parents[3] / 'shared' / 'corpus'
REAL_CORPUS_FILES = {'en': 'PaulGraham_Essays.txt', 'zh': 'Journey_to_the_West.txt'}
DEMO_FILES = {'en': DEMO_CORPUS_FILES['english'], 'zh': DEMO_CORPUS_FILES['chinese']}


def _entry(**overrides: object) -> dict[str, object]:
    entry: dict[str, object] = {
        'language': 'en',
        'needle': 'The gatekeeper of Orwen Hill owns a yellow kite.',
        'question': 'What does the gatekeeper of Orwen Hill own?',
        'answer': 'yellow kite',
    }
    entry.update(overrides)
    return entry


def _write_jsonl(path: Path, entries: list[dict[str, object]]) -> Path:
    path.write_text(''.join(json.dumps(entry, ensure_ascii=False) + '\n' for entry in entries), encoding='utf-8')
    return path


def _bank_error(path: Path) -> NiahConfigError:
    with pytest.raises(NiahConfigError) as info:
        load_needle_bank(path)
    assert info.value.param == 'needle_bank'
    return info.value


# --- the shipped bank ----------------------------------------------------------------------------------------------


def test_builtin_bank_loads_with_enough_valid_entries() -> None:
    bank = load_needle_bank()
    assert load_needle_bank('builtin') is bank  # cached: one parse per process
    assert load_needle_bank(BUILTIN_BANK_FILE) == bank
    for language in ('en', 'zh'):
        entries = [item for item in bank if item.language == language]
        assert len(entries) >= 24
        assert all(item.id.startswith(f'{language}-') for item in entries)
    assert len({item.id for item in bank}) == len(bank)
    for item in bank:
        assert item.answer in item.needle, item.id
        assert item.question.strip() and item.question != item.needle
    # Keyword scoring counts an answer as found when it appears, so distinct answers keep picks distinguishable.
    assert len({(item.language, item.answer) for item in bank}) == len(bank)


def test_chinese_bank_entries_are_written_in_chinese() -> None:
    for item in load_needle_bank():
        if item.language == 'zh':
            assert re.search(r'[\u4e00-\u9fff]', item.needle) and item.needle.endswith('。'), item.id
            assert item.question.endswith('？'), item.id


def _corpus_hits(text: str, language: str) -> list[str]:
    """Bank needles, long bank answers, chain links and multi-value keys that occur in ``text``."""
    squashed = re.sub(r'\s+', ' ', text).casefold()
    sentences = {item.needle: f'{item.id} needle' for item in load_needle_bank()}
    for chain_language in ('en', 'zh'):
        sentences.update(
            {link: f'{chain.id} link' for chain in reasoning_chains(chain_language) for link in chain.needles}
        )
    hits = []
    # One scan of the corpus per hit (not per sentence): the real corpora are megabytes.
    while (found := find_needle_in_corpus(text, list(sentences))) is not None:
        hits.append(f'{sentences.pop(found)} {found!r}')
    for item in load_needle_bank():
        if len(item.answer) >= 4 and item.answer.casefold() in squashed:
            hits.append(f'{item.id} answer {item.answer!r}')
    hits.extend(f'key {key!r}' for key in MULTI_KEYS[language] if key.casefold() in squashed)
    return hits


@pytest.mark.parametrize('language', ['en', 'zh'])
def test_nothing_occurs_in_the_demo_corpora(language: str) -> None:
    text = (DEMO_CORPUS_DIR / DEMO_FILES[language]).read_text(encoding='utf-8')
    assert _corpus_hits(text, language) == []


@pytest.mark.skipif(not SHARED_CORPUS_DIR.is_dir(), reason='the real corpora are not on this machine')
@pytest.mark.parametrize('language', ['en', 'zh'])
def test_nothing_occurs_in_the_real_corpora(language: str) -> None:
    text = (SHARED_CORPUS_DIR / REAL_CORPUS_FILES[language]).read_text(encoding='utf-8')
    assert _corpus_hits(text, language) == []


def test_corpus_check_detects_a_planted_needle() -> None:
    # Guards the check above against passing vacuously.
    item = load_needle_bank()[0]
    key = MULTI_KEYS[item.language][0]
    hits = _corpus_hits(f'Some text.\n{item.needle}\nMore text about {key}.', item.language)
    assert hits == [f'{item.id} needle {item.needle!r}', f'{item.id} answer {item.answer!r}', f'key {key!r}']


# --- user banks ----------------------------------------------------------------------------------------------------


def test_user_jsonl_bank_generates_missing_ids_per_language(tmp_path: Path) -> None:
    zh = {'language': 'zh', 'needle': '阿青的风筝是黄色的。', 'question': '阿青的风筝是什么颜色的？', 'answer': '黄色'}
    path = tmp_path / 'bank.jsonl'
    path.write_text(
        '\n'.join(json.dumps(entry, ensure_ascii=False) for entry in (_entry(), zh, _entry(id='mine'), _entry()))
        + '\n\n',
        encoding='utf-8',
    )
    bank = load_needle_bank(str(path))
    assert [item.id for item in bank] == ['en-01', 'zh-01', 'mine', 'en-03']
    assert bank[1] == BankNeedle('zh-01', 'zh', zh['needle'], zh['question'], zh['answer'])


def test_user_json_list_bank(tmp_path: Path) -> None:
    path = tmp_path / 'bank.json'
    path.write_text(json.dumps([_entry(id='a'), _entry(id='b', answer='kite')]), encoding='utf-8')
    assert [(item.id, item.answer) for item in load_needle_bank(path)] == [('a', 'yellow kite'), ('b', 'kite')]


@pytest.mark.parametrize(
    ('entry', 'expected'),
    [
        ({'needle': None}, "missing key 'needle'"),
        ({'colour': 'red'}, "unknown key 'colour'"),
        ({'language': 'fr'}, "'language' is 'fr'; allowed: en or zh"),
        ({'question': '   '}, "'question' must not be empty"),
        ({'answer': 'blue kite'}, "'answer' 'blue kite' must occur verbatim in 'needle'"),
        ({'answer': 7}, "'answer' must be a string"),
    ],
)
def test_bad_bank_entry_names_file_line_and_key(tmp_path: Path, entry: dict[str, object], expected: str) -> None:
    bad = {key: value for key, value in _entry(**entry).items() if value is not None}
    path = _write_jsonl(tmp_path / 'bank.jsonl', [_entry(), bad])
    error = _bank_error(path)
    assert str(path) in error.detail and 'line 2' in error.detail
    assert expected in error.detail


def test_json_list_errors_name_the_entry(tmp_path: Path) -> None:
    path = tmp_path / 'bank.json'
    path.write_text(json.dumps([_entry(), _entry(), {'needle': 'x'}]), encoding='utf-8')
    assert 'entry 3' in _bank_error(path).detail
    path.write_text(json.dumps({'needle': 'x'}), encoding='utf-8')
    assert 'must hold a JSON list' in _bank_error(path).detail
    path.write_text(json.dumps([_entry(), 'text']), encoding='utf-8')
    assert 'entry 2 must be a JSON object' in _bank_error(path).detail


def test_duplicate_ids_are_rejected(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / 'bank.jsonl', [_entry(id='x'), _entry(), _entry(id='x')])
    error = _bank_error(path)
    assert "line 3: id 'x' is already used by" in error.detail and 'line 1' in error.detail
    # A generated id colliding with an explicit one says it was generated.
    path = _write_jsonl(tmp_path / 'bank.jsonl', [_entry(id='en-02'), _entry()])
    assert 'generated' in _bank_error(path).detail


def test_unusable_bank_files(tmp_path: Path) -> None:
    assert 'does not exist' in _bank_error(tmp_path / 'missing.jsonl').detail
    (tmp_path / 'bank.txt').write_text('{}', encoding='utf-8')
    assert '.jsonl' in _bank_error(tmp_path / 'bank.txt').detail
    (tmp_path / 'bad.jsonl').write_text(json.dumps(_entry()) + '\n{not json\n', encoding='utf-8')
    error = _bank_error(tmp_path / 'bad.jsonl')
    assert 'line 2 is not JSON' in error.detail
    (tmp_path / 'bad.json').write_text('[{', encoding='utf-8')
    assert 'is not JSON' in _bank_error(tmp_path / 'bad.json').detail
    # Nested deeper than json's recursion (a few KB): one error naming needle_bank, not a traceback.
    (tmp_path / 'deep.jsonl').write_text('[' * 5000 + ']' * 5000 + '\n', encoding='utf-8')
    assert 'line 1 is nested deeper than any needle record' in _bank_error(tmp_path / 'deep.jsonl').detail
    (tmp_path / 'deep.json').write_text('[' * 5000 + ']' * 5000, encoding='utf-8')
    assert 'is nested deeper than any needle bank' in _bank_error(tmp_path / 'deep.json').detail
    (tmp_path / 'latin1.jsonl').write_bytes('{"needle": "caf\xe9"}'.encode('latin-1'))
    assert 'not valid UTF-8' in _bank_error(tmp_path / 'latin1.jsonl').detail
    (tmp_path / 'dir.jsonl').mkdir()
    assert 'is not a regular file (a directory)' in _bank_error(tmp_path / 'dir.jsonl').detail
    (tmp_path / 'empty.jsonl').write_text('\n', encoding='utf-8')
    assert 'no entries' in _bank_error(tmp_path / 'empty.jsonl').detail


# --- picking -------------------------------------------------------------------------------------------------------


def _small_bank() -> tuple[BankNeedle, ...]:
    def item(index: int, language: str) -> BankNeedle:
        return BankNeedle(f'{language}-{index}', language, f'Fact {index} is kite{index}.', 'Q?', f'kite{index}')  # type: ignore[arg-type]

    return (item(0, 'en'), item(0, 'zh'), item(1, 'en'), item(2, 'en'), item(1, 'zh'))


def test_fixed_picks_repeat_one_entry_of_the_language() -> None:
    picked = pick_needles(_small_bank(), language='en', count=3, sample_method='fixed', fixed_index=1)
    assert [item.id for item in picked] == ['en-1'] * 3
    picked = pick_needles(_small_bank(), language='zh', count=2, sample_method='fixed', fixed_index=1)
    assert [item.id for item in picked] == ['zh-1'] * 2


def test_sequential_picks_wrap_around() -> None:
    picked = pick_needles(_small_bank(), language='en', count=5, sample_method='sequential', fixed_index=2)
    assert [item.id for item in picked] == ['en-2', 'en-0', 'en-1', 'en-2', 'en-0']


def test_random_picks_are_deterministic_and_follow_the_seed() -> None:
    bank = load_needle_bank()

    def ids(seed: int, language: str = 'en') -> list[str]:
        picked = pick_needles(bank, language=language, count=12, sample_method='random', seed=seed)  # type: ignore[arg-type]
        assert all(item.language == language for item in picked)
        return [item.id for item in picked]

    assert ids(0) == ids(0)
    assert ids(0) != ids(1)
    assert len(set(ids(0))) > 1  # a fresh choice per pick, not one entry repeated
    assert ids(7, 'zh') == ids(7, 'zh') and ids(7, 'zh') != ids(8, 'zh')
    # Pinned: a string seed is hashed the same on every platform and Python version, so a changed sequence means
    # changed code (and changed samples for everyone who reuses a seed).
    small = [item.id for item in pick_needles(_small_bank(), language='en', count=8, sample_method='random')]
    assert small == ['en-0', 'en-1', 'en-2', 'en-0', 'en-1', 'en-2', 'en-2', 'en-1']
    # As inspect_evals picks: one shuffle of the bank repeated while whole passes fit, then distinct entries.
    assert small[:3] == small[3:6] and sorted(small[:3]) == ['en-0', 'en-1', 'en-2'] and len(set(small[6:])) == 2


def test_pick_errors_name_the_parameter() -> None:
    bank = _small_bank()
    cases = [
        ({'count': 0}, 'n_needles', 'at least 1'),
        ({'fixed_index': 3}, 'fixed_index', '0..2'),
        ({'fixed_index': -1}, 'fixed_index', '0..2'),
        ({'sample_method': 'shuffle'}, 'sample_method', 'fixed, sequential, random'),
    ]
    for overrides, param, expected in cases:
        kwargs = {'language': 'en', 'count': 2, 'sample_method': 'sequential', **overrides}
        with pytest.raises(NiahConfigError) as info:
            pick_needles(bank, **kwargs)  # type: ignore[arg-type]
        assert info.value.param == param and expected in info.value.detail
    english_only = tuple(item for item in bank if item.language == 'en')
    with pytest.raises(NiahConfigError) as info:
        pick_needles(english_only, language='zh', count=1, sample_method='fixed')
    assert info.value.param == 'needle_bank' and "no 'zh' entries" in info.value.detail


# --- reasoning chains ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize('language', ['en', 'zh'])
def test_reasoning_chains_are_well_formed(language: str) -> None:
    chains = reasoning_chains(language)  # type: ignore[arg-type]
    assert len(chains) >= 3
    assert len({chain.id for chain in chains}) == len(chains)
    for chain in chains:
        assert chain.language == language
        assert 3 <= len(chain.needles) <= 4
        assert chain.answer in chain.needles[-1]
        assert chain.answer in chain.reference
        assert not any(chain.answer in link for link in chain.needles[:-1])  # only the last link gives it away
    assert reasoning_chains(language) is chains  # cached


@pytest.mark.parametrize(
    ('language', 'question'),
    [
        ('en', "Who makes the signature dish of Florence's best restaurant?"),
        ('zh', '佛罗伦萨最好的餐厅的招牌菜是谁做的？'),
    ],
)
def test_la_giostra_chain_is_shipped(language: str, question: str) -> None:
    chains = [chain for chain in reasoning_chains(language) if chain.question == question]  # type: ignore[arg-type]
    assert len(chains) == 1
    chain = chains[0]
    assert chain.answer == 'Jack' and len(chain.needles) == 3
    assert 'Florence' in chain.needles[0] or '佛罗伦萨' in chain.needles[0]
    assert 'La Giostra' in chain.needles[0] and 'La Giostra' in chain.needles[1]
    assert 'truffle macaroni' in chain.needles[1] or '松露通心粉' in chain.needles[1]


def test_pick_chain_wraps() -> None:
    chains = reasoning_chains('zh')
    assert pick_chain('zh', index=0) == chains[0]
    assert pick_chain('zh', index=len(chains) + 1) == chains[1]
    assert pick_chain('zh', index=-1) == chains[-1]
    with pytest.raises(NiahConfigError) as info:
        pick_chain('fr', index=0)  # type: ignore[arg-type]
    assert info.value.param == 'language'


# --- multi-value retrieval -----------------------------------------------------------------------------------------


def test_multi_retrieval_set_english() -> None:
    item = multi_retrieval_set(language='en', count=5, seed=3)
    assert item.key in MULTI_KEYS['en']
    assert len(item.values) == 5 and len(set(item.values)) == 5
    assert all(re.fullmatch(r'[1-9]\d{6}', value) for value in item.values)
    assert item.needles == tuple(
        f'One of the special magic numbers for {item.key} is: {value}.' for value in item.values
    )
    assert item.question == f'What are all the special magic numbers for {item.key} mentioned in the document?'
    assert all(value in item.reference for value in item.values)


def test_multi_retrieval_set_chinese() -> None:
    item = multi_retrieval_set(language='zh', count=20, seed=0)
    assert item.key in MULTI_KEYS['zh']
    assert len(set(item.values)) == 20
    assert item.needles[0] == f'{item.key}的一个特殊魔法数字是：{item.values[0]}。'
    assert item.question == f'文中提到的{item.key}的所有特殊魔法数字是什么？'
    assert all(value in item.reference for value in item.values)


def test_multi_retrieval_set_is_deterministic_per_inputs() -> None:
    assert multi_retrieval_set(language='en', count=4, seed=9) == multi_retrieval_set(language='en', count=4, seed=9)
    variants = {multi_retrieval_set(language='en', count=4, seed=seed) for seed in range(6)}
    assert len(variants) == 6
    assert len({item.key for item in variants}) > 1
    assert multi_retrieval_set(language='en', count=4, seed=9).values != (
        multi_retrieval_set(language='zh', count=4, seed=9).values
    )


def test_multi_keys_are_plentiful_and_distinct() -> None:
    for keys in MULTI_KEYS.values():
        assert len(keys) >= 30 and len(set(keys)) == len(keys)


@pytest.mark.parametrize('count', [0, -1, 21])
def test_multi_retrieval_count_bounds(count: int) -> None:
    with pytest.raises(NiahConfigError) as info:
        multi_retrieval_set(language='en', count=count, seed=0)
    assert info.value.param == 'num_needles' and '1 and 20' in info.value.detail


# --- answer format guide -------------------------------------------------------------------------------------------


def test_answer_format_guide_blanks_the_answer() -> None:
    needle = 'The emblem of the city of Verenza is a bronze hedgehog.'
    assert answer_format_guide(needle=needle, answer='bronze hedgehog', language='en') == (
        "Answer in the format: 'The emblem of the city of Verenza is a ________.'"
    )
    assert answer_format_guide(needle='澄州城的城徽是一只铜铸的刺猬。', answer='刺猬', language='zh') == (
        '请按照“澄州城的城徽是一只铜铸的________。”的格式回答。'
    )


def test_answer_format_guide_blanks_every_occurrence() -> None:
    guide = answer_format_guide(needle='Pim met Pim at noon.', answer='Pim', language='en')
    assert 'Pim' not in guide and guide.count('________') == 2


@pytest.mark.parametrize('answer', [None, 'silver fox', ''])
def test_answer_format_guide_falls_back_without_a_usable_answer(answer: str | None) -> None:
    needle = 'The emblem of the city of Verenza is a bronze hedgehog.'
    assert answer_format_guide(needle=needle, answer=answer, language='en') == (
        'Answer with the sentence from the document that answers the question.'
    )
    assert (
        answer_format_guide(needle='澄州城的城徽是刺猬。', answer=answer, language='zh')
        == '请用文中回答该问题的句子作答。'
    )
