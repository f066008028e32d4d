"""Associative (one-hop) needles: shipped pairs obey the no-overlap rule, picks cover the set, corpus checks work."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.making.corpus import DEMO_CORPUS_DIR, DEMO_CORPUS_FILES
from evalscope_niah.tasks.associative.pairs import (
    HOP_KINDS,
    NAME_PLACEHOLDER,
    PAIRS_FILE,
    AssociativePair,
    check_corpus,
    literal_distractor,
    load_pairs,
    names,
    overlap,
    pick_pairs,
    shared_terms,
)

LANGUAGES = ('en', 'zh')
DEMO_FILES = {'en': DEMO_CORPUS_FILES['english'], 'zh': DEMO_CORPUS_FILES['chinese']}


def _pair(language: str, pair_id: str) -> AssociativePair:
    return next(pair for pair in load_pairs(language) if pair.id == pair_id)


def _demo_text(language: str) -> str:
    return (DEMO_CORPUS_DIR / DEMO_FILES[language]).read_text(encoding='utf-8')


# --- the shipped set -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize('language', LANGUAGES)
def test_enough_distinct_pairs_of_several_hop_kinds(language: str) -> None:
    pairs = load_pairs(language)
    assert len(pairs) >= 36
    assert all(pair.language == language and pair.id.startswith(f'{language}-') for pair in pairs)
    for field in ('id', 'needle', 'question', 'distractor'):
        assert len({getattr(pair, field) for pair in pairs}) == len(pairs), field
    # Mixed hops, not one template: several kinds, none more than half the set.
    kinds = [pair.kind for pair in pairs]
    assert set(kinds) <= set(HOP_KINDS) and len(set(kinds)) >= 7
    assert max(kinds.count(kind) for kind in set(kinds)) <= len(pairs) // 2


def test_ids_are_unique_across_languages_and_file_matches_loader() -> None:
    raw = json.loads(PAIRS_FILE.read_text(encoding='utf-8'))
    ids = [record['id'] for record in raw['pairs']]
    assert len(ids) == len(set(ids)) == sum(len(load_pairs(language)) for language in LANGUAGES)


@pytest.mark.parametrize('language', LANGUAGES)
def test_no_shipped_pair_overlaps(language: str) -> None:
    assert {pair.id: overlap(pair) for pair in load_pairs(language) if overlap(pair)} == {}


@pytest.mark.parametrize('language', LANGUAGES)
def test_name_placeholder_only_in_the_needle(language: str) -> None:
    for pair in load_pairs(language):
        assert pair.needle.count(NAME_PLACEHOLDER) == 1, pair.id
        assert NAME_PLACEHOLDER not in pair.question and NAME_PLACEHOLDER not in pair.distractor, pair.id
        assert 'Ada' in pair.needle_for('Ada') and NAME_PLACEHOLDER not in pair.needle_for('Ada'), pair.id


@pytest.mark.parametrize('language', LANGUAGES)
def test_question_and_distractor_name_the_target_the_needle_does_not(language: str) -> None:
    for pair in load_pairs(language):
        for text in (pair.question, pair.distractor, pair.hop):
            assert any(form.casefold() in text.casefold() for form in pair.target_forms), (pair.id, text)
        # The needle must be reachable only through the hop: it never names the target itself.
        assert not any(form.casefold() in pair.needle.casefold() for form in pair.target_forms), pair.id
        assert any(term.casefold() in pair.needle.casefold() for term in pair.needle_terms), pair.id


def test_chinese_pairs_are_written_in_chinese() -> None:
    for pair in load_pairs('zh'):
        for text in (pair.needle, pair.question, pair.distractor, pair.hop):
            assert re.search(r'[\u4e00-\u9fff]{4}', text), (pair.id, text)
        assert pair.question.endswith('？') and pair.needle.endswith('。'), pair.id


@pytest.mark.parametrize('language', LANGUAGES)
def test_names_are_many_distinct_and_absent_from_every_pair_text(language: str) -> None:
    shipped = names(language)
    assert len(shipped) >= 30 and len(set(shipped)) == len(shipped)
    texts = [
        text.casefold()
        for pair in (*load_pairs('en'), *load_pairs('zh'))
        for text in (pair.needle, pair.question, pair.distractor, pair.hop)
    ]
    assert [name for name in shipped if any(name.casefold() in text for text in texts)] == []


@pytest.mark.parametrize('language', LANGUAGES)
def test_nothing_shipped_occurs_in_the_demo_corpora(language: str) -> None:
    for corpus_language in LANGUAGES:  # a corpus of the other language must be clean too
        result = check_corpus(_demo_text(corpus_language), language=language)
        assert (result.names_found, result.pairs_found) == ((), {})
        assert result.clean and result.messages() == []


# --- the overlap rule catches overlapping pairs --------------------------------------------------------------------


def test_overlap_catches_english_words_stems_and_inflections() -> None:
    pair = _pair('en', 'en-semper')  # 'Actually, {name} lives right next to the Semper Opera House.'
    assert overlap(dataclasses.replace(pair, question='Which character lives beside the OPERA?')) == {'lives', 'opera'}
    # Same 5-letter stem, inflection of a 4-letter word, accents ignored.
    assert overlap(dataclasses.replace(pair, question='Which character is an operatic neighbour?')) == {'operatic'}
    cooking = dataclasses.replace(pair, needle='{name} cooks a stew in the Café Médoc.')
    assert overlap(dataclasses.replace(cooking, question='Who can cook near the cafe?')) == {'cook', 'cafe'}
    # Stop words alone are no overlap, and a shared 3-letter start is not a stem.
    assert overlap(dataclasses.replace(pair, question='Which of them has been to the art fair?')) == set()


def test_overlap_ignores_the_masked_name() -> None:
    pair = _pair('en', 'en-semper')
    # The placeholder's own word 'name' is masked, not compared.
    assert overlap(dataclasses.replace(pair, question='Which name belongs to a person from Dresden?')) == set()
    zh = _pair('zh', 'zh-zhongshanling')
    assert overlap(dataclasses.replace(zh, needle='{name}中山陵。', question='名字是谁？')) == set()


def test_overlap_catches_chinese_bigrams_but_not_function_bigrams() -> None:
    pair = _pair('zh', 'zh-zhongshanling')  # '{name}家就在中山陵脚下，每天早上都要爬一遍台阶。'
    assert overlap(dataclasses.replace(pair, question='哪个角色每天去中山陵？')) == {'每天', '中山', '山陵'}
    # Function bigrams shared by needle and question do not count.
    function_only = dataclasses.replace(pair, needle='{name}曾经养过一只猫。', question='哪个角色曾经有一个朋友？')
    assert overlap(function_only) == set()
    # Punctuation breaks a run: '陵，每' yields no bigram '陵每'.
    assert shared_terms('中山陵，每天', '陵每', language='zh') == set()


def test_shared_terms_rejects_an_unknown_language() -> None:
    with pytest.raises(NiahConfigError) as info:
        shared_terms('a', 'b', language='fr')  # type: ignore[arg-type]
    assert info.value.param == 'language'


# --- literal distractors -------------------------------------------------------------------------------------------


@pytest.mark.parametrize('language', LANGUAGES)
def test_literal_distractor_shares_the_question_words_and_names_nobody(language: str) -> None:
    every_name = (*names('en'), *names('zh'))
    for pair in load_pairs(language):
        distractor = literal_distractor(pair, language=language)
        assert distractor == pair.distractor
        assert shared_terms(distractor, pair.question, language=language), pair.id
        assert not any(name.casefold() in distractor.casefold() for name in every_name), pair.id
        # It says nothing of the needle's fact: none of the needle's key terms.
        assert not any(term.casefold() in distractor.casefold() for term in pair.needle_terms), pair.id


def test_literal_distractor_refuses_the_other_language() -> None:
    with pytest.raises(NiahConfigError) as info:
        literal_distractor(load_pairs('en')[0], language='zh')
    assert info.value.param == 'language' and 'en-' in info.value.detail


# --- picking -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize('language', LANGUAGES)
@pytest.mark.parametrize('seed', [0, 12345])
def test_pick_covers_the_set_over_as_many_cells(language: str, seed: int) -> None:
    pairs = load_pairs(language)
    picked = [pick_pairs(language=language, seed=seed, count=1, cell=cell)[0][0].id for cell in range(len(pairs))]
    assert sorted(picked) == sorted(pair.id for pair in pairs)


@pytest.mark.parametrize('language', LANGUAGES)
def test_pick_gives_different_pairs_and_names_within_a_cell(language: str) -> None:
    pairs = load_pairs(language)
    count = 5
    seen: list[str] = []
    for cell in range(-(-len(pairs) // count)):
        samples = pick_pairs(language=language, seed=3, count=count, cell=cell)
        assert len(samples) == count
        assert len({pair.id for pair, _ in samples}) == count
        assert len({name for _, name in samples}) == count
        assert all(name in names(language) for _, name in samples)
        seen.extend(pair.id for pair, _ in samples)
    assert set(seen) == {pair.id for pair in pairs}
    # More samples than pairs: every pair is used before any repeats.
    many = pick_pairs(language=language, seed=3, count=len(pairs) + 2)
    assert {pair.id for pair, _ in many[: len(pairs)]} == {pair.id for pair in pairs}


def test_pick_is_reproducible_and_depends_on_the_seed() -> None:
    first = pick_pairs(language='en', seed=7, count=6, cell=2)
    assert pick_pairs(language='en', seed=7, count=6, cell=2) == first
    assert pick_pairs(language='en', seed=8, count=6, cell=2) != first
    assert pick_pairs(language='en', seed=7, count=6, cell=3) != first


def test_pick_leaves_out_what_the_corpus_contains() -> None:
    semper, mermaid = _pair('en', 'en-semper'), _pair('en', 'en-little-mermaid')
    skipped_name = names('en')[0]
    corpus = (
        _demo_text('en') + f'\n{semper.distractor}\nThe Little Mermaid statue was repainted.\n{skipped_name} waved.\n'
    )
    pairs = load_pairs('en')
    picked = [pick_pairs(language='en', seed=1, count=2, cell=cell, corpus_text=corpus) for cell in range(len(pairs))]
    used_pairs = {pair.id for samples in picked for pair, _ in samples}
    used_names = {name for samples in picked for _, name in samples}
    assert used_pairs == {pair.id for pair in pairs} - {semper.id, mermaid.id}
    assert skipped_name not in used_names


def test_pick_refuses_a_corpus_holding_every_name() -> None:
    corpus = '林晓雯。' + '、'.join(names('zh'))
    with pytest.raises(NiahConfigError) as info:
        pick_pairs(language='zh', seed=0, count=1, corpus_text=corpus)
    assert info.value.param == 'corpus'
    assert 'character name' in info.value.detail and names('zh')[-1] in info.value.detail


@pytest.mark.parametrize(
    ('options', 'param'),
    [
        ({'language': 'fr'}, 'language'),
        ({'count': 0}, 'count'),
        ({'count': True}, 'count'),
        ({'count': 10**9}, 'count'),
        ({'seed': '1'}, 'seed'),
        ({'cell': -1}, 'cell'),
        ({'corpus_text': b'bytes'}, 'corpus'),
    ],
)
def test_pick_rejects_bad_options_naming_them(options: dict[str, object], param: str) -> None:
    arguments: dict[str, object] = {'language': 'en', 'seed': 0, 'count': 1, **options}
    with pytest.raises(NiahConfigError) as info:
        pick_pairs(**arguments)  # type: ignore[arg-type]
    assert info.value.param == param


# --- corpus check --------------------------------------------------------------------------------------------------


def test_check_corpus_finds_inserted_english_targets_terms_and_names() -> None:
    text = _demo_text('en')
    middle = len(text) // 2
    planted = (
        text[:middle]
        + ' The tram to\nDRESDEN was late. Fog over Cape\n   Town. “Stellan’s” hat. Moby-Dick. '
        + text[middle:]
    )
    result = check_corpus(planted, language='en')
    assert result.names_found == ('Stellan',)
    assert result.pairs_found == {
        'en-semper': ('Dresden',),
        'en-table-mountain': ('Cape Town',),
        'en-moby-dick': ('Moby-Dick', 'Moby Dick'),  # a hyphen and a space are the same separator
    }
    assert "pair 'en-semper' skipped: the corpus contains 'Dresden'" in result.messages()
    assert "name 'Stellan' occurs in the corpus; it is not used" in result.messages()
    assert 'en-semper' not in {pair.id for pair in result.usable_pairs()}
    assert 'Stellan' not in result.usable_names()
    # The result is cached and shared between calls, so it is read-only.
    assert check_corpus(planted, language='en') is result
    with pytest.raises(TypeError):
        result.pairs_found['en-semper'] = ()  # type: ignore[index]


def test_check_corpus_english_matches_whole_words_only() -> None:
    # Longer words and run-together phrases are not the terms: no false skips.
    result = check_corpus('Dresdeners met Stellanova at the Capetown phoenix bar; peruvianish.', language='en')
    assert result.clean


def test_check_corpus_finds_inserted_chinese_terms_across_line_breaks() -> None:
    text = _demo_text('zh')
    planted = text[:3000] + '他说南\n京的秋天很美，苏雨桐也去了故宫博物院。' + text[3000:]
    result = check_corpus(planted, language='zh')
    assert result.names_found == ('苏雨桐',)
    # '故宫' is found inside the longer '故宫博物院' (another pair's form would not hide it).
    assert result.pairs_found == {'zh-zhongshanling': ('南京',), 'zh-qingming': ('故宫',)}


def test_check_corpus_finds_overlapping_chinese_terms() -> None:
    # '青藏' (a target) and '藏羚羊' (a needle term) overlap in '青藏羚羊': both are reported.
    assert check_corpus('远处有青藏羚羊。', language='zh').pairs_found == {'zh-zangling': ('青藏', '藏羚羊')}


def test_check_corpus_rejects_bad_input() -> None:
    with pytest.raises(NiahConfigError) as info:
        check_corpus(b'bytes', language='en')  # type: ignore[arg-type]
    assert info.value.param == 'corpus'
    with pytest.raises(NiahConfigError) as info:
        check_corpus('text', language='de')  # type: ignore[arg-type]
    assert info.value.param == 'language'
