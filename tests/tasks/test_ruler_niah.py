"""The ruler_niah task: RULER's eight niah entries as presets (their arguments as RULER's synthetic.yaml writes
them), RULER's arguments refused by name when we cannot honour them, what a sample asks, the generated haystacks and
the rule (RULER's string_match_all reported, the accuracy guarded)."""

from __future__ import annotations

import re
import zlib

import pytest

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.metadata import GridCell
from evalscope_niah.tasks import get_task
from evalscope_niah.tasks.compose import parse_params
from evalscope_niah.tasks.kit import PlanContext, task_params
from evalscope_niah.tasks.ruler_niah.params import RulerNiahParams
from evalscope_niah.tasks.ruler_niah.picks import NOISE_LINE, RULER_DEPTHS
from evalscope_niah.tasks.ruler_niah.presets import RULER_DEFAULTS
from evalscope_niah.tasks.ruler_niah.rules import ruler_niah_score, string_match_all
from evalscope_niah.tasks.ruler_niah.task import RulerNiahData
from tests.support.ruler import SYNTHETIC_YAML

UUID = re.compile(r'^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$')
VALUE = {'numbers': re.compile(r'^[1-9][0-9]{6}$'), 'uuids': UUID, 'words': re.compile(r'^[a-z]+-[a-z]+$')}


def _spec(extra: dict):
    return task_params(parse_params({'task': 'ruler_niah', **extra}), RulerNiahParams).spec()


@pytest.mark.parametrize('name', SYNTHETIC_YAML)
@pytest.mark.parametrize('prefix', ['', 'ruler_'])
def test_each_preset_is_rulers_entry(name: str, prefix: str):
    spec = _spec({'ruler_preset': prefix + name})
    haystack, key, value, k, v, q = SYNTHETIC_YAML[name]
    # RULER's niah.py sets num_needle_k = max(num_needle_k, num_needle_q)
    assert (spec.type_haystack, spec.type_needle_k, spec.type_needle_v) == (haystack, key, value)
    assert (spec.num_needle_k, spec.num_needle_v, spec.num_needle_q) == (max(k, q), v, q)


def test_raw_arguments_replace_the_preset_and_default_to_rulers():
    assert _spec({}) == _spec({'ruler_preset': 'niah_single_2'})  # niah.py's argparse defaults
    spec = _spec({'ruler_preset': 'niah_single_2', 'type_needle_v': 'uuids', 'num_needle_q': 3})
    assert (spec.type_needle_v, spec.num_needle_k, spec.num_needle_q) == ('uuids', 3, 3)


@pytest.mark.parametrize(
    ('extra', 'param', 'fragment'),
    [
        ({'type_haystack': 'book'}, 'type_haystack', 'noise, essay, needle'),
        ({'type_needle_k': 'names'}, 'type_needle_k', 'words, numbers, uuids'),
        ({'ruler_preset': 'vt'}, 'ruler_preset', 'niah_multikey_2'),
        ({'num_needle_v': 0}, 'num_needle_v', 'between 1 and'),
    ],
)
def test_what_we_cannot_honour_is_refused_naming_ruler(extra: dict, param: str, fragment: str):
    with pytest.raises(NiahConfigError) as info:
        parse_params({'task': 'ruler_niah', **extra})
    assert info.value.param == param and 'RULER' in str(info.value) and fragment in info.value.detail


def _choice(preset: str, depth: float = 50.0, corpus_text: str = ''):
    params = parse_params({'task': 'ruler_niah', 'ruler_preset': preset})
    context = PlanContext(subset=params.resolve_subset('english'), params=params, corpus_text=corpus_text)
    cell = GridCell('english', 1000, depth, 0)
    return get_task('ruler_niah').choose(context, cell, seed=zlib.crc32(repr(cell).encode()))


@pytest.mark.parametrize('name', SYNTHETIC_YAML)
def test_a_sample_asks_what_ruler_asks(name: str):
    _, key_type, value_type, k, v, q = SYNTHETIC_YAML[name]
    choice = _choice(name)
    asked = choice.data.keys
    assert len(asked) == q and len(choice.answer_keys) == q * v
    assert len(choice.needles) == q * v and len(choice.distractors) == (max(k, q) - q) * v
    assert all(VALUE[key_type].match(key) for key in asked)
    assert all(VALUE[value_type].match(value) for value in choice.answer_keys)
    kind = value_type if q * v > 1 else value_type[:-1]
    assert choice.question.startswith('What are all the' if q * v > 1 else 'What is the')
    assert f'special magic {kind} for {asked[0]}' in choice.question
    for needle in choice.needles:
        assert re.fullmatch(rf'One of the special magic {value_type} for (\S+) is: (\S+)\.', needle)
    # every inserted text has its depth: the first asked one at the cell's, the rest picked from RULER's 40
    depths = (*choice.needle_depths, *(choice.distractor_depths or ()))
    assert depths[0] == 50.0 and set(depths[1:]) <= set(RULER_DEPTHS)
    assert len(depths) == len(set(depths)) == max(k, q) * v


def test_multiquery_lists_its_keys_as_ruler_does():
    keys = _choice('niah_multiquery').data.keys
    assert f'for {keys[0]}, {keys[1]}, {keys[2]}, and {keys[3]} mentioned' in _choice('niah_multiquery').question


def test_keys_already_in_the_haystack_are_never_asked():
    first = _choice('niah_multikey_2').data.keys[0]
    again = _choice('niah_multikey_2', corpus_text=f'One of the special magic numbers for {first} is: 1234567.')
    assert again.data.keys[0] != first


def test_generated_haystacks():
    task = get_task('ruler_niah')
    for preset, name in (('niah_single_1', 'ruler:noise'), ('niah_multikey_3', 'ruler:needle:uuids:uuids')):
        params = parse_params({'task': 'ruler_niah', 'ruler_preset': preset})
        made = task.haystack_text(params.resolve_subset('english'), params, tokens=1000)
        assert made is not None and made.name == name
        lines = made.text.split('\n')
        assert len(lines) >= 100
        if preset == 'niah_single_1':
            assert set(lines) == {NOISE_LINE}
        else:
            pattern = re.compile(r'One of the special magic uuids for (\S+) is: (\S+)\.')
            pairs = [pattern.fullmatch(line).groups() for line in lines]
            assert all(UUID.match(key) and UUID.match(value) for key, value in pairs)
    params = parse_params({'task': 'ruler_niah', 'ruler_preset': 'niah_single_2'})
    assert task.haystack_text(params.resolve_subset('english'), params, tokens=1000) is None  # essay: the corpus


@pytest.mark.parametrize(
    ('answer', 'values', 'expected'),
    [
        ('The numbers are 1234567 and 7654321.', ['1234567', '7654321'], 1.0),
        ('1234567', ['1234567', '7654321'], 0.5),
        ('ABCDEF01-0000-4000-8000-000000000000', ['abcdef01-0000-4000-8000-000000000000'], 1.0),
        ('nothing here', ['1234567'], 0.0),
    ],
)
def test_string_match_all_is_rulers(answer: str, values: list[str], expected: float):
    # RULER: sum(r.lower() in pred.lower() for r in refs) / len(refs)
    assert string_match_all(answer, values) == expected


def _score(answer: str, values: tuple[str, ...], kind: str = 'numbers'):
    return ruler_niah_score(answer, values=values, value_type=kind, reference=', '.join(values))


def test_rule_accuracy_and_rulers_score_side_by_side():
    right = _score('The special magic numbers are 1,234,567 and 7654321.', ('1234567', '7654321'))
    assert right.values['acc'] == 1.0 and right.certain
    assert right.values['ruler_match'] == 0.5  # RULER's substring match misses the grouped number
    half = _score('7654321', ('1234567', '7654321'))
    assert half.values['acc'] == 0.5 and half.values['rule_recall'] == 0.5
    # a dump of every value seen gets all of RULER's score and little of ours
    dump = _score('1234567, 2345678, 3456789, 4567890, 5678901', ('1234567',))
    assert dump.values['ruler_match'] == 1.0 and dump.values['acc'] <= 0.3
    denied = _score('It is not 1234567.', ('1234567',))
    assert denied.values['acc'] <= 0.3 and not denied.certain


def test_rule_reads_uuids_and_words_in_any_case():
    value = '0f8e2c3a-1b2d-4e5f-8a9b-0c1d2e3f4a5b'
    assert _score(f'It is {value.upper()}.', (value,), 'uuids').values['acc'] == 1.0
    assert _score('The value is brave-lantern, I think.', ('brave-lantern',), 'words').values['acc'] == 1.0
    assert _score('A well-known brave-lantern.', ('brave-lantern',), 'words').values['acc'] == 1.0  # prose aside
    assert _score('It is calm-river.', ('brave-lantern',), 'words').values['acc'] == 0.0


@pytest.mark.parametrize(
    ('name', 'fragment'),
    [
        ('max_seq_length', 'context_lengths'),
        ('tokens_to_generate', 'length_buffer'),
        ('num_samples', 'num_repeats'),
        ('random_seed', 'sampling_seed'),
        ('template', 'prompt_template'),
        ('remove_newline_tab', 'leave it out'),
    ],
)
def test_rulers_command_line_names_say_what_to_write(name: str, fragment: str):
    from evalscope_niah.tasks.compose import check_dataset_args

    for check in (lambda: parse_params({name: 1}), lambda: check_dataset_args({'extra_params': {name: 1}})):
        with pytest.raises(NiahConfigError) as info:
            check()
        assert info.value.param == name and "RULER's" in info.value.detail and fragment in info.value.detail


@pytest.mark.parametrize('task', ['niah', 'niah_multikey_2', 'ruler_niah_multivalue'])
def test_a_ruler_task_name_points_at_the_preset(task: str):
    with pytest.raises(NiahConfigError) as info:
        parse_params({'task': task})
    assert info.value.param == 'task' and "'ruler_niah'" in info.value.detail and 'RULER' in info.value.detail
    if task != 'niah':
        assert f'ruler_preset: {task!r}' in info.value.detail


@pytest.mark.parametrize('name', SYNTHETIC_YAML)
def test_rulers_arguments_alone_make_the_config_rulers(name: str):
    """As RULER's users write an entry (niah.py's arguments, no task): task ruler_niah, RULER's defaults for the
    arguments left out."""
    haystack, key, value, k, v, q = SYNTHETIC_YAML[name]
    written = {'type_haystack': haystack, 'type_needle_k': key, 'type_needle_v': value, 'num_needle_k': k}
    written |= {'num_needle_v': v, 'num_needle_q': q}
    for given in (written, {arg: val for arg, val in written.items() if val != RULER_DEFAULTS[arg]} or written):
        params = parse_params(given)
        assert params.task == 'ruler_niah'
        assert task_params(params, RulerNiahParams).spec() == _spec({'ruler_preset': name})
    assert parse_params({'type_haystack': 'noise', 'num_needle_q': 4}).task == 'ruler_niah'


def test_rulers_arguments_beside_another_task_are_still_refused():
    # A task named by the user is the user's choice: RULER's arguments beside task 'single' would be ignored.
    with pytest.raises(NiahConfigError) as info:
        parse_params({'type_haystack': 'noise', 'task': 'single'})
    assert info.value.param == 'type_haystack' and "only applies to task 'ruler_niah'" in info.value.detail
    # A subset that names its task keeps the run's default task for the others.
    params = parse_params(
        {'num_needle_v': 2, 'subsets': {'ruler': {'task': 'ruler_niah', 'corpus_file': 'a.txt', 'language': 'en'}}}
    )
    assert params.task == 'single' and params.tasks_in_run() == {'single', 'ruler_niah'}


def test_the_names_that_make_a_config_rulers_are_the_tasks_arguments():
    from evalscope_niah.params.ruler_names import OWNS

    assert set(OWNS) == set(RulerNiahParams.model_fields) - {'ruler_preset'}


def test_the_coming_from_page_example_is_rulers_entry():
    from pathlib import Path

    page = Path(__file__).resolve().parents[2].joinpath('docs', 'en', 'coming-from.md').read_text(encoding='utf-8')
    code = page.split('A RULER entry as written', 1)[1].split('```python\n', 1)[1].split('```', 1)[0]
    namespace: dict = {}
    exec(code, namespace)  # the page's own text, nothing else
    params = parse_params(namespace['extra_params'])
    spec = task_params(params, RulerNiahParams).spec()
    haystack, key, value, k, v, q = SYNTHETIC_YAML['niah_multikey_2']
    assert (spec.type_haystack, spec.type_needle_k, spec.type_needle_v) == (haystack, key, value)
    assert (spec.num_needle_k, spec.num_needle_v, spec.num_needle_q) == (k, v, q)
    assert params.num_repeats * len(params.depth_percent_grid()) == 50  # RULER's num_samples per length


@pytest.mark.parametrize('preset', ['niah_single_1', 'niah_multikey_3'])
def test_generated_haystacks_fit_each_length_exactly(preset: str, fixture_corpus_dir):
    from evalscope_niah.making.samples import iter_samples

    _, _, value_type, _, v, q = SYNTHETIC_YAML[preset]
    grid = {'context_lengths': [700, 2500], 'document_depth_percents': [0, 100], 'num_repeats': 2}
    params = parse_params({'task': 'ruler_niah', 'ruler_preset': preset, **grid})
    for subset in ('english', 'chinese'):  # the haystack's language is the generated text's, not the subset's
        samples = list(iter_samples(params, corpus_dir=fixture_corpus_dir, subsets=[subset]))
        assert len(samples) == 2 * 2 * 2
        for sample in samples:
            assert sample.meta.prompt_tokens == sample.meta.context_length
            assert sample.meta.corpus_file.startswith('ruler:') and sample.meta.language == 'en'
            key = RulerNiahData.of(sample.meta).keys[0]
            assert sample.user_prompt.count(f'special magic {value_type} for {key} is:') == q * v


def test_restating_the_asked_key_is_not_a_wrong_value():
    key, value = '11111111-2222-4333-8444-555555555555', '0f8e2c3a-1b2d-4e5f-8a9b-0c1d2e3f4a5b'
    answer = f'The special magic uuid for {key} is {value}.'
    rule = ruler_niah_score(answer, values=(value,), value_type='uuids', reference=value, keys=(key,))
    assert rule.values['acc'] == 1.0 and rule.certain
    numbers = ruler_niah_score(
        'For 4821937 it is 1234567.', values=('1234567',), value_type='numbers', reference='1234567', keys=('4821937',)
    )
    assert numbers.values['acc'] == 1.0
