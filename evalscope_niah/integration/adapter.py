"""EvalScope's hooks for needle in a haystack. Each hook delegates: samples to ``samples``, the window check to
``window_check``, one sample's review and rule score to ``review`` (and the task types), the judge to
``judge_workflow``, reply checks to ``replies``, scores read back to ``sample_results``, metrics to
``run_metrics``, files to ``outputs``."""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from evalscope.api.benchmark import DefaultDataAdapter
from evalscope.api.dataset import DatasetDict, Sample, build_dataset_from_records
from evalscope.api.evaluator import TaskState
from evalscope.api.judge import JudgeContext, JudgeDefinition
from evalscope.api.messages import ChatMessageSystem, ChatMessageUser
from evalscope.api.metric import AggScore, SampleScore, Score
from evalscope.api.model import Model
from evalscope.constants import JudgeStrategy, ScoringPolicy

from ..errors import NiahConfigError
from ..escaping import inert_logger
from ..making.prompts import PromptSpec
from ..making.samples import subset_samplers
from ..making.tokenization import SERVER_TOKENIZER
from ..metadata import GridCell, SampleMeta
from ..params.run_params import NiahParams
from ..reporting.no_answer import no_answer_message
from ..reporting.outputs import OutputFiles, write_run_outputs
from ..reporting.result_files import subset_effective
from ..reporting.run_metrics import judge_failure_message, served_drift_message, subset_metrics
from ..reporting.sweep_plan import untested_lengths
from ..scoring import PromptText, strip_reasoning
from ..serving.prefix_gate import PlannedPrompt, PrefixGate
from ..serving.routing import routing_headers, routing_key
from ..tasks import task_for
from ..tasks.compose import effective_length_mode, parse_params
from .interrupt import install_deadline
from .invocation import refusal_ends_cli_run
from .judge_check import qualify_judges
from .judge_workflow import judge_workflow
from .live_pages import LivePages
from .metric_display import declare_metric_semantics, fix_overall_rows
from .replies import budget_failure, generate_checked, judge_generate, model_call_config, no_final_answer
from .resume_cache import refuse_mixed_inputs, refuse_old_folder_name, refuse_other_model_id, set_aside_torn_rows
from .review import SampleReview, excluded_score, review_of, reviewing, rule_score, served_values
from .run_state import RunPlan, RunTally
from .safe_paths import claim_safe_model_id
from .score_rows import error_result, sample_result, score_meta
from .secrets import redacting, run_redactor
from .window_check import check_model_window, model_endpoint

__all__ = ['ELIDED_HAYSTACK', 'PENDING_PROMPT', 'NiahAdapter']

logger = inert_logger(__name__)

# Reviews (what EvalScope's dashboard shows) keep the instruction and the question; only the haystack is replaced.
# The prediction row keeps the whole prompt, once.
ELIDED_HAYSTACK = '<haystack elided: stored once, in predictions/>'
# The dataset holds this until a sample's turn comes: haystacks are built at inference and dropped after it, so
# memory grows with the requests in flight, not with the grid (a 10 x 10 grid of 1M-token prompts is ~400 MB).
PENDING_PROMPT = '<haystack built when this sample is sent>'


class NiahAdapter(LivePages, DefaultDataAdapter):
    """EvalScope hooks for needle-in-a-haystack: load samples, score, aggregate cells, draw heatmaps."""

    scoring_policy = ScoringPolicy.JUDGE_DEFAULT

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Made before the evaluator, which builds its folders from the id: the id becomes one safe folder name here.
        model_id = claim_safe_model_id(self._task_config)
        # EvalScope hands over every spec value, defaults included: the user's own dict is what gets validated.
        given = self._task_config.dataset_args.get(self.name, {}).get('extra_params') if self._task_config else None
        with refusal_ends_cli_run():  # under `evalscope eval`: one line, not a traceback
            params = parse_params(self.extra_params, user_given=given)
            # Refused here, before EvalScope encodes the template to hash the run's config.
            prompt = PromptSpec(system_prompt=self.system_prompt or '', user_template=self.prompt_template)
            refuse_other_model_id(self._task_config, model_id, self.name)  # before EvalScope's identity check
        # What this run is (its subsets join at the end of load) and what it gathers: see run_state.py.
        self._plan = RunPlan(
            params=params,
            prompt=prompt,
            pending_messages=tuple(prompt.chat(PENDING_PROMPT)),
            model_id=model_id,
            redactor=run_redactor(self._task_config),  # EvalScope's log lines are redacted from here on too
        )
        self._tally = RunTally(
            server=(self._task_config.api_url or '') if self._task_config is not None else '',
            prefix_gate=PrefixGate(on_hold=_log_hold) if params.request_order != 'grid' else None,
        )

    @property
    def params(self) -> NiahParams:
        """The run's parameters (read by the evaluator and the adaptive rounds too)."""
        return self._plan.params

    # ---- judge configuration --------------------------------------------------------------------------------

    def validate_judge_strategy(self) -> None:
        if (
            self._task_config is not None
            and self.judge_strategy == JudgeStrategy.AUTO
            and not self._judge_config.models
        ):
            with refusal_ends_cli_run():  # under `evalscope eval`: one line, not a traceback
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
        endpoint = model_endpoint(self._task_config, model_id=self._plan.model_id)
        samplers = subset_samplers(
            self.params,
            corpus_source=self.dataset_id,
            subsets=self.subset_list,
            prompt=self._plan.prompt,
            limit=self.limit,
            shuffle=self.shuffle,
            endpoint=endpoint,
        )
        check_model_window(self._task_config, self.params, endpoint, samplers)
        tokenizer = samplers[0][0].tokenizer if samplers else None
        if getattr(tokenizer, 'calls', None) is not None:
            logger.info('needle_haystack: %d tokenize calls to the model server so far', tokenizer.calls)
        by_subset = {sampler.subset.name: sampler for sampler, _ in samplers}
        datasets, expected_cells = {}, {}
        for name, sampler in by_subset.items():
            # Records are cheap cell descriptions; samples are plans; haystacks are built at inference.
            datasets[name] = build_dataset_from_records(
                [vars(cell) for cell in sampler.grid_cells],
                functools.partial(self.record_to_sample, sampler=sampler),
                name=name,
                location=self.dataset_id,
                limit=self.limit,
                repeats=self.repeats,
                shuffle=self.shuffle,
                seed=self.seed,
            )
            # Cached predictions are matched by position; these cells let reviews reject another grid's rows.
            expected_cells[name] = {sample.id: SampleMeta.from_dict(sample.metadata).cell for sample in datasets[name]}
        # Before any model or judge request: a resume whose cached predictions were made from other inputs stops.
        refuse_old_folder_name(self._task_config, self._plan.model_id)
        set_aside_torn_rows(self._task_config, self.name, datasets)  # first: a killed run's torn last lines
        refuse_mixed_inputs(self._task_config, self.name, datasets, by_subset, self._plan.prompt)
        judge_check = self._qualify_judges(samplers)
        # The run's plan, in one place: every hook after load() reads it, none changes it.
        self._plan = self._plan.loaded(samplers=by_subset, expected_cells=expected_cells, judge_check=judge_check)
        return DatasetDict(datasets), None

    def _qualify_judges(self, samplers: list[Any]) -> dict[str, Any]:
        """Before any model request: the judge grades calibration answers built from each judged subset's needle."""
        if self.judge_strategy == JudgeStrategy.RULE or self.params.judge_check == 'off':
            return {}
        plans = [
            sampler.plan(next(cell for cell in cells if not cell.control))
            for sampler, cells in samplers
            if sampler.task.judged and any(not cell.control for cell in cells)
        ]
        if not plans:
            return {}
        return qualify_judges(self.init_llm_judges(), plans, mode=self.params.judge_check)

    def record_to_sample(self, record: dict[str, Any], sampler: Any = None) -> Sample:
        # load() passes the subset's sampler: the run's plan is set only once every dataset is built.
        plan = (sampler or self._plan.samplers[record['subset']]).plan(GridCell(**record))
        return Sample(
            input=self._messages(self._plan.pending_messages),
            target=plan.reference_answer,
            metadata=plan.meta.to_dict(),
        )

    @staticmethod
    def _messages(messages: Iterable[Mapping[str, str]]) -> list[Any]:
        kinds = {'system': ChatMessageSystem, 'user': ChatMessageUser}
        return [kinds[message['role']](content=message['content']) for message in messages]

    def _build_input(self, sample: Sample) -> None:
        """Build the haystack of a sample about to be sent; measured values join its metadata."""
        meta = SampleMeta.from_dict(sample.metadata)
        sampler = self._plan.samplers[meta.subset]
        built = sampler.build(sampler.plan(meta.cell))
        sample.input = self._messages(built.messages())
        # The haystack stays out of metadata: it is stored once, in the prediction's messages.
        sample.metadata.update(built.meta.to_dict())

    # ---- inference: retries EvalScope does not do, and a record of what still fails -----------------------------

    def _on_inference(self, model: Model, sample: Sample) -> Any:
        if self._task_config is not None and self._task_config.agent_config is not None:
            return super()._on_inference(model, sample)
        meta = SampleMeta.from_dict(sample.metadata)
        key = routing_headers(self.params.routing_key_header, routing_key(meta.subset, meta.start_token))
        config = model_call_config(model.config, meta.context_length, headers=key)
        generate = redacting(model.generate, self._plan.redactor)
        with self._prefix_turn(meta, sample):
            return generate_checked(
                lambda: generate(input=sample.input, tools=sample.tools, config=config),
                what='model',
                max_tokens=model.config.max_tokens,
            )

    def plan_prefix_turns(self, samples: list[Sample]) -> None:
        """The samples about to be sent, in send order (the evaluator's): the gate holds deep prompts back by it."""
        if self._tally.prefix_gate is not None:
            self._tally.prefix_gate.plan(_planned_prompt(sample) for sample in samples)

    def _prefix_turn(self, meta: SampleMeta, sample: Sample) -> AbstractContextManager[None]:
        gate = self._tally.prefix_gate
        return nullcontext() if gate is None else gate.turn(_prefix_key(meta, sample))

    def run_inference(self, model: Model, sample: Sample, output_dir: str, **kwargs: Any) -> TaskState:
        self._tally.asked(sample.id, SampleMeta.from_dict(sample.metadata), prediction_dir=output_dir)
        try:
            self._build_input(sample)
            return super().run_inference(model, sample, output_dir, **kwargs)
        except Exception as exc:
            # EvalScope writes no row for it (so --use-cache retries it), and with ignore_errors only counts it.
            self._record_error(SampleMeta.from_dict(sample.metadata), exc, sample.id)
            raise
        finally:
            if self._tally.prefix_gate is not None:  # failed before its turn (the haystack): nobody waits for it
                self._tally.prefix_gate.abandon(_prefix_key(SampleMeta.from_dict(sample.metadata), sample))
            # The prediction row keeps the prompt: free it here.
            sample.input = self._messages(self._plan.pending_messages)

    def _record_error(self, meta: SampleMeta, exc: Exception, sample_id: Any) -> None:
        self._plan.redactor.exception(exc)  # in place: EvalScope logs the same exception after us
        self._tally.errored(sample_id, error_result(meta, f'{type(exc).__name__}: {exc}'))

    @property
    def tally(self) -> RunTally:
        """What the run has gathered so far; the adaptive rounds add their plan and forget retried errors in it."""
        return self._tally

    def init_llm_judges(self) -> list[Any]:
        judges = super().init_llm_judges()
        for judge in judges:
            # Same reply checks as the model. The executor turns a raise into a transport failure, so a judge
            # that stays empty or is cut falls back to the rule score (degraded, counted), never to a cut verdict.
            judge.model.generate = redacting(judge.model.generate, self._plan.redactor)
            # The run's reply cap on the judge's client now: the judge check calls it before the run does.
            install_deadline(judge.model, max_reply_bytes=self.params.max_reply_bytes)
            judge.generate = redacting(functools.partial(judge_generate, judge), self._plan.redactor)
        return judges

    # ---- scoring ---------------------------------------------------------------------------------------------

    def calculate_metrics(self, task_state: TaskState) -> SampleScore:
        meta = SampleMeta.from_dict(task_state.metadata)
        self._check_cached_cell(task_state, meta)
        output = task_state.output
        completion = '' if output is None or output.empty else output.completion
        review = SampleReview(task_state, prompt=self._prompt_text(task_state), final=strip_reasoning(completion))
        with reviewing(review):  # the hooks EvalScope calls inside (filter, match, judge) read it: see review.py
            return self._calculate_metrics(task_state, meta, review)

    def filter_prediction(self, prediction: str, task_state: TaskState) -> str:
        # The final answer (reasoning stripped) is what the rules and the judge read.
        review = review_of(task_state)
        return super().filter_prediction(review.final if review else strip_reasoning(prediction), task_state)

    def _prompt_text(self, task_state: TaskState) -> PromptText | None:
        spec = self._plan.prompt
        shown = '\n'.join(message.text for message in task_state.messages if message.role in ('system', 'user'))
        if ELIDED_HAYSTACK in shown:
            return None  # a review row without its haystack: no evidence, the scorers fall back to a length bound
        return PromptText(shown=shown, template=(spec.system_prompt, spec.user_template))

    def _calculate_metrics(self, task_state: TaskState, meta: SampleMeta, review: SampleReview) -> SampleScore:
        # The prediction row (with the prompt) is already written; the review keeps what was asked, not the haystack.
        task_state.messages = [
            message.model_copy(update={'content': self._elided_prompt(meta)}) if message.role == 'user' else message
            for message in task_state.messages
        ]
        try:
            budget = budget_failure(task_state.output)
            no_answer = no_final_answer(task_state.output, review.final) if budget is None else None
            if no_answer is not None:
                # Finished, with nothing to score: flagged and left out like a cut reply, never a silent 0.
                sample_score = excluded_score(
                    task_state,
                    review.final,
                    repeats=self.repeats,
                    explanation=f'no final answer: {no_answer}',
                    metadata={'source': 'no_answer', 'no_answer': no_answer},
                )
            elif budget is None:
                sample_score = super().calculate_metrics(task_state)
            elif budget == 'token limit' and review.final:
                # A final answer had begun: it is scored as it stands (a cut answer is still an answer; leaving out
                # the cut wrong ones would raise the mean), and the cut is counted. Only a reply cut before any
                # final answer (inside its reasoning, or empty) is a budget failure.
                sample_score = super().calculate_metrics(task_state)
                sample_score.score.metadata = {**(sample_score.score.metadata or {}), 'budget_exhausted': True}
            else:
                sample_score = self._budget_score(task_state, budget, review.final)
        except Exception as exc:  # the prediction is saved: --use-cache re-reviews it
            self._record_error(meta, exc, task_state.sample_id)
            raise
        sample_score.score.metadata = {
            **(sample_score.score.metadata or {}),
            **served_values(task_state, self._tally.server_values, review.final),
        }
        return sample_score

    def _elided_prompt(self, meta: SampleMeta) -> str:
        return self._plan.prompt.user_message(context=ELIDED_HAYSTACK, question=meta.question)

    def _check_cached_cell(self, task_state: TaskState, meta: SampleMeta) -> None:
        """A prediction cached for another grid (reused through --use-cache with --rerun-review) must not be
        reported under this grid's cells: EvalScope matches cached rows to samples by position only."""
        expected = self._plan.expected_cells.get(meta.subset, {}).get(task_state.sample_id)
        if expected is not None and meta.cell != expected:
            raise NiahConfigError(
                'use_cache',
                f'the cached prediction of {meta.subset} sample {task_state.sample_id} was made for cell '
                f'{meta.cell.describe()}, but this grid puts {expected.describe()} there. Run '
                'with the cached extra_params, or without --use-cache',
            )

    def _budget_score(self, task_state: TaskState, reason: str, final: str) -> SampleScore:
        # Excluded with no value, and never judged: the answer may have come after the cut, so a 0 would be a guess.
        return excluded_score(
            task_state,
            final,
            repeats=self.repeats,
            explanation=f'reply cut: {reason}',
            metadata={'source': 'budget', 'budget_exhausted': True, 'stop_reason': task_state.output.stop_reason},
        )

    def match_score(
        self, original_prediction: str, filtered_prediction: str, reference: str, task_state: TaskState
    ) -> Score:
        return rule_score(original_prediction, filtered_prediction, task_state)[1]

    def judge_definition(self, context: JudgeContext) -> JudgeDefinition:
        meta = SampleMeta.from_dict(context.task_state.metadata)
        rule, score = rule_score(context.original_prediction, context.filtered_prediction, context.task_state)
        if not task_for(meta).is_judged(meta):
            # Abstention, magic numbers and the chain's keyword are checked exactly; a judge would only add noise.
            return JudgeDefinition.skip(score, reason='scored by rule: exact for this task')
        if meta.subset in self._plan.rule_fallback:
            score.metadata = {**(score.metadata or {}), 'scoring': 'rule_fallback'}
            return JudgeDefinition.skip(score, reason='scored by rule: the judge failed qualification')
        if self.judge_strategy == JudgeStrategy.LLM_RECALL and rule.certain:
            return JudgeDefinition.skip(score, reason='rule score is certain')
        shown = ('rule_recall', 'levenshtein', *(value.name for value in task_for(meta).reported_values))
        side_values = {name: rule.values[name] for name in shown if name in rule.values}
        return judge_workflow(meta, side_values)

    # ---- aggregation and reports -----------------------------------------------------------------------------

    def aggregate_scores(self, sample_scores: list[SampleScore]) -> list[AggScore]:
        # The report made after this reads each metric's meaning from EvalScope's catalog: declared again (per subset,
        # idempotent), since a task plugin this run loaded reports values the registration-time declaration missed.
        declare_metric_semantics((self.name,))
        # Control cells measure guessing, not retrieval: they stay out of accuracy and get their own metrics.
        needle_scores = [score for score in sample_scores if not score_meta(score).control]
        aggregates = super().aggregate_scores(needle_scores) if needle_scores else []
        for aggregate in aggregates:
            aggregate.dimensions = {**aggregate.dimensions, 'scope': 'overall'}
        aggregates += self._cell_accuracies(needle_scores)
        results = [sample_result(sample_score) for sample_score in sample_scores]
        subsets = {result.subset for result in results}  # one, when EvalScope aggregates a subset
        for subset in subsets:
            scored = zip(sample_scores, results, strict=True)
            self._tally.scored(subset, [(score.sample_id, row) for score, row in scored if row.subset == subset])
        self._tally.close_lost(subsets)  # after EvalScope's pool: a sample still open had its reply and no row
        # Samples that errored this run have no SampleScore; count them beside the scored ones.
        errors = [error for subset in sorted(subsets) for error in self._tally.errors_of(subset)]
        params = self.params
        for subset in sorted(subsets):
            for message in (
                served_drift_message(results, subset=subset, tokenizer=params.tokenizer_path),
                judge_failure_message(results, subset=subset),
                no_answer_message(results, subset=subset),
            ):
                if message:
                    logger.warning('needle_haystack: %s', message)
        threshold, mode = params.effective_length_threshold, effective_length_mode(params)
        # One bootstrap per subset: the report's effective length, which the run's files state again.
        sweep = self._tally.sweep_plan or {}  # an adaptive sweep's lengths not sent are neither passed nor failed
        found = {
            subset: subset_effective(
                [*results, *errors],
                subset=subset,
                threshold=threshold,
                mode=mode,
                untested=untested_lengths(sweep[subset]) if subset in sweep else None,
            )
            for subset in sorted({row.subset for row in [*results, *errors] if not row.control})
        }
        self._tally.effective_found(found)
        records = subset_metrics(
            results,
            errors,
            threshold=threshold,
            mode=mode,
            lengths_are_served_tokens=params.tokenizer_path == SERVER_TOKENIZER,
            effective={subset: computed.length for subset, computed in found.items()},
        )
        aggregates += [
            AggScore(
                score=record.value, metric_name=record.name, dimensions=dict(record.dimensions), num=record.n, ids=[]
            )
            for record in records
        ]
        return aggregates

    def _cell_accuracies(self, needle_scores: list[SampleScore]) -> list[AggScore]:
        cells: dict[tuple[int, float], list[SampleScore]] = defaultdict(list)
        for sample_score in needle_scores:
            meta = score_meta(sample_score)
            cells[(meta.context_length, meta.depth_percent)].append(sample_score)
        aggregates = []
        for (length, depth), cell_scores in sorted(cells.items()):
            # Per cell only accuracy: rule scores per cell live in the cells CSV and the HTML heatmap's hover.
            for aggregate in super().aggregate_scores(cell_scores):
                if aggregate.metric_name in ('acc', 'accuracy'):
                    aggregate.dimensions = {**aggregate.dimensions, 'context_length': length, 'depth_percent': depth}
                    aggregates.append(aggregate)
        return aggregates

    def _on_generate_report_end(self, report: Any, output_dir: str, **kwargs: Any) -> None:
        fix_overall_rows(report)
        if self._plan.model_id is not None:  # the folder has the safe name; the report shows the user's id, as data
            report.model_name = self._plan.model_id
        self._write_outputs(output_dir, plot=True)

    def finalize(self, *args: Any, **kwargs: Any) -> None:
        # With ignore_errors and every sample errored, EvalScope builds no report and never calls the hook above;
        # the errors must still reach the results file. (Without ignore_errors the run raised: nothing to write.)
        ignore_errors = self._task_config is not None and self._task_config.ignore_errors
        tally = self._tally
        if ignore_errors:
            tally.close_lost()
        if ignore_errors and tally.error_subsets() and not tally.has_outputs and tally.report_dir is not None:
            self._write_outputs(tally.report_dir, plot=False)
        super().finalize(*args, **kwargs)

    def _write_outputs(self, output_dir: str, *, plot: bool) -> None:
        self._tally.close_lost()  # subsets EvalScope did not aggregate: every sample of theirs ended without a score
        results = self._tally.rows()
        if not results:
            return
        self._tally.outputs_written()
        params = self.params
        write_run_outputs(
            output_dir,
            results,
            judge_check={subset: result.to_dict() for subset, result in self._plan.judge_check.items()},
            threshold=params.effective_length_threshold,
            mode=effective_length_mode(params),
            show_score=params.show_score,
            plot=plot,
            model=self._plan.model_id,
            files=OutputFiles(self.name),  # each benchmark name keeps its own files when a run has both
            known_effective=self._tally.effective(),
            **self.page_options(),
        )


def _prefix_key(meta: SampleMeta, sample: Sample) -> tuple[str, Any]:
    return (meta.subset, sample.id)  # ids are unique within a subset


def _planned_prompt(sample: Sample) -> PlannedPrompt:
    meta = SampleMeta.from_dict(sample.metadata)
    return PlannedPrompt(_prefix_key(meta, sample), meta.prefix_group, meta.divergence_token, meta.context_length)


def _log_hold(prompt: PlannedPrompt) -> None:
    logger.debug('%s waits for the prompt computing its prefix (group %s)', prompt.key, prompt.group)
