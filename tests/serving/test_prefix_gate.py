"""The prefix gate: a deep prompt waits for the earlier prompt of its group that computes its prefix, a shallow one
goes at once; and through EvalScope to a real 127.0.0.1 server, the server sees the seed's reply before its deep
siblings arrive, while the shallow ones keep it busy. Every wait here is on an event; a broken gate fails by the
events' timeouts instead of hanging."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from evalscope_niah.integration.run import run_task_settings
from evalscope_niah.params.subsets import EN_NEEDLE
from evalscope_niah.reporting.outputs import RESULTS_FILE
from evalscope_niah.reporting.result_files import read_results
from evalscope_niah.serving.prefix_gate import PlannedPrompt, PrefixGate
from evalscope_niah.testing.openai_server import OpenAICompatServer, needle_finder
from tests.support.tasks import task_settings

WAIT_S = 30  # only a broken gate makes an event wait this long

SEED = PlannedPrompt('seed', 'g', divergence=900, prompt_tokens=1000)
DEEP = PlannedPrompt('deep', 'g', divergence=500, prompt_tokens=1000)  # would reuse 500 of 1000 from the seed
SHALLOW = PlannedPrompt('shallow', 'g', divergence=100, prompt_tokens=1000)  # 100 of 1000: not worth a wait
OTHER = PlannedPrompt('other', 'h', divergence=900, prompt_tokens=1000)  # another group shares nothing


class _Prompt:
    """A prompt's turn in a thread: ``entered`` once it is in flight, then held there until ``finish``."""

    def __init__(self, gate: PrefixGate, key: str, *, fail: bool = False) -> None:
        self.entered = threading.Event()
        self._release = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(gate, key, fail), daemon=True)
        self._thread.start()

    def _run(self, gate: PrefixGate, key: str, fail: bool) -> None:
        try:
            with gate.turn(key):
                self.entered.set()
                self._release.wait(WAIT_S)
                if fail:
                    raise ConnectionError('the server went away')
        except ConnectionError:
            pass

    def finish(self) -> None:
        self._release.set()
        self._thread.join(WAIT_S)
        assert not self._thread.is_alive()


class _Holds:
    """The keys the gate held back, in order, with an event per key."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self._events: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def _event(self, key: str) -> threading.Event:
        with self._lock:
            return self._events.setdefault(key, threading.Event())

    def __call__(self, prompt: PlannedPrompt) -> None:
        self.keys.append(prompt.key)
        self._event(prompt.key).set()

    def wait(self, key: str) -> bool:
        return self._event(key).wait(WAIT_S)


def _held_until(holds: _Holds, waiter: _Prompt, key: str, release: Callable[[], None]) -> None:
    """``waiter`` is held back, not in flight, until ``release`` runs; then it goes."""
    assert holds.wait(key)
    assert not waiter.entered.is_set()
    release()
    assert waiter.entered.wait(WAIT_S)


def _gate(*prompts: PlannedPrompt) -> tuple[PrefixGate, _Holds]:
    holds = _Holds()
    gate = PrefixGate(on_hold=holds)
    gate.plan(prompts)
    return gate, holds


def test_a_deep_sibling_waits_for_the_seed_in_flight_and_goes_when_it_finishes() -> None:
    gate, holds = _gate(SEED, DEEP)
    seed = _Prompt(gate, 'seed')
    assert seed.entered.wait(WAIT_S)
    deep = _Prompt(gate, 'deep')
    _held_until(holds, deep, 'deep', seed.finish)
    assert holds.keys == ['deep']
    deep.finish()


def test_a_deep_sibling_waits_for_a_seed_whose_thread_has_not_reached_the_gate() -> None:
    # EvalScope's pool started the seed first, but its haystack is still being built: the plan says it comes first.
    gate, holds = _gate(SEED, DEEP)
    deep = _Prompt(gate, 'deep')
    assert holds.wait('deep') and holds.keys == ['deep']
    seed = _Prompt(gate, 'seed')
    assert seed.entered.wait(WAIT_S)  # the seed itself never waits on a later prompt
    _held_until(holds, deep, 'deep', seed.finish)
    deep.finish()


@pytest.mark.parametrize('key', ['shallow', 'other', 'unplanned'])
def test_a_prompt_that_would_reuse_little_another_group_or_an_unplanned_one_goes_at_once(key) -> None:
    gate, holds = _gate(SEED, SHALLOW, OTHER)
    seed = _Prompt(gate, 'seed')
    assert seed.entered.wait(WAIT_S)
    sibling = _Prompt(gate, key)
    assert sibling.entered.wait(WAIT_S)
    assert holds.keys == []
    sibling.finish()
    seed.finish()


def test_a_prompt_whose_prefix_is_cached_goes_at_once() -> None:
    gate, holds = _gate(SEED, DEEP, PlannedPrompt('deeper', 'g', divergence=950, prompt_tokens=1000))
    seed = _Prompt(gate, 'seed')
    assert seed.entered.wait(WAIT_S)
    seed.finish()
    # 'deeper' diverges after the seed: with the seed cached, waiting for it gains nothing.
    for key in ('deeper', 'deep'):
        prompt = _Prompt(gate, key)
        assert prompt.entered.wait(WAIT_S)
        prompt.finish()
    assert holds.keys == []


def test_a_failed_seed_releases_its_waiters_and_caches_nothing() -> None:
    middle = PlannedPrompt('middle', 'g', divergence=800, prompt_tokens=1000)
    gate, holds = _gate(SEED, DEEP, middle)
    seed = _Prompt(gate, 'seed', fail=True)
    assert seed.entered.wait(WAIT_S)
    deep = _Prompt(gate, 'deep')
    _held_until(holds, deep, 'deep', seed.finish)  # the seed's request fails: nobody computes the prefix now
    # Had the failed seed counted as cached, 'middle' (800) would find its prefix there and go. It waits for 'deep'.
    middle_prompt = _Prompt(gate, 'middle')
    _held_until(holds, middle_prompt, 'middle', deep.finish)
    assert holds.keys == ['deep', 'middle']
    middle_prompt.finish()


def test_a_seed_abandoned_before_its_turn_is_not_waited_for() -> None:
    gate, holds = _gate(SEED, DEEP)
    deep = _Prompt(gate, 'deep')
    _held_until(holds, deep, 'deep', lambda: gate.abandon('seed'))  # its haystack failed: it never takes a turn
    deep.finish()


# ---- through EvalScope to a real server -----------------------------------------------------------------------

MODEL = 'needle-finder'


class _SeedHoldingServer:
    """Answers like needle_finder and logs what it saw, holding the deepest prompt (the seed) until the two
    shallow prompts have arrived: with a gate that works they go while the seed is computed, the deep one after."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._shallow_arrived = threading.Semaphore(0)

    def respond(self, messages: list[dict]) -> str:
        depth = _needle_depth(messages)
        with self._lock:
            self.log.append(('arrive', depth))
        if depth == 'shallow':
            self._shallow_arrived.release()
        if depth == 'seed':
            for _ in range(2):
                self._shallow_arrived.acquire(timeout=WAIT_S)
        with self._lock:
            self.log.append(('reply', depth))
        return needle_finder(messages)


def _needle_depth(messages: list[dict]) -> str:
    text = messages[-1]['content']
    share = text.find(EN_NEEDLE) / len(text)
    return 'seed' if share > 0.75 else 'deep' if share > 0.35 else 'shallow'


def test_through_evalscope_the_seeds_reply_comes_before_its_deep_sibling_arrives(fixture_corpus_dir, tmp_path) -> None:
    # One length, one haystack start, four in flight: the prefix order sends the 90% prompt (the seed), then
    # 0%, 10% and 50% (rising). 0% and 10% would reuse little and go at once; 50% waits for the seed.
    held = _SeedHoldingServer()
    extra = {'context_lengths': [1200], 'document_depth_percents': [0, 10, 50, 90]}
    with OpenAICompatServer({MODEL: held.respond}) as server:
        settings = task_settings(
            server, fixture_corpus_dir, tmp_path, model=MODEL, extra=extra, subsets=['english'], eval_batch_size=4
        )
        run_task_settings(settings)
    log = held.log
    assert sorted(depth for event, depth in log if event == 'arrive') == ['deep', 'seed', 'shallow', 'shallow']
    seed_reply = log.index(('reply', 'seed'))
    assert log.index(('arrive', 'deep')) > seed_reply  # the deep prompt waited for the seed's prefix
    assert log[:seed_reply].count(('arrive', 'shallow')) == 2  # the shallow ones went while it was computed
    results = read_results(next(tmp_path.rglob(RESULTS_FILE)))
    assert len(results) == 4 and all(result.accuracy == 1.0 and not result.error for result in results)
