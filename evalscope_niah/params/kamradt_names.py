"""Greg Kamradt's ``LLMNeedleHaystackTester`` (LLMTest_NeedleInAHaystack) in its own meaning: its arguments, read
from its README and code, each honoured, ignored as harmless, or refused with what to write here.

Kamradt's grid names (``context_lengths_min`` ... ``document_depth_percent_interval_type``) are also EvalScope's
built-in names. A config is Kamradt's when it holds one of the names only Kamradt uses (``OWNS``); then the shared
names take his defaults (1000 to 16000 tokens in 35 lengths, 35 depths), his ``final_context_length_buffer`` (200)
and his tokenizer (tiktoken for ``gpt-3.5-turbo-0125``: cl100k_base). Without such a name they are EvalScope's.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..errors import NiahConfigError

TOOL = "Kamradt's LLMNeedleHaystackTester"
# Arguments of no consequence to what the model is sent or how it is scored: accepted and dropped.
IGNORED = {
    'print_ongoing_status': 'progress printing; EvalScope shows its own progress',
    'save_results': 'results are always written to the report directory',
    'save_contexts': "every prompt is kept in EvalScope's review files",
    'results_version': "a tag of Kamradt's result files; EvalScope's use_cache decides what is rerun",
    'seconds_to_sleep_between_completions': 'pacing only; the endpoint is paced by eval_batch_size',
}
# Arguments that choose something EvalScope sets elsewhere: refused with where it goes.
REFUSED = {
    'model_to_test': "the model under test is EvalScope's TaskConfig model (with api_url), not an extra_params name",
    'provider': "the model under test is EvalScope's TaskConfig model (with api_url and eval_type), not a provider",
    'model_name': "the model under test is EvalScope's TaskConfig model, not an extra_params name",
    # EvalScope's current names (1.14 marks judge_model_args/judge_strategy deprecated): --judge / TaskConfig judge.
    'evaluator': "answers are graded by the judge set in TaskConfig judge (--judge JSON: {'models': [{'model_id': "
    "..., 'api_url': ..., 'api_key': ...}]}; judge={'strategy': 'rule'} for rule scores only)",
    'evaluator_model_name': "the judge model is the model_id of TaskConfig judge's models (--judge JSON)",
    'eval_set': 'LangSmith datasets are not read; give the needles and retrieval_question here',
    'num_concurrent_requests': "concurrency is TaskConfig's eval_batch_size",
    'haystack_dir': "give the haystack files as subsets' file_list (inside dataset_args local_path)",
}
HONOURED = ('final_context_length_buffer', 'multi_needle')
OWNS = (*HONOURED, *IGNORED, *REFUSED)
# Shared names: Kamradt's defaults where the config is his (LLMNeedleHaystackTester and run.py's CommandArgs).
DEFAULTS = {
    'context_lengths_min': 1000,
    'context_lengths_max': 16000,
    'context_lengths_num_intervals': 35,
    'document_depth_percent_intervals': 35,
}
FINAL_CONTEXT_LENGTH_BUFFER = 200
# run.py's needles when multi_needle is true and none are given.
MULTI_NEEDLES = [
    ' Figs are one of the secret ingredients needed to build the perfect pizza. ',
    ' Prosciutto is one of the secret ingredients needed to build the perfect pizza. ',
    ' Goat cheese is one of the secret ingredients needed to build the perfect pizza. ',
]
MULTI_QUESTION = 'What are the secret ingredients needed to build the perfect pizza?'
# tiktoken.encoding_for_model('gpt-3.5-turbo-0125'), run.py's default model_name.
TOKENIZER = 'tiktoken:cl100k_base'


def expand(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` in our names with Kamradt's meaning; his own argument names removed."""
    for name in REFUSED:
        if values.get(name) is not None:
            raise NiahConfigError(name, f'is an argument of {TOOL}; here {REFUSED[name]}')
    out = {name: value for name, value in values.items() if name not in OWNS}
    if values.get('length_buffer') is not None:
        raise NiahConfigError('length_buffer', f"is OpenCompass' name; {TOOL} writes final_context_length_buffer")
    out['length_buffer'] = _buffer(values.get('final_context_length_buffer'))
    if values.get('tokenizer_path') is None:
        out['tokenizer_path'] = TOKENIZER
    if values.get('context_lengths') is None:
        out.update({name: values.get(name, default) for name, default in DEFAULTS.items() if 'depth' not in name})
    if values.get('document_depth_percents') is None:
        out.update({name: values.get(name, default) for name, default in DEFAULTS.items() if 'depth' in name})
    out = {name: value for name, value in out.items() if value is not None}
    return _needles(values, out)


def _buffer(value: Any) -> int:
    if value is None:
        return FINAL_CONTEXT_LENGTH_BUFFER
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise NiahConfigError('final_context_length_buffer', f'must be 0 or more tokens ({TOOL}) (got {value!r})')
    return value


def _needles(values: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """Kamradt's single tester reads ``needle`` only, the multi-needle one ``needles`` only (its own defaults)."""
    multi = values.get('multi_needle')
    if multi is not None and not isinstance(multi, bool):
        raise NiahConfigError('multi_needle', f'must be true or false ({TOOL}) (got {multi!r})')
    if multi:
        if values.get('needle') is not None:
            raise NiahConfigError('needle', f'{TOOL} inserts needles, not needle, with multi_needle: true')
        if values.get('needles') is None:
            out['needles'] = MULTI_NEEDLES
            out.setdefault('retrieval_question', MULTI_QUESTION)
    elif values.get('needles') is not None:
        raise NiahConfigError('needles', f'{TOOL} reads needles only with multi_needle: true (else needle)')
    return out


def _said(name: str) -> str:
    if name in IGNORED:
        return f"{TOOL}'s {name}: accepted and ignored ({IGNORED[name]})."
    return f"{TOOL}'s {name}: refused; {REFUSED[name]}."


class KamradtParams(BaseModel):
    """Kamradt's tester's own argument names (part of ``NiahParams``, flat ``extra_params`` names), declared so
    EvalScope passes them along; ``expand`` reads them before any field is checked, so they hold nothing after."""

    model_config = ConfigDict(extra='forbid', frozen=True)

    final_context_length_buffer: int | None = Field(
        None,
        description=f'{TOOL}: tokens taken off each context length (his default 200, which applies whenever the '
        'config is his); here the whole prompt is this much shorter than the length (length_buffer).',
    )
    multi_needle: bool | None = Field(
        None,
        description=f"{TOOL}: true inserts needles (run.py's three pizza needles when none are given), the first at "
        'the depth and the rest spread to the end; false (default) inserts needle only.',
    )
    print_ongoing_status: bool | None = Field(None, description=_said('print_ongoing_status'))
    save_results: bool | None = Field(None, description=_said('save_results'))
    save_contexts: bool | None = Field(None, description=_said('save_contexts'))
    results_version: int | None = Field(None, description=_said('results_version'))
    seconds_to_sleep_between_completions: float | None = Field(
        None, description=_said('seconds_to_sleep_between_completions')
    )
    model_to_test: str | None = Field(None, description=_said('model_to_test'))
    provider: str | None = Field(None, description=_said('provider'))
    model_name: str | None = Field(None, description=_said('model_name'))
    evaluator: str | None = Field(None, description=_said('evaluator'))
    evaluator_model_name: str | None = Field(None, description=_said('evaluator_model_name'))
    eval_set: str | None = Field(None, description=_said('eval_set'))
    num_concurrent_requests: int | None = Field(None, description=_said('num_concurrent_requests'))
    haystack_dir: str | None = Field(None, description=_said('haystack_dir'))
