"""The only module that imports EvalScope: the ``needle_haystack`` benchmark adapter and its registration.

Everything else (parameters, samples, scores, judge prompt, reports, plots) lives in plain modules; this one maps
them onto EvalScope 1.14's adapter hooks.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import sys
from collections import defaultdict
from typing import Any

from evalscope.api.benchmark import BenchmarkMeta, DefaultDataAdapter
from evalscope.api.dataset import DatasetDict, Sample, build_dataset_from_records, resolve_snapshot_or_local_path
from evalscope.api.evaluator import TaskState
from evalscope.api.judge import (
    JudgeCase,
    JudgeContext,
    JudgeDefinition,
    JudgeRequest,
    OutputContract,
    ParseResult,
    ReducedVerdict,
)
from evalscope.api.messages import ChatMessageSystem, ChatMessageUser
from evalscope.api.metric import AggScore, MetricSelector, SampleScore, Score
from evalscope.api.registry import BENCHMARK_REGISTRY
from evalscope.constants import JudgeStrategy, ScoreStatus, ScoringPolicy, Tags
from pydantic import BaseModel

from . import __version__, _autoload
from .errors import NiahConfigError
from .judge import JUDGE_SYSTEM_PROMPT, JUDGE_USER_TEMPLATE, parse_verdict
from .params import DATASET_ID, DEFAULT_SUBSETS, extra_params_spec, parse_params
from .prompts import DEFAULT_SYSTEM_PROMPT, DEFAULT_USER_TEMPLATE, PromptSpec
from .report import (
    CELLS_FILE,
    RESULTS_FILE,
    SampleResult,
    summarize_cells,
    summarize_subsets,
    write_cells_csv,
    write_results,
)
from .samples import GridCell, SubsetSampler, grid
from .scoring import rule_is_certain, rule_scores, strip_reasoning
from .tokenization import load_tokenizer

logger = logging.getLogger(__name__)

BENCHMARK_NAME = 'needle_haystack'
# Part of EvalScope's cache identity: bump it whenever haystacks, prompts or scoring change, so a cached run of
# another version (or of the built-in, v1.1) is never mixed with ours.
EVALUATION_VERSION = 'v2.1'
ELIDED_PROMPT = '<haystack elided: stored once, in predictions/>'
_HUB_ID = re.compile(r'[\w.-]+/[\w.-]+')
_BUILTIN_MODULE = 'evalscope.benchmarks.needle_haystack.needle_haystack_adapter'

DESCRIPTION = f"""
## Overview

Needle in a haystack by evalscope-niah {__version__} (replaces EvalScope's built-in `needle_haystack`): a fact (the
needle) is placed at a chosen depth of a long document (the haystack) and the model is asked to retrieve it.

## Notes

- `context_length` is the exact token count of the whole prompt the model reads (chat template included).
- Needles are placed at sentence boundaries; the achieved depth is recorded per sample.
- Scored by an LLM judge that sees only the question, the reference and the answer (Kamradt's 1/3/5/7/10 rubric
  mapped to 0..1), with rule scores (needle-fact recall, CDME Levenshtein) beside it.
- Heatmaps (PNG and interactive HTML) per subset are written to the report directory.
"""


class _NoSchema(BaseModel):
    pass


class VerdictContract(OutputContract):
    """Our judge prompt already asks for JSON; parsing is ours (tolerant of fences, prose, reasoning blocks)."""

    schema_model: type[BaseModel] = _NoSchema

    def instruction(self) -> str:
        return ''

    def parse(self, response: str) -> ParseResult:
        verdict = parse_verdict(response or '')
        if verdict.status != 'ok':
            return ParseResult.failure(verdict.reason)
        return ParseResult.success({'rating': verdict.rating, 'accuracy': verdict.accuracy})


class NiahAdapter(DefaultDataAdapter):
    """EvalScope hooks for needle-in-a-haystack: load samples, score, aggregate cells, draw heatmaps."""

    scoring_policy = ScoringPolicy.JUDGE_DEFAULT

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        values = {key: value for key, value in self.extra_params.items() if value is not None}
        self.params = parse_params(values)
        self._results: dict[str, list[SampleResult]] = {}

    # ---- judge configuration --------------------------------------------------------------------------------

    def validate_judge_strategy(self) -> None:
        if (
            self._task_config is not None
            and self.judge_strategy == JudgeStrategy.AUTO
            and not self._judge_config.models
        ):
            raise NiahConfigError(
                'judge',
                'needle_haystack scores with an LLM judge by default, and no judge model is configured. Add one: '
                "judge={'models': [{'model_id': 'qwen-plus', 'api_url': 'https://.../v1', 'api_key': '...'}]} "
                '(CLI: --judge \'{"models": [{"model_id": ..., "api_url": ..., "api_key": ...}]}\'), '
                "or score with the rule score alone: judge={'strategy': 'rule'} "
                '(CLI: --judge \'{"strategy": "rule"}\')',
            )
        super().validate_judge_strategy()

    # ---- samples ---------------------------------------------------------------------------------------------

    def load(self) -> tuple[DatasetDict, None]:
        subsets = [self.params.resolve_subset(name) for name in self.subset_list]
        corpus_dir = self._corpus_dir([subset.corpus_file for subset in subsets])
        prompt = PromptSpec(system_prompt=self.system_prompt or '', user_template=self.prompt_template)
        tokenizer = load_tokenizer(self.params.tokenizer_path)
        from .corpus import load_corpus

        datasets = {}
        self._samplers: dict[str, SubsetSampler] = {}
        for subset in subsets:
            cells = grid(self.params, [subset.name])
            needed = self._cells_after_limit(cells)
            sampler = SubsetSampler(
                subset=subset,
                corpus=load_corpus(corpus_dir, subset),
                tokenizer=tokenizer,
                prompt=prompt,
                max_context_length=max(cell.context_length for cell in needed),
            )
            sampler.check_lengths(sorted({cell.context_length for cell in needed}))
            self._samplers[subset.name] = sampler
            # Records are cheap cell descriptions; haystacks are built in record_to_sample, after --limit.
            datasets[subset.name] = build_dataset_from_records(
                [vars(cell) for cell in cells],
                self.record_to_sample,
                name=subset.name,
                location=str(corpus_dir),
                limit=self.limit,
                repeats=self.repeats,
                shuffle=self.shuffle,
                seed=self.seed,
            )
        return DatasetDict(datasets), None

    def _cells_after_limit(self, cells: list[GridCell]) -> list[GridCell]:
        limit = self.limit
        if self.shuffle or limit is None:
            return cells
        count = int(limit) if isinstance(limit, int) or limit >= 1 else max(1, int(len(cells) * limit))
        return cells[:count] or cells

    def _corpus_dir(self, files: list[str]) -> str:
        if os.path.isdir(self.dataset_id):
            return self.dataset_id
        if not _HUB_ID.fullmatch(self.dataset_id):  # neither a folder nor an 'owner/name' dataset id
            raise NiahConfigError('local_path', f'{self.dataset_id!r} is not a directory')
        try:
            return resolve_snapshot_or_local_path(self, allow_file_pattern=files)
        except Exception as exc:  # hub and network errors come in many types
            raise NiahConfigError(
                'local_path',
                f'could not fetch {", ".join(files)} from {self.dataset_id!r} ({type(exc).__name__}: {exc}). Point at '
                "a local copy: dataset_args={'needle_haystack': {'local_path': '/path/to/folder'}}",
            ) from exc

    def record_to_sample(self, record: dict[str, Any]) -> Sample:
        sample = self._samplers[record['subset']].sample(GridCell(**record))
        messages = [ChatMessageUser(content=sample.user_prompt)]
        if sample.system_prompt:
            messages.insert(0, ChatMessageSystem(content=sample.system_prompt))
        # The haystack stays out of metadata: it is stored once, in the prediction's messages.
        metadata = sample.to_record()
        del metadata['messages']
        return Sample(input=messages, target=sample.reference_answer, metadata=metadata)

    # ---- scoring ---------------------------------------------------------------------------------------------

    def calculate_metrics(self, task_state: TaskState) -> SampleScore:
        # The prediction row (with the prompt) is already written; the review row need not repeat the haystack.
        task_state.messages = [
            message.model_copy(update={'content': ELIDED_PROMPT}) if message.role == 'user' else message
            for message in task_state.messages
        ]
        return super().calculate_metrics(task_state)

    def match_score(
        self, original_prediction: str, filtered_prediction: str, reference: str, task_state: TaskState
    ) -> Score:
        metadata = task_state.metadata
        scores = rule_scores(
            filtered_prediction,
            needles=metadata['needles'],
            question=metadata['question'],
            language=metadata['language'],
        )
        return Score(
            value={'acc': scores.recall, 'rule_recall': scores.recall, 'levenshtein': scores.levenshtein},
            main_score_name='acc',
            prediction=original_prediction,
            extracted_prediction=strip_reasoning(filtered_prediction),
            metadata={'source': 'rule'},
        )

    def judge_definition(self, context: JudgeContext) -> JudgeDefinition:
        metadata = context.task_state.metadata
        rule = self.match_score(
            context.original_prediction, context.filtered_prediction, context.reference, context.task_state
        )
        if self.judge_strategy == JudgeStrategy.LLM_RECALL and rule_is_certain(rule.value['rule_recall']):
            return JudgeDefinition.skip(rule, reason='rule score is certain')

        def request(case, placement, completed_cases, judge_context: JudgeContext) -> JudgeRequest:
            # Only question, reference and answer: the judge never sees the haystack.
            prompt = JUDGE_USER_TEMPLATE.format(
                question=metadata['question'],
                reference=judge_context.reference,
                answer=strip_reasoning(judge_context.filtered_prediction),
            )
            return JudgeRequest(
                messages=[ChatMessageSystem(content=JUDGE_SYSTEM_PROMPT), ChatMessageUser(content=prompt)]
            )

        def reduce(case_verdicts, judge_context: JudgeContext) -> ReducedVerdict:
            verdict = case_verdicts[0].value
            return ReducedVerdict(
                value={'acc': verdict['accuracy'], 'judge_accuracy': verdict['accuracy'], **_rule_values(rule)},
                metadata={'judge_rating': verdict['rating']},
            )

        return JudgeDefinition.workflow(
            cases=[JudgeCase(case_id='retrieval', output_contract=VerdictContract())],
            request=request,
            reduce=reduce,
            main_score_name='acc',
        )

    # ---- aggregation and reports -----------------------------------------------------------------------------

    def aggregate_scores(self, sample_scores: list[SampleScore]) -> list[AggScore]:
        aggregates = super().aggregate_scores(sample_scores)
        for aggregate in aggregates:
            aggregate.dimensions = {**aggregate.dimensions, 'scope': 'overall'}
        cells: dict[tuple[int, float], list[SampleScore]] = defaultdict(list)
        for sample_score in sample_scores:
            metadata = sample_score.sample_metadata or {}
            if 'context_length' in metadata:
                cells[(metadata['context_length'], metadata['depth_percent'])].append(sample_score)
        for (length, depth), cell_scores in sorted(cells.items()):
            # Per cell only accuracy: rule scores per cell live in the cells CSV and the HTML heatmap's hover.
            for aggregate in super().aggregate_scores(cell_scores):
                if aggregate.metric_name in ('acc', 'accuracy'):
                    aggregate.dimensions = {**aggregate.dimensions, 'context_length': length, 'depth_percent': depth}
                    aggregates.append(aggregate)
        results = [_sample_result(sample_score) for sample_score in sample_scores]
        for subset in {result.subset for result in results}:
            self._results[subset] = [result for result in results if result.subset == subset]
        for summary in summarize_subsets(results):
            extra = {
                'judge_rule_agreement': summary.agreement.share_agree,
                'judge_rule_kappa': summary.agreement.kappa,
                'judge_failures': float(summary.judge_failures),
            }
            for name, value in extra.items():
                if value is not None:
                    aggregates.append(
                        AggScore(score=value, metric_name=name, dimensions={'scope': 'overall'}, num=summary.n, ids=[])
                    )
        return aggregates

    def _on_generate_report_end(self, report: Any, output_dir: str, **kwargs: Any) -> None:
        from .plotting import plot_all

        results = [result for subset in sorted(self._results) for result in self._results[subset]]
        if not results:
            return
        write_results(os.path.join(output_dir, RESULTS_FILE), results)
        cells = summarize_cells(results)
        write_cells_csv(os.path.join(output_dir, CELLS_FILE), cells)
        try:
            paths = plot_all(cells, output_dir=output_dir, show_score=self.params.show_score)
            logger.info('needle_haystack heatmaps: %s', ', '.join(str(path) for path in paths))
        except Exception:  # plotting must not lose the scores, but it must not be silent either
            logger.exception('needle_haystack: drawing heatmaps failed; redraw with `evalscope-niah plot`')


def _rule_values(rule: Score) -> dict[str, float]:
    return {'rule_recall': rule.value['rule_recall'], 'levenshtein': rule.value['levenshtein']}


def _sample_result(sample_score: SampleScore) -> SampleResult:
    score = sample_score.score
    metadata = sample_score.sample_metadata or {}
    value = score.value or {}
    judged = bool((score.metadata or {}).get('judge_attempts'))
    judge_ok = judged and score.status == ScoreStatus.SUCCESS and 'judge_accuracy' in value
    return SampleResult(
        subset=metadata['subset'],
        context_length=int(metadata['context_length']),
        depth_percent=float(metadata['depth_percent']),
        accuracy=value.get('acc'),
        rule_recall=value.get('rule_recall'),
        levenshtein=value.get('levenshtein'),
        judge_accuracy=value.get('judge_accuracy') if judge_ok else None,
        judge_status='ok' if judge_ok else ('failed' if judged else 'not_called'),
    )


def build_meta() -> BenchmarkMeta:
    return BenchmarkMeta(
        name=BENCHMARK_NAME,
        pretty_name=f'Needle-in-a-Haystack (evalscope-niah {__version__})',
        description=DESCRIPTION,
        dataset_id=DATASET_ID,
        data_adapter=NiahAdapter,
        tags=[Tags.RETRIEVAL, Tags.LONG_CONTEXT],
        metric_list=['acc'],
        primary_metric=MetricSelector(name='accuracy', aggregation='mean', dimensions={'scope': 'overall'}),
        evaluation_version=EVALUATION_VERSION,
        subset_list=list(DEFAULT_SUBSETS),
        default_subset='english',
        eval_split='test',
        few_shot_mode='disabled',
        system_prompt=DEFAULT_SYSTEM_PROMPT,
        prompt_template=DEFAULT_USER_TEMPLATE,
        extra_params=extra_params_spec(),
    )


def register() -> BenchmarkMeta:
    """Make ``needle_haystack`` ours in EvalScope's registry; idempotent.

    EvalScope reserves built-in names, so the decorator cannot do this. The built-in module is imported once first:
    a later full registry scan then finds it already imported and never re-runs its registration over ours.
    """
    with BENCHMARK_REGISTRY._lock:
        current = dict.get(BENCHMARK_REGISTRY, BENCHMARK_NAME)
        if current is not None and current.data_adapter is NiahAdapter:
            return current
        if _BUILTIN_MODULE not in sys.modules:
            importlib.import_module(_BUILTIN_MODULE)
        meta = build_meta()
        dict.__setitem__(BENCHMARK_REGISTRY, BENCHMARK_NAME, meta)
        return meta


_autoload.finish_pending()  # registration requested while this module was still importing evalscope
