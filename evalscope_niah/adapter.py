"""The only module that imports EvalScope: the ``needle_haystack`` benchmark adapter and its registration.

Everything else (parameters, samples, scores, judge prompt, reports, plots) lives in plain modules; this one maps
them onto EvalScope 1.14's adapter hooks.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import re
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
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
from evalscope.api.model import GenerateConfig, Model, ModelOutput
from evalscope.api.registry import BENCHMARK_REGISTRY, EVALUATOR_REGISTRY
from evalscope.constants import JudgeStrategy, ScoreStatus, ScoringPolicy, Tags
from evalscope.evaluator import DefaultEvaluator
from pydantic import BaseModel

from . import __version__, _autoload
from .errors import NiahConfigError
from .judge import JUDGE_SYSTEM_PROMPT, JUDGE_USER_TEMPLATE, parse_verdict
from .opencompass import write_opencompass_summaries
from .ordering import PrefixInfo, prefix_friendly_order
from .params import DATASET_ID, DEFAULT_SUBSETS, NiahParams, extra_params_spec, parse_params
from .prompts import DEFAULT_SYSTEM_PROMPT, DEFAULT_USER_TEMPLATE, PromptSpec
from .results import (
    CELLS_FILE,
    RESULTS_FILE,
    SUMMARY_FILE,
    SampleResult,
    write_cells_csv,
    write_results,
    write_summary_json,
)
from .samples import GridCell, SamplePlan, SubsetSampler, grid
from .scoring import (
    absent_control_score,
    keyword_score,
    levenshtein_score,
    multi_retrieval_scores,
    rule_is_certain,
    rule_scores,
    strip_reasoning,
)
from .stats import effective_context_length, summarize_cells, summarize_subsets
from .tokenization import load_tokenizer

logger = logging.getLogger(__name__)

BENCHMARK_NAME = 'needle_haystack'
# Part of EvalScope's cache identity: bump it whenever haystacks, prompts or scoring change, so a cached run of
# another version (or of the built-in, v1.1) is never mixed with ours.
EVALUATION_VERSION = 'v3.1'  # v3.1: controls start with their needle prompts; drawn facts per depth, not per length
ELIDED_PROMPT = '<haystack elided: stored once, in predictions/>'
# The dataset holds this until a sample's turn comes: haystacks are built at inference and dropped after it, so
# memory grows with the requests in flight, not with the grid (a 10 x 10 grid of 1M-token prompts is ~400 MB).
PENDING_PROMPT = '<haystack built when this sample is sent>'
_HUB_ID = re.compile(r'[\w.-]+/[\w.-]+')
_BUILTIN_MODULE = 'evalscope.benchmarks.needle_haystack.needle_haystack_adapter'

# ---- reliability defaults (README: Guarantees) -------------------------------------------------------------------
# EvalScope retries only calls that raise. A 200 reply without text, or one cut by the token limit, reaches the
# scorer as an answer and would score 0, so the adapter looks at every reply and calls again, at most this often.
REPLY_ATTEMPTS = 3
# Sleep REPLY_BACKOFF_S * n after the n-th discarded reply: short, the server answered, it is not rate limiting.
REPLY_BACKOFF_S = 1.0
# Per-request timeout when generation_config.timeout is unset (the openai SDK would wait 600 s, then retry twice,
# inside each of EvalScope's 5 attempts). A queued request looks like a hung one to the client, so the timeout
# grows with the prompt tokens in flight: all concurrent requests at a pessimistic 500 tokens/s, at least 120 s.
MIN_TIMEOUT_S = 120.0
PROMPT_TOKENS_PER_S = 500.0
# Judge prompts are short (question, reference, answer); a judge's reasoning can still take minutes.
JUDGE_TIMEOUT_S = 300.0
# A reply cut by the token limit whose rule recall reaches this (the rule's "certain pass" bound) already holds
# every needle fact: the rest could not make it wrong, so it is scored (and flagged). Below it, it is a budget failure.
COMPLETE_RECALL = 0.9
_MAX_ERROR_CHARS = 500

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
        # EvalScope hands over every spec value, defaults included; keep only what the user changed, so an alias
        # (min_context) is not taken to contradict its canonical parameter's default (context_lengths_min).
        defaults = NiahParams()
        values = {
            key: value
            for key, value in self.extra_params.items()
            if value is not None and not (key in NiahParams.model_fields and value == getattr(defaults, key))
        }
        self.params = parse_params(values)
        self._results: dict[str, list[SampleResult]] = {}
        # Samples that raised after every retry, per subset (worker threads append: hence the lock).
        self._errors: dict[str, list[SampleResult]] = defaultdict(list)
        self._errors_lock = threading.Lock()
        self._report_dir: str | None = None
        self._outputs_written = False
        self._samplers: dict[str, SubsetSampler] = {}  # filled by load()
        self._expected_cells: dict[str, dict[int, tuple]] = {}  # subset -> sample id -> cell coordinates

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
        for subset in subsets:
            cells = grid(self.params, [subset.name])
            needed = self._cells_after_limit(cells)
            sampler = SubsetSampler(
                subset=subset,
                corpus=load_corpus(corpus_dir, subset),
                tokenizer=tokenizer,
                prompt=prompt,
                max_context_length=max(cell.context_length for cell in needed),
                params=self.params,
            )
            sampler.check_lengths(needed)
            self._samplers[subset.name] = sampler
            # Records are cheap cell descriptions; samples are plans; haystacks are built at inference.
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
            # Cached predictions are matched by position; these labels let reviews reject another grid's rows.
            self._expected_cells[subset.name] = {
                sample.id: _cell_of(sample.metadata) for sample in datasets[subset.name]
            }
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
        plan = self._samplers[record['subset']].plan(GridCell(**record))
        return Sample(input=self._messages(PENDING_PROMPT), target=plan.reference_answer, metadata=_plan_metadata(plan))

    def _messages(self, user_prompt: str) -> list[Any]:
        messages: list[Any] = [ChatMessageUser(content=user_prompt)]
        if self.system_prompt:
            messages.insert(0, ChatMessageSystem(content=self.system_prompt))
        return messages

    def _build_input(self, sample: Sample) -> None:
        """Build the haystack of a sample about to be sent; measured values join its metadata."""
        metadata = sample.metadata
        sampler = self._samplers[metadata['subset']]
        built = sampler.build(sampler.plan(_cell_from(metadata)))
        sample.input = self._messages(built.user_prompt)
        # The haystack stays out of metadata: it is stored once, in the prediction's messages.
        record = built.to_record()
        del record['messages']
        metadata.update(record)

    # ---- inference: retries EvalScope does not do, and a record of what still fails -----------------------------

    def _on_inference(self, model: Model, sample: Sample) -> Any:
        if self._task_config is not None and self._task_config.agent_config is not None:
            return super()._on_inference(model, sample)
        config = model_call_config(model.config, sample.metadata.get('context_length'))
        return generate_checked(
            lambda: model.generate(input=sample.input, tools=sample.tools, config=config),
            what='model',
            max_tokens=model.config.max_tokens,
        )

    def run_inference(self, model: Model, sample: Sample, output_dir: str, **kwargs: Any) -> TaskState:
        # reports/<model_id> is the sibling of predictions/<model_id>; kept for runs where every sample errors.
        self._report_dir = os.path.join(
            os.path.dirname(os.path.dirname(output_dir)), 'reports', os.path.basename(output_dir)
        )
        try:
            self._build_input(sample)
            return super().run_inference(model, sample, output_dir, **kwargs)
        except Exception as exc:
            # EvalScope writes no row for it (so --use-cache retries it), and with ignore_errors only counts it.
            self._record_error(sample.metadata, exc)
            raise
        finally:
            sample.input = self._messages(PENDING_PROMPT)  # the prediction row keeps the prompt; free it here

    def _record_error(self, metadata: dict[str, Any], exc: Exception) -> None:
        message = f'{type(exc).__name__}: {exc}'
        result = SampleResult(
            subset=metadata['subset'],
            context_length=int(metadata['context_length']),
            depth_percent=_depth(metadata),
            control=bool(metadata.get('control')),
            accuracy=None,
            rule_recall=None,
            levenshtein=None,
            judge_accuracy=None,
            judge_status='not_called',
            error=message[:_MAX_ERROR_CHARS],
        )
        with self._errors_lock:
            self._errors[result.subset].append(result)

    def init_llm_judges(self) -> list[Any]:
        judges = super().init_llm_judges()
        for judge in judges:
            # Same reply checks as the model. The executor turns a raise into a transport failure, so a judge
            # that stays empty or is cut falls back to the rule score (degraded, counted), never to a cut verdict.
            judge.generate = functools.partial(_judge_generate, judge)
        return judges

    # ---- scoring ---------------------------------------------------------------------------------------------

    def calculate_metrics(self, task_state: TaskState) -> SampleScore:
        self._check_cached_cell(task_state)
        # The prediction row (with the prompt) is already written; the review row need not repeat the haystack.
        task_state.messages = [
            message.model_copy(update={'content': ELIDED_PROMPT}) if message.role == 'user' else message
            for message in task_state.messages
        ]
        try:
            budget = budget_failure(task_state.output)
            if budget is None:
                return super().calculate_metrics(task_state)
            if budget == 'token limit' and self._answer_complete(task_state):
                # Models often answer, then ramble into the limit: the answer is there, judge it, count the cut.
                sample_score = super().calculate_metrics(task_state)
                sample_score.score.metadata = {**(sample_score.score.metadata or {}), 'budget_exhausted': True}
                return sample_score
            return self._budget_score(task_state, budget)
        except Exception as exc:  # the prediction is saved: --use-cache re-reviews it
            self._record_error(task_state.metadata, exc)
            raise

    def _check_cached_cell(self, task_state: TaskState) -> None:
        """A prediction cached for another grid (reused through --use-cache with --rerun-review) must not be
        reported under this grid's cells: EvalScope matches cached rows to samples by position only."""
        metadata = task_state.metadata
        expected = self._expected_cells.get(metadata.get('subset'), {}).get(task_state.sample_id)
        if expected is not None and _cell_of(metadata) != expected:
            raise NiahConfigError(
                'use_cache',
                f'the cached prediction of {metadata["subset"]} sample {task_state.sample_id} was made for cell '
                f'{_describe_cell(_cell_of(metadata))}, but this grid puts {_describe_cell(expected)} there. Run '
                'with the cached extra_params, or without --use-cache',
            )

    def _answer_complete(self, task_state: TaskState) -> bool:
        prediction = task_state.output.completion
        filtered = self.filter_prediction(prediction, task_state)
        rule = self.match_score(prediction, filtered, task_state.target, task_state)
        return rule.value.get('rule_recall', rule.value['acc']) >= COMPLETE_RECALL

    def _budget_score(self, task_state: TaskState, reason: str) -> SampleScore:
        # Excluded with no value, and never judged: the answer may have come after the cut, so a 0 would be a guess.
        prediction = task_state.output.completion
        score = Score(
            value={},
            main_score_name='acc',
            status=ScoreStatus.EXCLUDED,
            prediction=prediction,
            extracted_prediction=strip_reasoning(prediction),
            explanation=f'reply cut: {reason}',
            metadata={'source': 'budget', 'budget_exhausted': True, 'stop_reason': task_state.output.stop_reason},
        )
        return SampleScore(
            score=score,
            sample_id=task_state.sample_id,
            group_id=task_state.group_id,
            generation_index=(task_state.sample_id % self.repeats) if self.repeats > 1 else 0,
            sample_metadata=task_state.metadata,
        )

    def match_score(
        self, original_prediction: str, filtered_prediction: str, reference: str, task_state: TaskState
    ) -> Score:
        return Score(
            value=task_rule_values(filtered_prediction, task_state.metadata),
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
        if metadata.get('control') or metadata.get('task', 'single') != 'single':
            # Abstention, magic numbers and the chain's keyword are checked exactly; a judge would only add noise.
            return JudgeDefinition.skip(rule, reason='scored by rule: exact for this task')
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
        # Control cells measure guessing, not retrieval: they stay out of accuracy and get their own metrics.
        needle_scores = [score for score in sample_scores if not (score.sample_metadata or {}).get('control')]
        aggregates = super().aggregate_scores(needle_scores) if needle_scores else []
        for aggregate in aggregates:
            aggregate.dimensions = {**aggregate.dimensions, 'scope': 'overall'}
        cells: dict[tuple[int, float], list[SampleScore]] = defaultdict(list)
        for sample_score in needle_scores:
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
        subsets = {result.subset for result in results}  # one, when EvalScope aggregates a subset
        for subset in subsets:
            self._results[subset] = [result for result in results if result.subset == subset]
        # Samples that errored this run have no SampleScore; count them beside the scored ones.
        errors = [error for subset in sorted(subsets) for error in self._errors.get(subset, [])]
        needle_results = [result for result in results + errors if not result.control]
        for subset in sorted(subsets):
            effective = effective_context_length(
                needle_results,
                subset=subset,
                threshold=self.params.effective_length_threshold,
                mode=self.params.effective_length_mode,
            )
            if effective.per_length:
                # 0 when even the shortest length falls below the threshold.
                aggregates.append(
                    AggScore(
                        score=float(effective.length or 0),
                        metric_name='effective_context_length',
                        dimensions={'scope': 'overall'},
                        num=sum(item.n for item in effective.per_length),
                        ids=[],
                    )
                )
        control_results = [result for result in results if result.control]
        if control_results:
            for name, values in (
                ('absent_abstention_rate', [result.accuracy for result in control_results]),
                ('absent_guess_rate', [float(bool(result.guessed)) for result in control_results]),
            ):
                scored = [value for value in values if value is not None]
                if scored:
                    aggregates.append(
                        AggScore(
                            score=sum(scored) / len(scored),
                            metric_name=name,
                            dimensions={'scope': 'overall'},
                            num=len(scored),
                            ids=[],
                        )
                    )
        for summary in summarize_subsets(needle_results):
            # Errors and budget failures as shares of every sample of the subset (count * share = exact count):
            # EvalScope's overall row is the sample-weighted mean of the subset rows, right for shares only.
            total = sum(result.subset == summary.subset for result in needle_results)
            extra = {
                'judge_rule_agreement': (summary.agreement.share_agree, summary.n),
                'judge_rule_kappa': (summary.agreement.kappa, summary.n),
                'judge_failures': (float(summary.judge_failures), summary.n),
                'inference_error_rate': (summary.errors / total, total),
                'budget_exhausted_rate': (summary.budget_exhausted / total, total),
            }
            for name, (value, num) in extra.items():
                if value is not None:
                    aggregates.append(
                        AggScore(score=value, metric_name=name, dimensions={'scope': 'overall'}, num=num, ids=[])
                    )
        return aggregates

    def _on_generate_report_end(self, report: Any, output_dir: str, **kwargs: Any) -> None:
        self._write_outputs(output_dir, plot=True)

    def finalize(self, *args: Any, **kwargs: Any) -> None:
        # With ignore_errors and every sample errored, EvalScope builds no report and never calls the hook above;
        # the errors must still reach the results file. (Without ignore_errors the run raised: nothing to write.)
        ignore_errors = self._task_config is not None and self._task_config.ignore_errors
        if ignore_errors and self._errors and not self._outputs_written and self._report_dir is not None:
            self._write_outputs(self._report_dir, plot=False)
        super().finalize(*args, **kwargs)

    def _write_outputs(self, output_dir: str, *, plot: bool) -> None:
        from .plotting import plot_all

        subsets = sorted(set(self._results) | set(self._errors))
        results = [result for subset in subsets for result in [*self._results.get(subset, []), *self._errors[subset]]]
        if not results:
            return
        # Grid order, not the order replies came back in: files of two runs of one grid line up.
        results.sort(key=lambda r: (r.subset, r.context_length, r.depth_percent is None, r.depth_percent or 0.0))
        self._outputs_written = True
        write_results(os.path.join(output_dir, RESULTS_FILE), results)
        cells = summarize_cells(results)
        write_cells_csv(os.path.join(output_dir, CELLS_FILE), cells)
        threshold, mode = self.params.effective_length_threshold, self.params.effective_length_mode
        write_summary_json(os.path.join(output_dir, SUMMARY_FILE), results, threshold=threshold, mode=mode)
        write_opencompass_summaries(output_dir, cells, model=os.path.basename(os.path.normpath(output_dir)))
        if not plot:
            return
        effective = {
            subset: effective_context_length(results, subset=subset, threshold=threshold, mode=mode).length
            for subset in subsets
        }
        try:
            paths = plot_all(
                cells, output_dir=output_dir, show_score=self.params.show_score, effective_lengths=effective
            )
            logger.info('needle_haystack heatmaps: %s', ', '.join(str(path) for path in paths))
        except Exception:  # plotting must not lose the scores, but it must not be silent either
            logger.exception('needle_haystack: drawing heatmaps failed; redraw with `evalscope-niah plot`')


def _depth(metadata: dict[str, Any]) -> float | None:
    depth = metadata.get('depth_percent')
    return None if depth is None else float(depth)


def _cell_from(metadata: dict[str, Any]) -> GridCell:
    return GridCell(
        subset=metadata['subset'],
        context_length=int(metadata['context_length']),
        depth_percent=_depth(metadata),
        repeat=int(metadata.get('repeat', 0)),
        draw=int(metadata.get('draw', 0)),
    )


def _cell_of(metadata: dict[str, Any]) -> tuple:
    cell = _cell_from(metadata)
    return cell.context_length, cell.depth_percent, cell.repeat, cell.draw


def _describe_cell(cell: tuple) -> str:
    length, depth, repeat, draw = cell
    where = 'the needle-absent control' if depth is None else f'depth {depth}%'
    return f'(length {length}, {where}, repeat {repeat}, draw {draw})'


def _plan_metadata(plan: SamplePlan) -> dict[str, Any]:
    """What scoring, reports and the request order need, known before the haystack exists."""
    cell = plan.cell
    return {
        'subset': cell.subset,
        'language': plan.language,
        'task': plan.task,
        'context_length': cell.context_length,
        'depth_percent': cell.depth_percent,
        'repeat': cell.repeat,
        'draw': cell.draw,
        'control': cell.control,
        'needles': list(plan.needles),
        'question': plan.question,
        'reference_answer': plan.reference_answer,
        'answer_keys': list(plan.answer_keys),
        'start_token': plan.start_token,
        'divergence_token': plan.divergence_token,
    }


def task_rule_values(answer: str, metadata: dict[str, Any]) -> dict[str, float]:
    """Rule scores of one reply for its task; 'acc' is the one that counts."""
    final = strip_reasoning(answer)
    language, keys = metadata['language'], metadata.get('answer_keys') or []
    if metadata.get('control'):
        control = absent_control_score(final, language=language, needle_answers=keys)
        return {'acc': control.score, 'abstained': float(control.abstained), 'guessed': float(control.guessed)}
    task = metadata.get('task', 'single')
    if task == 'multi_retrieval':
        scores = multi_retrieval_scores(final, values=keys)
        return {
            'acc': scores.f1,
            'rule_recall': scores.recall,
            'precision': scores.precision,
            'levenshtein': levenshtein_score(final, metadata['reference_answer']),
        }
    if task == 'reasoning':
        score = keyword_score(final, keyword=keys[0], reference=metadata['reference_answer'])
        return {
            'acc': score,
            'rule_recall': 1.0 if score == 1.0 else 0.0,
            'levenshtein': levenshtein_score(final, metadata['reference_answer']),
        }
    scores = rule_scores(final, needles=metadata['needles'], question=metadata['question'], language=language)
    return {'acc': scores.recall, 'rule_recall': scores.recall, 'levenshtein': scores.levenshtein}


def _rule_values(rule: Score) -> dict[str, float]:
    return {'rule_recall': rule.value['rule_recall'], 'levenshtein': rule.value['levenshtein']}


def _sample_result(sample_score: SampleScore) -> SampleResult:
    score = sample_score.score
    metadata = sample_score.sample_metadata or {}
    value = score.value or {}
    judged = bool((score.metadata or {}).get('judge_attempts'))
    judge_ok = judged and score.status == ScoreStatus.SUCCESS and 'judge_accuracy' in value
    control = bool(metadata.get('control'))
    return SampleResult(
        subset=metadata['subset'],
        context_length=int(metadata['context_length']),
        depth_percent=_depth(metadata),
        control=control,
        guessed=bool(value['guessed']) if control and 'guessed' in value else None,
        precision=value.get('precision'),
        accuracy=value.get('acc'),
        rule_recall=value.get('rule_recall'),
        levenshtein=value.get('levenshtein'),
        judge_accuracy=value.get('judge_accuracy') if judge_ok else None,
        judge_status='ok' if judge_ok else ('failed' if judged else 'not_called'),
        budget_exhausted=bool((score.metadata or {}).get('budget_exhausted')),
    )


# ---- reply checks and retries (model and judge) -------------------------------------------------------------------


class EmptyReplyError(RuntimeError):
    """The server kept answering 200 with no text: a server fault, not an answer."""


class CutReplyError(RuntimeError):
    """A judge reply cut by the token limit: its verdict cannot be trusted."""


def budget_failure(output: ModelOutput | None) -> str | None:
    """Why a reply ran out of room ('token limit', 'context window'), or None."""
    if output is None or output.empty:
        return None
    if output.stop_reason == 'max_tokens':
        return 'token limit'  # includes a reasoning model stopped inside its <think> block
    if output.stop_reason == 'model_length':
        return 'context window'  # EvalScope's reply to a context-overflow 400 (its content is the error text)
    return None


def reply_is_empty(output: ModelOutput) -> bool:
    """No choice, or a choice with neither text, reasoning nor tool call."""
    if output.empty:
        return True
    message = output.message
    if message.tool_calls:
        return False
    if isinstance(message.content, str):
        return not message.content.strip()
    for part in message.content:
        text = getattr(part, 'text', None) if part.type == 'text' else getattr(part, 'reasoning', None)
        if part.type not in ('text', 'reasoning') or (text or '').strip():
            return False
    return True


def generate_checked(call: Callable[[], ModelOutput], *, what: str, max_tokens: int | None = None) -> ModelOutput:
    """Call until the reply is usable, at most REPLY_ATTEMPTS times.

    Empty replies are retried; if every reply is empty, EmptyReplyError (the sample errors, it is not scored).
    A reply cut by the token limit is returned as is when it used the whole `max_tokens` budget (the same call would
    be cut again); otherwise (no budget set, or cut short of it: a server fault) it is retried once. The scorer then
    decides between a score and a budget failure. A context overflow is returned at once: it would overflow again.
    Transport errors never reach here: EvalScope has retried them already.
    """
    discarded: list[str] = []
    for attempt in range(1, REPLY_ATTEMPTS + 1):
        output = call()
        last = attempt == REPLY_ATTEMPTS
        if reply_is_empty(output):
            if last:
                raise EmptyReplyError(f'{what} reply {attempt} of {attempt} is empty (discarded before: {discarded})')
            problem = 'empty'
        elif (
            output.stop_reason == 'max_tokens'
            and not last
            and 'max_tokens' not in discarded
            and not _used_budget(output, max_tokens)
        ):
            problem = 'max_tokens'
        else:
            if discarded:  # kept in the prediction row: the retries stay visible
                output.metadata = {**(output.metadata or {}), 'niah_discarded_replies': discarded}
            return output
        discarded.append(problem)
        logger.warning('needle_haystack: %s reply %d discarded (%s); calling again', what, attempt, problem)
        time.sleep(REPLY_BACKOFF_S * attempt)
    raise AssertionError('unreachable')


def _used_budget(output: ModelOutput, max_tokens: int | None) -> bool:
    usage = output.usage
    return max_tokens is not None and usage is not None and usage.output_tokens >= max_tokens


def model_call_config(config: GenerateConfig, context_length: int | None) -> GenerateConfig | None:
    """Per-call overrides: a timeout sized to the prompt when the user set none (merged over theirs)."""
    if config.timeout is not None or not context_length:
        return None
    in_flight = max(1, config.batch_size or 1) * int(context_length)
    return GenerateConfig(timeout=max(MIN_TIMEOUT_S, in_flight / PROMPT_TOKENS_PER_S))


def _judge_generate(judge: Any, messages: list[Any]) -> ModelOutput:
    model = judge.model
    config = None if model.config.timeout is not None else GenerateConfig(timeout=JUDGE_TIMEOUT_S)
    output = generate_checked(
        lambda: model.generate(messages, config=config), what='judge', max_tokens=model.config.max_tokens
    )
    reason = budget_failure(output)
    if reason is not None:
        raise CutReplyError(f'judge reply cut by its {reason}; raise judge generation_config.max_tokens')
    return output


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


class NiahEvaluator(DefaultEvaluator):
    """EvalScope's evaluator, with reviews that survive a crash.

    A fresh run writes reviews to a temporary file that EvalScope publishes only when the run ends, so after a
    kill -9 every finished review was lost and re-judged on resume. A fresh run has no old reviews to protect:
    publish the (empty) files at once, so each review is appended where --use-cache will find it.
    """

    def _collect_work_items(self, dataset_dict):
        context = super()._collect_work_items(dataset_dict)
        if not self.use_cache:
            self.cache_manager.commit_review_reruns()
        # Prompts sharing a haystack start share text up to their needle: ordered so that a server with automatic
        # prefix caching (vLLM) reuses the most (see ordering.py). Reviews of cached predictions make no model call
        # and go first. The pool submits in list order.
        reviews = [item for item in context.work_items if item.sample is None]
        predictions = [item for item in context.work_items if item.sample is not None]
        if self.benchmark.params.request_order == 'prefix':
            predictions = prefix_friendly_order(predictions, info=_prefix_info)
        context.work_items[:] = reviews + predictions
        return context


def _prefix_info(item: Any) -> PrefixInfo:
    metadata = item.sample.metadata
    return PrefixInfo(
        group=(metadata['subset'], metadata['start_token']),
        context_length=metadata['context_length'],
        divergence_token=metadata['divergence_token'],
        prompt_tokens=metadata['context_length'],
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
        EVALUATOR_REGISTRY[BENCHMARK_NAME] = NiahEvaluator
        return meta


_autoload.finish_pending()  # registration requested while this module was still importing evalscope
