"""EvalScope's report of a real run: every metric we emit is declared (no 'undeclared metric' warning), and
OVERALL rows are right for counts and lengths."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip('evalscope')

from evalscope.api.metric.semantics import MetricIdentity
from evalscope.metrics.semantics import get_semantics_resolver
from evalscope.metrics.semantics.entry import MetricEntry

from evalscope_niah.integration import register
from evalscope_niah.testing.openai_server import OpenAICompatServer
from tests.support.tasks import task_settings

EN_ANSWER = 'Eat a sandwich and sit in Dolores Park on a sunny day.'
ZH_ANSWER = '上海人工智能实验室'


def _responder(messages) -> str:
    """Right at the shortest length, wrong beyond it in English; right everywhere in Chinese."""
    user = messages[-1]['content']
    if '小明' in user:
        return ZH_ANSWER
    return EN_ANSWER if len(user) < 3000 else 'I went to the beach.'


@pytest.fixture(scope='module')
def run(tmp_path_factory, fixture_corpus_dir) -> dict:
    work_dir = tmp_path_factory.mktemp('semantics')
    with OpenAICompatServer({'m': _responder}) as server:
        settings = task_settings(
            server,
            fixture_corpus_dir,
            work_dir,
            model='m',
            extra={'context_lengths': [500, 1500], 'document_depth_percents': [50], 'absent_control': True},
        )
        script = f"""
            import json
            import evalscope_niah
            from evalscope import TaskConfig, run_task
            run_task(TaskConfig(**json.loads({json.dumps(json.dumps(settings))})))
        """
        completed = subprocess.run(
            [sys.executable, '-c', textwrap.dedent(script)], capture_output=True, text=True, timeout=300
        )
    assert completed.returncode == 0, completed.stderr[-3000:]
    report = json.loads((work_dir / 'reports' / 'm' / 'needle_haystack.json').read_text(encoding='utf-8'))
    return {'log': completed.stdout + completed.stderr, 'report': report}


def _overall(report: dict, name: str) -> tuple[float, list[float]]:
    for metric in report['metrics']:
        if metric['identity']['name'] == name and metric['identity'].get('dimensions') == {'scope': 'overall'}:
            subsets = [subset['score'] for category in metric['categories'] for subset in category['subsets']]
            return metric['score'], subsets
    raise AssertionError(f'no overall {name} in the report')


def test_no_metric_is_undeclared(run) -> None:
    assert 'undeclared metric' not in run['log']
    register()
    resolver = get_semantics_resolver()
    for metric in run['report']['metrics']:
        identity = MetricIdentity(**metric['identity'])
        assert not resolver.resolve('needle_haystack', identity).degraded, identity
        assert not resolver.resolve('niah', identity).degraded, identity


def test_effective_length_overall_is_a_length_every_subset_holds(run) -> None:
    overall, subsets = _overall(run['report'], 'effective_context_length')
    assert sorted(subsets) == [500, 1500]
    assert overall == 500


def test_counts_add_up_in_overall(run) -> None:
    overall, subsets = _overall(run['report'], 'judge_failures')
    assert overall == sum(subsets)


def test_rates_are_declared_as_percents_and_lengths_as_tokens(run) -> None:
    semantics = {metric['identity']['name']: metric['semantics'] for metric in run['report']['metrics']}
    assert semantics['effective_context_length']['display_unit'] == 'tokens'
    assert semantics['inference_error_rate']['display_unit'] == '%'
    assert semantics['budget_exhausted_rate']['display_unit'] == '%'
    assert semantics['no_answer_rate']['display_unit'] == '%'


@pytest.mark.parametrize(
    ('name', 'baseline', 'label'),
    [('precision', 'quality.precision.ratio', 'Precision'), ('guessed', 'quality.error_rate.ratio', 'Guessed')],
)
def test_task_values_keep_their_semantics(name: str, baseline: str, label: str) -> None:
    # What these two task values meant when integration/ declared them by name; now their tasks declare them.
    register()
    expected = MetricEntry(baseline=baseline, metric_name=label).resolve(name)
    identity = MetricIdentity(name=name, aggregation='mean')
    for benchmark in ('needle_haystack', 'niah'):
        resolved = get_semantics_resolver().resolve(benchmark, identity)
        assert not resolved.degraded and resolved.semantics == expected, resolved
