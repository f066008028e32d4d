"""Hold a prompt back while an earlier prompt of its prefix group is computing the prefix it would reuse.

A prefix cache (vLLM, SGLang, llama.cpp's slots) serves a prefix only once it has been computed: two prompts of one
prefix group sent together both compute their shared text, on one server or on the replicas a router spreads them
over. The request order (ordering.py) sends each length's deepest prompt first; this gate makes its deep siblings
wait for it to finish, so they find its prefix cached, while the shallow ones, which would reuse little, go at once
and keep the requests in flight busy.

The gate knows the send order (``plan``), so a sibling waits for its seed even when its thread reaches the gate
first. It never deadlocks: a prompt waits only on prompts before it in the send order, which EvalScope's pool
started before it (a sliding window over the list, one thread per slot). A prompt planned but never started (a
pool that stopped early) is waited on for at most ``PENDING_WAIT_S``.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# A prompt waits only when the prompts before it would cache at least this share of it beyond what is cached now:
# below it, the prompt computes most of itself anyway, and waiting would idle a request slot for little.
MIN_GAIN_SHARE = 0.25
# How long a prompt waits on earlier prompts that no thread has started: EvalScope starts them before it, so only a
# pool that stopped early leaves one unstarted.
PENDING_WAIT_S = 60.0


def waiting_pays(divergence: int, prompt_tokens: int, *, cached: int, computing: int) -> bool:
    """Whether a prompt diverging at ``divergence`` should wait for a prompt of its group diverging at ``computing``
    to finish, its group's cache reaching to ``cached``: the wait must cache MIN_GAIN_SHARE of it more."""
    gain = min(divergence, computing) - min(divergence, cached)
    return gain >= max(1.0, MIN_GAIN_SHARE * prompt_tokens)


@dataclass(frozen=True)
class PlannedPrompt:
    key: Hashable  # unique per prompt of the run
    group: Hashable  # prompts of one group share their text up to their divergence token
    divergence: int
    prompt_tokens: int


class PrefixGate:
    """Per run: the send order, which prefixes are cached (prompts finished) and which are being computed.

    ``on_hold(prompt)`` is called, under the gate's lock, each time a prompt is held back (for logs and tests).
    """

    def __init__(self, *, on_hold: Callable[[PlannedPrompt], None] | None = None) -> None:
        self._changed = threading.Condition()
        self._order: list[PlannedPrompt] = []  # the send order
        self._position: dict[Hashable, int] = {}  # key -> its position in the send order
        self._unstarted: dict[Hashable, list[int]] = defaultdict(list)  # per group, positions not started, sorted
        self._in_flight: dict[Hashable, dict[int, int]] = defaultdict(dict)  # per group, position -> divergence
        self._cached: dict[Hashable, int] = defaultdict(int)  # per group, the deepest divergence finished
        self._on_hold = on_hold

    def plan(self, prompts: Iterable[PlannedPrompt]) -> None:
        """The prompts about to be sent, in send order (replaces an earlier plan)."""
        with self._changed:
            self._order = list(prompts)
            self._position = {prompt.key: position for position, prompt in enumerate(self._order)}
            self._unstarted.clear()
            for position in self._position.values():
                self._unstarted[self._order[position].group].append(position)  # positions rise: the lists stay sorted
            self._changed.notify_all()

    @contextmanager
    def turn(self, key: Hashable) -> Iterator[None]:
        """Wait while waiting pays, then hold the prompt's place in flight until the block ends. Its prefix counts
        as cached only when the block ends without an error (a failed request may have cached nothing). A key not
        in the plan goes at once."""
        with self._changed:
            position = self._position.get(key)
            if position is not None:
                prompt = self._order[position]
                self._start(position)
                self._wait_while_it_pays(position, prompt)
                self._in_flight[prompt.group][position] = prompt.divergence
        finished = False
        try:
            yield
            finished = True
        finally:
            if position is not None:
                with self._changed:
                    self._in_flight[prompt.group].pop(position, None)
                    if finished:
                        self._cached[prompt.group] = max(self._cached[prompt.group], prompt.divergence)
                    self._changed.notify_all()

    def abandon(self, key: Hashable) -> None:
        """The prompt ended without a turn (its haystack failed to build): nobody waits for it."""
        with self._changed:
            position = self._position.get(key)
            if position is not None and self._start(position):
                self._changed.notify_all()

    def _start(self, position: int) -> bool:
        unstarted = self._unstarted[self._order[position].group]
        index = bisect.bisect_left(unstarted, position)
        if index < len(unstarted) and unstarted[index] == position:
            del unstarted[index]
            return True
        return False

    def _wait_while_it_pays(self, position: int, prompt: PlannedPrompt) -> None:
        deadline = time.monotonic() + PENDING_WAIT_S
        held = False
        while True:
            cached = self._cached[prompt.group]
            computing = max(self._in_flight[prompt.group].values(), default=0)
            if waiting_pays(prompt.divergence, prompt.prompt_tokens, cached=cached, computing=computing):
                timeout = None  # a prompt in flight ends (its request has a timeout): no bound needed
            else:
                unstarted = self._unstarted[prompt.group]
                earlier = unstarted[: bisect.bisect_left(unstarted, position)]  # a few: EvalScope starts them in order
                coming = max((self._order[other].divergence for other in earlier), default=0)
                timeout = deadline - time.monotonic()
                if timeout <= 0 or not waiting_pays(
                    prompt.divergence, prompt.prompt_tokens, cached=cached, computing=coming
                ):
                    return
            if not held:
                held = True
                if self._on_hold is not None:
                    self._on_hold(prompt)
            self._changed.wait(timeout)
