"""A task added as one folder (tests/support/vault_code: its type, one parameter, one data file, one reported value
and a judge hint) and one registration line runs through `preview` and a real run: ours through EvalScope's
run_task against the 127.0.0.1 OpenAI test server, its judge qualified and asked with the task's hint."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip('evalscope')

from evalscope import TaskConfig, run_task

from evalscope_niah.cli import main
from evalscope_niah.errors import NiahConfigError
from evalscope_niah.metadata import SampleMeta
from evalscope_niah.reporting.outputs import CELLS_FILE, RESULTS_FILE
from evalscope_niah.reporting.result_files import read_cells_csv, read_results
from evalscope_niah.tasks import register_task, score_answer, unregister_task
from evalscope_niah.tasks.compose import parse_params
from evalscope_niah.testing.openai_server import OpenAICompatServer, make_judge_responder, parse_judge_prompt
from tests.support.reports import cell_scores
from tests.support.tasks import judge_block, task_settings
from tests.support.vault_code.task import VAULT, VaultCode

MODEL, JUDGE = 'mock-model', 'mock-judge'
FLOOR = 7
EXTRA = {'task': 'vault_code', 'vault_floor': FLOOR, 'context_lengths': [600], 'document_depth_percents': [0, 100]}
HINT = VAULT['en']['hint'].format(floor=FLOOR)


@pytest.fixture
def vault_task() -> Iterator[None]:
    register_task(VaultCode)  # the one registration line
    try:
        yield
    finally:
        unregister_task(VaultCode.name)


class _Collected(logging.Handler):
    """Every record EvalScope logs while attached (its logger does not propagate, so caplog never sees them)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def evalscope_log() -> Iterator[list[str]]:
    handler = _Collected()
    evalscope_logger = logging.getLogger('evalscope')
    evalscope_logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        evalscope_logger.removeHandler(handler)


def code_reader(messages: list[dict]) -> str:
    """A model that retrieves: the code stated for the asked floor, read from the haystack."""
    found = re.search(rf'vault on floor {FLOOR} is (\d{{6}})', messages[-1]['content'])
    return f'The code is {found.group(1)}.' if found else 'The document does not say.'


def careful_grader(question: str, reference: str, answer: str) -> int:
    """A judge that needs the task's hint beside the reference, then grades the key fact stated plainly (without
    negation or hedging) as the single-needle rule does."""
    assert reference.endswith(f' ({HINT})'), reference
    needle = reference.removesuffix(f' ({HINT})')
    code = re.search(r'\d{6}', needle).group(0)
    meta = SampleMeta(
        subset='s', language='en', task='single', context_length=1, depth_percent=0.0, repeat=0, pick=0,
        needles=(needle,), question=question, reference_answer=needle, answer_keys=(code,), start_token=0,
        divergence_token=0,
    )  # fmt: skip
    score = score_answer(answer, meta)
    return 10 if score.accuracy >= 0.9 and score.certain else 1


def test_the_folder_task_runs_through_preview(vault_task: None, fixture_corpus_dir: Path, tmp_path: Path) -> None:
    output = tmp_path / 'samples.jsonl'
    dataset_args = {'local_path': str(fixture_corpus_dir), 'extra_params': EXTRA}
    assert main(['preview', '--dataset-args', json.dumps(dataset_args), '--output', str(output)]) == 0
    rows = [json.loads(line) for line in output.read_text(encoding='utf-8').splitlines()]
    assert len(rows) == 4  # 2 subsets x 2 depths
    for row in rows:
        meta = SampleMeta.from_dict(row)
        user = row['messages'][-1]['content']
        # Its parameter chose the floor, its data file the sentences, and its sample data travels with the sample.
        assert meta.task == 'vault_code' and meta.task_data == {'floor': FLOOR}
        assert meta.needles[0] in user and meta.question in user and str(FLOOR) in meta.question
        assert meta.answer_keys[0] in VAULT['codes']
        assert score_answer(f'It is {meta.answer_keys[0]}.', meta).values['code_found'] == 1.0


def test_the_folder_task_parameter_is_checked_and_belongs_to_it(vault_task: None) -> None:
    with pytest.raises(NiahConfigError) as error:
        parse_params({**EXTRA, 'vault_floor': 100})
    assert error.value.param == 'vault_floor' and 'between 1 and 99' in str(error.value)
    with pytest.raises(NiahConfigError) as error:
        parse_params({'task': 'single', 'vault_floor': 5})
    assert error.value.param == 'vault_floor' and "only applies to task 'vault_code'" in str(error.value)


def test_the_folder_task_is_gone_with_its_registration() -> None:
    with pytest.raises(NiahConfigError) as error:
        parse_params({'task': 'single', 'vault_floor': 5})
    assert error.value.param == 'vault_floor' and 'unknown parameter' in str(error.value)


def test_the_folder_task_runs_judged_with_its_hint(
    vault_task: None, fixture_corpus_dir: Path, tmp_path: Path, evalscope_log: list[str]
) -> None:
    with OpenAICompatServer({MODEL: code_reader, JUDGE: make_judge_responder(careful_grader)}) as server:
        settings = task_settings(
            server,
            fixture_corpus_dir,
            tmp_path,
            model=MODEL,
            extra=EXTRA,
            subsets=['english'],
            judge=judge_block(server, JUDGE),
        )
        report = run_task(TaskConfig(**settings))['needle_haystack']
        judge_requests = server.requests_for(JUDGE)
        model_requests = server.requests_for(MODEL)
    assert set(cell_scores(report).values()) == {1.0}
    assert len(model_requests) == 2 and all(
        f'vault on floor {FLOOR}' in r.messages[-1]['content'] for r in model_requests
    )
    # The judge check's calibration answers and the run's two answers, every one asked with the task's hint.
    references = [parse_judge_prompt(request.messages[-1]['content'])['reference'] for request in judge_requests]
    assert len(references) >= 2 + 10 and all(reference.endswith(f' ({HINT})') for reference in references)
    results = read_results(next(tmp_path.rglob(RESULTS_FILE)))
    assert [(r.judge_status, r.accuracy, r.task_values) for r in results] == [('ok', 1.0, {'code_found': 1.0})] * 2
    (cells_csv,) = tmp_path.rglob(CELLS_FILE)
    assert 'code_found' in cells_csv.read_text(encoding='utf-8').splitlines()[0].split(',')
    assert [cell.task_values for cell in read_cells_csv(cells_csv)] == [{'code_found': 1.0}] * 2
    # Its value is declared to EvalScope's report by the task's own declaration, not as an unknown metric.
    assert any('needle_haystack' in message for message in evalscope_log)  # the handler saw the run's log
    assert not [message for message in evalscope_log if 'undeclared metric' in message]
    report_json = json.loads(next(tmp_path.rglob('needle_haystack.json')).read_text(encoding='utf-8'))
    semantics = {metric['identity']['name']: metric['semantics'] for metric in report_json['metrics']}
    assert semantics['code_found']['display_unit'] == '%'
