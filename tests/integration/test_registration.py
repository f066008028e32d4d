"""How EvalScope finds us: the public `niah` name, the guarded `needle_haystack` override, the autoload switch."""

from __future__ import annotations

import ast
import inspect
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip('evalscope')

from evalscope import TaskConfig, run_task
from evalscope.api.registry import BENCHMARK_REGISTRY, EVALUATOR_REGISTRY

from evalscope_niah.cli import main
from evalscope_niah.integration import registration
from evalscope_niah.integration.adapter import NiahAdapter
from evalscope_niah.integration.evaluator import NiahEvaluator
from evalscope_niah.integration.registration import OVERRIDDEN_NAME, PUBLIC_NAME, register, resolves_to_ours
from evalscope_niah.reporting.compare import find_runs
from evalscope_niah.reporting.outputs import OUTPUT_PREFIXES, OutputFiles
from evalscope_niah.reporting.result_files import read_cells_csv, read_results
from evalscope_niah.testing.openai_server import OpenAICompatServer
from tests.support.tasks import task_settings

BUILTIN_ADAPTER_MODULE = 'evalscope.benchmarks.needle_haystack.needle_haystack_adapter'


def _python(script: str, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, '-c', textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
        cwd=Path(__file__).parents[2],  # the repository root
    )


def test_both_names_resolve_to_ours_and_registering_twice_changes_nothing() -> None:
    register()
    public, overridden = BENCHMARK_REGISTRY[PUBLIC_NAME], BENCHMARK_REGISTRY['needle_haystack']
    register()
    assert BENCHMARK_REGISTRY[PUBLIC_NAME] is public and BENCHMARK_REGISTRY['needle_haystack'] is overridden
    assert public.data_adapter is NiahAdapter and overridden.data_adapter is NiahAdapter
    assert EVALUATOR_REGISTRY[PUBLIC_NAME] is NiahEvaluator
    assert EVALUATOR_REGISTRY['needle_haystack'] is NiahEvaluator
    assert resolves_to_ours(PUBLIC_NAME) and resolves_to_ours('needle_haystack')


def test_the_public_path_touches_no_private_attribute_of_evalscope() -> None:
    """register_public uses register_benchmark / register_evaluator and `in`: no `._x`, no dict.__setitem__."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(registration.register_public)))
    private = [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr.startswith('_') and not node.attr.startswith('__')
    ]
    dict_calls = [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == 'dict']
    assert private == [] and dict_calls == []


_REFUSED_RUN = """
import json, logging, sys
logging.basicConfig(level=logging.WARNING, format='%(levelname)s %(message)s')
import evalscope
from evalscope.api.registry import BENCHMARK_REGISTRY
{simulate}
from evalscope_niah.integration import register, resolves_to_ours
register(); register()
entry = dict.get(BENCHMARK_REGISTRY, 'needle_haystack')
print(json.dumps({{
    'niah': resolves_to_ours('niah'),
    'needle_haystack': None if entry is None else entry.data_adapter.__module__,
    'version': evalscope.__version__,
}}))
"""
# Two ways a future EvalScope could break the override: the built-in module moves (checked before touching the
# registry), or the registry stops reading what we write (checked after, and undone).
_SIMULATIONS = {
    'built-in module gone': "sys.modules['evalscope.benchmarks.needle_haystack'] = None",
    'registry reads elsewhere': (
        'class Moved(type(BENCHMARK_REGISTRY)):\n'
        '    def get(self, name, default=None):\n'
        "        return None if name == 'needle_haystack' else super().get(name, default)\n"
        'BENCHMARK_REGISTRY.__class__ = Moved'
    ),
}


@pytest.mark.parametrize('change', sorted(_SIMULATIONS))
def test_changed_internals_refuse_the_override_with_one_warning_and_niah_still_works(change: str) -> None:
    """Nothing is half-registered: needle_haystack holds what EvalScope put there (or nothing), never ours."""
    completed = _python(_REFUSED_RUN.format(simulate=_SIMULATIONS[change]), EVALSCOPE_NIAH_AUTOLOAD='0')
    assert completed.returncode == 0, completed.stderr
    state = json.loads(completed.stdout.strip().splitlines()[-1])
    assert state['niah'] is True
    assert state['needle_haystack'] in (None, BUILTIN_ADAPTER_MODULE)
    warnings = [line for line in completed.stderr.splitlines() if 'could not take over' in line]
    assert len(warnings) == 1
    assert state['version'] in warnings[0] and '--datasets niah' in warnings[0]


def test_autoload_switch_off_leaves_evalscope_untouched() -> None:
    completed = _python(
        """
        import sys
        import evalscope
        from evalscope.api.registry import BENCHMARK_REGISTRY
        print(BENCHMARK_REGISTRY['needle_haystack'].data_adapter.__module__, 'evalscope_niah' in sys.modules)
        """,
        EVALSCOPE_NIAH_AUTOLOAD='0',
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == [BUILTIN_ADAPTER_MODULE, 'False']


@pytest.mark.parametrize(
    'first_import',
    [
        'import evalscope',
        # An integration module imported before EvalScope (as tests/params/test_params.py does) imports EvalScope
        # itself; a later plain run_task must still find our adapter (it once got EvalScope's built-in, a KeyError).
        'import evalscope_niah.integration.param_spec',
    ],
)
def test_autoload_on_registers_ours_whatever_is_imported_first(first_import: str) -> None:
    completed = _python(
        f"""
        {first_import}
        from evalscope.api.registry import BENCHMARK_REGISTRY
        for name in ('needle_haystack', 'niah'):
            print(BENCHMARK_REGISTRY[name].data_adapter.__module__)
        """,
        EVALSCOPE_NIAH_AUTOLOAD='1',
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ['evalscope_niah.integration.adapter'] * 2


def test_niah_runs_end_to_end_with_the_override_disabled(fixture_corpus_dir: Path, tmp_path: Path) -> None:
    answer = 'Eat a sandwich and sit in Dolores Park on a sunny day.'
    with OpenAICompatServer({'m': lambda messages: answer}) as server:
        settings = task_settings(
            server,
            fixture_corpus_dir,
            tmp_path,
            model='m',
            extra={'context_lengths': [500], 'document_depth_percents': [50]},
            subsets=['english'],
            datasets=[PUBLIC_NAME],
        )
        settings['dataset_args'] = {PUBLIC_NAME: settings['dataset_args'].pop('needle_haystack')}
        completed = _python(
            f"""
            import json
            from evalscope import TaskConfig, run_task
            from evalscope.api.registry import BENCHMARK_REGISTRY
            import evalscope_niah
            run_task(TaskConfig(**json.loads({json.dumps(json.dumps(settings))})))
            print(BENCHMARK_REGISTRY['needle_haystack'].data_adapter.__module__)
            """,
            EVALSCOPE_NIAH_OVERRIDE='0',
        )
        assert completed.returncode == 0, completed.stderr[-3000:]
        assert len(server.requests_for('m')) == 1
    assert completed.stdout.split()[-1] == BUILTIN_ADAPTER_MODULE
    results = (tmp_path / 'reports' / 'm' / OutputFiles(PUBLIC_NAME).results).read_text(encoding='utf-8')
    assert json.loads(results.splitlines()[0])['accuracy'] == 1.0


def test_the_output_prefixes_are_the_registered_names() -> None:
    assert set(OUTPUT_PREFIXES) == {PUBLIC_NAME, OVERRIDDEN_NAME}


def test_both_names_in_one_run_keep_their_own_outputs(fixture_corpus_dir: Path, tmp_path: Path, capsys) -> None:
    """Each name its own grid (lengths 400 and 500), so every row shows whose it is; plot and compare find both."""
    answer = 'Eat a sandwich and sit in Dolores Park on a sunny day.'
    grids = {OVERRIDDEN_NAME: 400, PUBLIC_NAME: 500}
    with OpenAICompatServer({'m': lambda messages: answer}) as server:
        settings = task_settings(server, fixture_corpus_dir, tmp_path, model='m', extra={}, datasets=list(grids))
        settings['dataset_args'] = {
            name: {
                'local_path': str(fixture_corpus_dir),
                'subset_list': ['english', 'chinese'],
                'extra_params': {'context_lengths': [length], 'document_depth_percents': [25, 75]},
            }
            for name, length in grids.items()
        }
        report = run_task(TaskConfig(**settings))
        assert set(report) == set(grids)
        sent = len(server.requests_for('m'))
    report_dir = tmp_path / 'reports' / 'm'
    rows = {}
    for name, length in grids.items():
        files = OutputFiles(name)
        rows[name] = read_results(report_dir / files.results)
        assert {row.context_length for row in rows[name]} == {length}, name
        assert {row.subset for row in rows[name]} == {'english', 'chinese'}
        assert {cell.context_length for cell in read_cells_csv(report_dir / files.cells)} == {length}
        summary = json.loads((report_dir / files.summary).read_text(encoding='utf-8'))
        assert set(summary['effective_context_length']) == {'english', 'chinese'}
        for subset in ('english', 'chinese'):
            assert (report_dir / f'{files.heatmap_prefix}_{subset}.png').is_file()
            assert (report_dir / f'{files.opencompass_summary_prefix}_{subset}.csv').is_file()
    assert len(rows[OVERRIDDEN_NAME]) == len(rows[PUBLIC_NAME]) and len(rows[PUBLIC_NAME]) >= 4
    assert len(rows[OVERRIDDEN_NAME]) + len(rows[PUBLIC_NAME]) == sent
    # The readers find either prefix and keep the two apart.
    assert main(['plot', str(tmp_path), '--served-tokens']) == 0
    drawn = capsys.readouterr().out.split()
    for name in grids:
        assert str(report_dir / f'{OutputFiles(name).heatmap_prefix}_served_english.png') in drawn
    labels = [run.label for run in find_runs([tmp_path])]
    assert sorted(labels) == [f'm [{OVERRIDDEN_NAME}]', f'm [{PUBLIC_NAME}]']
