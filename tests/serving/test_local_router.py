"""Through a real router: two llama.cpp replicas of the shipped SmolLM2-135M behind vllm-router (consistent hashing),
a small grid through EvalScope's run_task. Every prompt of a prefix group lands on one replica, the answers are the
same as a direct run's, and a replica killed mid-run costs nothing: the router and the retries finish the run."""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from pathlib import Path

import pytest

pytest.importorskip('xllamacpp')
pytest.importorskip('evalscope')

from evalscope_niah.integration.run import run_task_settings
from evalscope_niah.making.corpus import DEMO_CORPUS_DIR, DEMO_CORPUS_FILES
from evalscope_niah.reporting.outputs import RESULTS_FILE
from evalscope_niah.reporting.result_files import read_results
from evalscope_niah.serving.local_model import LocalModelError, LocalModelServer, find_smollm2_gguf
from evalscope_niah.serving.local_router import LocalRouter, LocalRouterError, prometheus_counters, router_binary
from evalscope_niah.serving.prometheus import LLAMA_CACHED, LLAMA_COMPUTED

# Real llama.cpp replicas: the slowest module of the suite, so it is marked slow and runs first (tests/conftest.py).
pytestmark = pytest.mark.slow

try:
    find_smollm2_gguf()
    router_binary()
except (LocalModelError, LocalRouterError) as missing:
    pytest.skip(f'needs the local model and vllm-router: {missing}', allow_module_level=True)

LENGTHS = [300, 450]
DEPTHS = [20, 80]
REPEATS = 2  # two haystack starts: two prefix groups of len(LENGTHS) x len(DEPTHS) prompts
PROMPTS = len(LENGTHS) * len(DEPTHS) * REPEATS


def _settings(api_url: str, work_dir: Path) -> dict:
    return {
        'model': 'smollm2',
        'api_url': api_url,
        'api_key': 'none',
        'eval_type': 'openai_api',
        'datasets': ['needle_haystack'],
        'dataset_args': {
            'needle_haystack': {
                'local_path': str(DEMO_CORPUS_DIR),
                'subset_list': ['english'],
                'extra_params': {
                    'context_lengths': LENGTHS,
                    'document_depth_percents': DEPTHS,
                    'num_repeats': REPEATS,
                    'subsets': {'english': {'corpus_file': DEMO_CORPUS_FILES['english']}},
                },
            }
        },
        'judge': {'strategy': 'rule'},
        # Greedy and short: the same prompt gives the same answer on any replica.
        'generation_config': {'temperature': 0.0, 'max_tokens': 24, 'retries': 5, 'retry_interval': 1},
        'eval_batch_size': 1,
        'work_dir': str(work_dir),
        'no_timestamp': True,
    }


def _run(api_url: str, work_dir: Path) -> dict[tuple[int, float | None], list[str | None]]:
    """Answers per cell (sorted: the repeats of a cell are not told apart in the results file)."""
    run_task_settings(_settings(api_url, work_dir))
    results = read_results(next(work_dir.rglob(RESULTS_FILE)))
    assert all(result.error is None for result in results), [result.error for result in results]
    answers: dict[tuple[int, float | None], list[str | None]] = defaultdict(list)
    for result in results:
        answers[(result.context_length, result.depth_percent)].append(result.answer)
    return {cell: sorted(values, key=str) for cell, values in answers.items()}


def _served_tokens(replica: LocalModelServer) -> float:
    counters = prometheus_counters(replica.root_url)
    return counters[LLAMA_COMPUTED] + counters[LLAMA_CACHED]


def _replicas(count: int) -> list[LocalModelServer]:
    return [LocalModelServer(n_ctx=1024, n_threads=1, metrics=True).start() for _ in range(count)]


@pytest.fixture(scope='module')
def direct_answers(tmp_path_factory) -> dict:
    with LocalModelServer(n_ctx=1024, n_threads=1) as server:
        return _run(server.base_url, tmp_path_factory.mktemp('direct'))


def test_each_group_stays_on_one_replica_and_answers_match_a_direct_run(direct_answers, tmp_path) -> None:
    replicas = _replicas(2)
    try:
        with LocalRouter([replica.root_url for replica in replicas], policy='consistent_hash') as router:
            routed = _run(router.base_url, tmp_path)
        served = [_served_tokens(replica) for replica in replicas]
    finally:
        for replica in replicas:
            replica.stop()
    assert routed == direct_answers
    assert sum(len(answers) for answers in routed.values()) == PROMPTS
    # Prompt tokens each group sent (served_prompt_tokens: what llama.cpp said it read), keyed by request header.
    predictions = _prediction_rows(tmp_path)
    group_tokens = Counter()
    for row in predictions:
        group_tokens[row['group']] += row['prompt_tokens']
    assert len(group_tokens) == REPEATS
    # Each replica read whole groups: its token count is the sum of some groups' totals, never a split group.
    totals = list(group_tokens.values())
    whole_groups = {0, *totals, sum(totals)}
    assert all(tokens in whole_groups for tokens in served), (served, totals)
    assert sum(served) == sum(totals)


def _prediction_rows(work_dir: Path) -> list[dict]:
    """Per request: the prefix group (subset, haystack start) and the prompt tokens the server said it read."""
    import json

    rows = []
    for path in work_dir.rglob('predictions/*/*.jsonl'):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            meta = record['metadata']
            usage = record['model_output']['usage']
            rows.append({'group': (meta['subset'], meta['start_token']), 'prompt_tokens': usage['input_tokens']})
    assert len(rows) == PROMPTS
    return rows


def test_a_replica_killed_mid_run_is_routed_around_and_nothing_is_lost(direct_answers, tmp_path) -> None:
    replicas = _replicas(2)
    killed: list[LocalModelServer] = []
    done = threading.Event()

    def kill_the_first_replica_that_serves() -> None:
        # The event: a replica's counters show it has read a prompt (it holds a group). It dies at once, while the
        # rest of its group is still to be sent.
        while not done.is_set():
            for replica in replicas:
                if _served_tokens(replica) > 0:
                    replica.kill()
                    killed.append(replica)
                    return
            done.wait(0.05)

    try:
        with LocalRouter([replica.root_url for replica in replicas], policy='consistent_hash') as router:
            watcher = threading.Thread(target=kill_the_first_replica_that_serves, daemon=True)
            watcher.start()
            try:
                routed = _run(router.base_url, tmp_path)
            finally:
                done.set()
                watcher.join()
    finally:
        for replica in replicas:
            replica.stop()
    assert len(killed) == 1
    assert routed == direct_answers  # every sample answered, as a direct run answers it


@pytest.mark.parametrize(
    ('workers', 'policy', 'says'),
    [([], 'consistent_hash', 'at least one replica'), (['http://127.0.0.1:1'], 'sticky', 'policy must be one of')],
)
def test_bad_router_settings_fail_before_anything_starts(workers, policy, says) -> None:
    with pytest.raises(ValueError, match=says):
        LocalRouter(workers, policy=policy)


def test_a_router_whose_workers_never_answer_fails_with_its_output() -> None:
    # A port nobody listens on: vllm-router waits for the worker, then exits; the error quotes what it said.
    with pytest.raises(LocalRouterError, match='router'):
        LocalRouter(['http://127.0.0.1:9'], startup_timeout=3).start()
