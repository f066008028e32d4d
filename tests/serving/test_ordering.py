"""Request order for prefix caching: the friendly order's shape, and the simulated share of reused prompt tokens."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from evalscope_niah.making.samples import NeedleSample, iter_samples
from evalscope_niah.serving.ordering import PrefixInfo, prefix_friendly_order, prefix_reuse_share, sample_prefix_info
from evalscope_niah.tasks.compose import parse_params


def info(group: str, length: int, divergence: int, prompt: int | None = None) -> PrefixInfo:
    return PrefixInfo(group=group, context_length=length, divergence_token=divergence, prompt_tokens=prompt or length)


def identity(item: PrefixInfo) -> PrefixInfo:
    return item


# ---- prefix_friendly_order ----------------------------------------------------------------------------------------


def test_friendly_order_groups_lengths_and_deepest_first() -> None:
    items = [
        info('B', 2000, 500),
        info('A', 2000, 1800),
        info('A', 1000, 300),
        info('A', 1000, 900),
        info('B', 1000, 100),
        info('A', 1000, 600),
        info('A', 2000, 200),
        info('B', 2000, 1900),
    ]
    ordered = prefix_friendly_order(items, info=identity)
    assert ordered == [
        # Group B was seen first; its lengths ascending; each length's deepest first, then rising divergence.
        info('B', 1000, 100),
        info('B', 2000, 1900),
        info('B', 2000, 500),
        info('A', 1000, 900),
        info('A', 1000, 300),
        info('A', 1000, 600),
        info('A', 2000, 1800),
        info('A', 2000, 200),
    ]
    assert sorted(ordered, key=repr) == sorted(items, key=repr)  # a permutation


def test_friendly_order_is_stable_for_equal_keys() -> None:
    # Distinct objects with equal keys: identity tells them apart.
    items = [info('g', 1000, 400, 1000 + n) for n in range(4)] + [info('g', 1000, 700, 999)]
    items += [info('g', 1000, 700, 998)]  # ties the deepest: the first seen seeds
    ordered = prefix_friendly_order(
        items, info=lambda item: info(item.group, item.context_length, item.divergence_token)
    )
    assert [item.prompt_tokens for item in ordered] == [999, 1000, 1001, 1002, 1003, 998]


def test_friendly_order_of_an_empty_list_and_of_one_item() -> None:
    assert prefix_friendly_order([], info=identity) == []
    assert prefix_friendly_order([info('g', 10, 5)], info=identity) == [info('g', 10, 5)]


def test_friendly_order_is_idempotent_and_ignores_input_order_within_a_group() -> None:
    items = [info('g', length, divergence) for length in (900, 300, 600) for divergence in (50, 250, 150, 20)]
    ordered = prefix_friendly_order(items, info=identity)
    assert prefix_friendly_order(ordered, info=identity) == ordered
    shuffled = items[:]
    random.Random(3).shuffle(shuffled)
    assert prefix_friendly_order(shuffled, info=identity) == ordered
    assert [item.context_length for item in ordered] == [300] * 4 + [600] * 4 + [900] * 4
    assert [item.divergence_token for item in ordered[:4]] == [250, 20, 50, 150]


# ---- prefix_reuse_share ----------------------------------------------------------------------------------------------


def analytic_share(infos: list[PrefixInfo]) -> float:
    """One request at a time: each reuses min(d, the deepest d of its group sent before it)."""
    reused, deepest = 0, {}
    for entry in infos:
        reused += min(entry.divergence_token, deepest.get(entry.group, 0))
        deepest[entry.group] = max(deepest.get(entry.group, 0), entry.divergence_token)
    return reused / sum(entry.prompt_tokens for entry in infos)


HAND_EXAMPLE = [
    info('a', 1000, 400),  # nothing before it: 0
    info('a', 1000, 700),  # 400
    info('b', 1000, 900),  # another group: 0
    info('a', 2000, 1500),  # 700
    info('a', 1000, 100),  # 100
    info('b', 2000, 300),  # 300
]


def test_reuse_share_at_concurrency_one_on_a_hand_example() -> None:
    assert prefix_reuse_share(HAND_EXAMPLE, concurrency=1) == pytest.approx((400 + 700 + 100 + 300) / 8000)
    assert prefix_reuse_share(HAND_EXAMPLE) == prefix_reuse_share(HAND_EXAMPLE, concurrency=1)
    assert analytic_share(HAND_EXAMPLE) == pytest.approx(1500 / 8000)


def test_reuse_share_at_concurrency_one_matches_the_analytic_sum_in_any_order() -> None:
    rng = random.Random(0)
    items = [info(rng.choice('xyz'), rng.choice([500, 1000, 2000]), rng.randrange(1, 500)) for _ in range(60)]
    for _ in range(5):
        rng.shuffle(items)
        assert prefix_reuse_share(items, concurrency=1) == pytest.approx(analytic_share(items))


def test_reuse_share_with_more_workers_than_requests_reuses_nothing() -> None:
    # All start at time 0: nothing has finished yet.
    assert prefix_reuse_share(HAND_EXAMPLE, concurrency=len(HAND_EXAMPLE)) == 0.0
    assert prefix_reuse_share(HAND_EXAMPLE, concurrency=2) <= prefix_reuse_share(HAND_EXAMPLE, concurrency=1)


@pytest.mark.parametrize('concurrency', [0, -1])
def test_reuse_share_rejects_concurrency_below_one(concurrency: int) -> None:
    with pytest.raises(ValueError, match='concurrency'):
        prefix_reuse_share(HAND_EXAMPLE, concurrency=concurrency)


def test_reuse_share_with_the_gate_lets_a_deep_sibling_wait_for_the_seed_and_a_shallow_one_go() -> None:
    # Two workers. Without the gate the deep sibling starts beside the seed and reuses nothing; with it, it starts
    # when the seed ends and reuses its 500. The shallow one (100 of 1000: under a quarter) never waits.
    seed, deep, shallow = info('a', 1000, 900), info('a', 1000, 500), info('a', 1000, 100)
    assert prefix_reuse_share([seed, deep], concurrency=2) == 0.0
    assert prefix_reuse_share([seed, deep], concurrency=2, gate=True) == pytest.approx(500 / 2000)
    assert prefix_reuse_share([seed, shallow], concurrency=2, gate=True) == 0.0
    # One worker: nothing is ever in flight beside a request, so the gate changes nothing.
    assert prefix_reuse_share(HAND_EXAMPLE, concurrency=1, gate=True) == prefix_reuse_share(HAND_EXAMPLE)


def test_reuse_share_of_nothing_is_zero() -> None:
    assert prefix_reuse_share([], concurrency=4) == 0.0


# ---- on real samples ------------------------------------------------------------------------------------------------


@pytest.fixture(scope='module')
def default_like_samples(fixture_corpus_dir: Path) -> list[NeedleSample]:
    params = parse_params(
        {
            'context_lengths_min': 500,
            'context_lengths_max': 3000,
            'context_lengths_num_intervals': 5,
            'document_depth_percent_intervals': 5,
        }
    )
    produced = list(iter_samples(params, corpus_dir=fixture_corpus_dir, subsets=['english', 'chinese']))
    assert len(produced) == 2 * 5 * 5
    return produced


def test_sample_prefix_info(default_like_samples: list[NeedleSample]) -> None:
    sample = default_like_samples[7]
    assert sample_prefix_info(sample) == PrefixInfo(
        group=(sample.subset, sample.start_token),
        context_length=sample.context_length,
        divergence_token=sample.divergence_token,
        prompt_tokens=sample.prompt_tokens,
    )


def test_friendly_order_reuses_at_least_as_much_as_grid_order(default_like_samples: list[NeedleSample]) -> None:
    grid_order = [sample_prefix_info(s) for s in default_like_samples]
    friendly = prefix_friendly_order(default_like_samples)
    friendly_order = [sample_prefix_info(s) for s in friendly]
    assert sorted(map(id, friendly)) == sorted(map(id, default_like_samples))
    # Subsets stay together in their order; inside each, lengths ascend and the deepest of a length comes first.
    assert [s.subset for s in friendly] == ['english'] * 25 + ['chinese'] * 25
    for start in range(0, 50, 5):
        block = friendly[start : start + 5]
        assert len({s.context_length for s in block}) == 1
        assert block[0].divergence_token == max(s.divergence_token for s in block)
        assert [s.divergence_token for s in block[1:]] == sorted(s.divergence_token for s in block[1:])
    for concurrency in (1, 2, 8, 64):
        for order in (grid_order, friendly_order):
            assert 0.0 <= prefix_reuse_share(order, concurrency=concurrency) <= 1.0
    # One at a time, any order reuses the same tokens (the deepest prefix so far covers every shallower one).
    assert prefix_reuse_share(friendly_order, concurrency=1) == pytest.approx(
        prefix_reuse_share(grid_order, concurrency=1)
    )
    assert prefix_reuse_share(grid_order, concurrency=1) == pytest.approx(analytic_share(grid_order))
    assert prefix_reuse_share(grid_order, concurrency=1) > 0.3
    friendly_8 = prefix_reuse_share(friendly_order, concurrency=8)
    assert friendly_8 >= prefix_reuse_share(grid_order, concurrency=8)
    assert friendly_8 > 0
    # More requests in flight can only lose reuse.
    assert friendly_8 <= prefix_reuse_share(friendly_order, concurrency=1)


def test_interleaved_groups_take_turns_and_reuse_more_with_many_in_flight() -> None:
    # Four groups of 2 lengths x 4 depths: sent group after group, 8 in flight put a seed and its siblings side by
    # side; interleaved, a sibling starts a whole round after its seed.
    items = [
        info(group, length, round(length * depth / 100))
        for group in 'ABCD'
        for length in (1000, 2000)
        for depth in (10, 40, 70, 100)
    ]
    grouped = prefix_friendly_order(items, info=identity)
    interleaved = prefix_friendly_order(items, info=identity, interleave=True)
    assert [item.group for item in interleaved[:8]] == list('ABCD') * 2
    assert sorted(interleaved, key=lambda item: item.group) == grouped  # each group's own order kept
    assert prefix_reuse_share(interleaved, concurrency=8) > prefix_reuse_share(grouped, concurrency=8)
    assert prefix_reuse_share(interleaved, concurrency=1) == pytest.approx(prefix_reuse_share(grouped, concurrency=1))
    # Groups of different sizes: the larger one finishes alone.
    uneven = [info('A', 1000, d) for d in (10, 20, 30)] + [info('B', 1000, 5)]
    assert [item.group for item in prefix_friendly_order(uneven, info=identity, interleave=True)] == list('ABAA')
