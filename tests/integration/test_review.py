"""One sample's review (integration/review.py): the rule score is computed once per sample whichever hooks read it,
and a review is seen only by its own task state, on its own thread."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from evalscope_niah.testing.openai_server import OpenAICompatServer, make_judge_responder, overlap_grader
from tests.support.tasks import UNCHECKED_JUDGE, judge_block, task_config

pytest.importorskip('evalscope')

from evalscope import run_task
from evalscope.api.dataset import Sample
from evalscope.api.evaluator import TaskState

from evalscope_niah.integration import register, review
from evalscope_niah.integration.review import SampleReview, review_of, reviewing

MODEL, JUDGE = 'half-right-model', 'overlap-judge'


def _state(text: str) -> TaskState:
    return TaskState(model=MODEL, sample=Sample(input=text, target='y'), completed=True)


def test_a_review_is_seen_by_its_task_state_only_and_only_inside_the_block() -> None:
    state, other = _state('a'), _state('a')
    sample_review = SampleReview(state, prompt=None, final='answer')
    assert review_of(state) is None
    with reviewing(sample_review):
        assert review_of(state) is sample_review
        assert review_of(other) is None  # an equal state is not this one
    assert review_of(state) is None


def test_reviews_on_parallel_threads_do_not_see_each_other() -> None:
    states = [_state(str(index)) for index in range(2)]
    both_inside = threading.Barrier(len(states), timeout=10)
    seen: dict[int, object] = {}

    def review_on_a_thread(index: int) -> None:
        with reviewing(SampleReview(states[index], prompt=None, final=str(index))):
            both_inside.wait()  # the other thread's review is current on its thread now
            seen[index] = [review_of(state) for state in states]

    threads = [threading.Thread(target=review_on_a_thread, args=(index,)) for index in range(len(states))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen[0][0].final == '0' and seen[0][1] is None
    assert seen[1][0] is None and seen[1][1].final == '1'


def _half_right(messages: list[dict]) -> str:
    """The answer with a hedge beside it: the rule score is neither 1 nor certain, so the judge is asked too."""
    del messages
    return 'I am not sure, but maybe eat a sandwich and sit in Dolores Park on a sunny day.'


def test_the_rule_score_is_computed_once_per_sample_when_rule_and_judge_both_read_it(
    fixture_corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register()
    computed: list[str] = []
    real_score_answer = review.score_answer

    def counted_score_answer(*args, **kwargs):
        computed.append(args[0])
        return real_score_answer(*args, **kwargs)

    monkeypatch.setattr(review, 'score_answer', counted_score_answer)
    responders = {MODEL: _half_right, JUDGE: make_judge_responder(overlap_grader)}
    with OpenAICompatServer(responders) as server:
        extra = {'context_lengths': [600], 'document_depth_percents': [0, 100], **UNCHECKED_JUDGE}
        config = task_config(
            server,
            fixture_corpus_dir,
            tmp_path,
            model=MODEL,
            extra=extra,
            judge={**judge_block(server, JUDGE), 'strategy': 'llm_recall'},
        )
        config.dataset_args['needle_haystack']['subset_list'] = ['english']
        run_task(config)
        judge_requests = len(server.requests_for(JUDGE))
    samples = len(server.requests_for(MODEL))
    assert samples == 2
    assert judge_requests == samples  # the judge hook ran after the rule hook for every sample
    assert len(computed) == samples  # ... and both read one rule score
