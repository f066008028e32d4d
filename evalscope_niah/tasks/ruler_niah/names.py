"""RULER's names that are not parameters here (its niah.py and prepare.py command-line arguments), each with what to
write instead: a RULER user's config is refused with the way to say it here, never with an unknown-name error."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .presets import PRESETS

_LEAVE_OUT = 'leave it out'
RULER_ONLY: Mapping[str, str] = MappingProxyType(
    {
        'max_seq_length': "is RULER's length with the answer's tokens in it; write context_lengths: [max_seq_length] "
        'and length_buffer: tokens_to_generate (128 for RULER niah), which keeps that many tokens free in each length',
        'tokens_to_generate': "is RULER's answer budget; set max_tokens in generation_config and the same number as "
        'length_buffer, so each length leaves room for it',
        'num_samples': "is RULER's samples per length; here a length has one sample per depth per repeat: "
        'document_depth_percent_intervals x num_repeats (e.g. 10 x 50 for 500)',
        'random_seed': "is RULER's seed; write sampling_seed",
        'template': "is RULER's prompt template; the question is RULER's own here, the prompt around the haystack is "
        'prompt_template / system_prompt in dataset_args, so leave it out',
        'tokenizer_type': f'is how RULER loads its tokenizer; tokenizer_path names ours (a Hugging Face name, '
        f"tiktoken:<encoding> or 'server'), so {_LEAVE_OUT}",
        'model_template_token': f"is RULER's allowance for a chat template; here lengths count the chat template "
        f'exactly, so {_LEAVE_OUT}',
        'remove_newline_tab': "is RULER's flattening of line breaks, not done here (noise and needle lines keep "
        f'theirs); {_LEAVE_OUT}',
        'save_dir': f"is RULER's output folder; EvalScope's work_dir holds the results, so {_LEAVE_OUT}",
        'save_name': f"is RULER's output file name; EvalScope's work_dir holds the results, so {_LEAVE_OUT}",
        'subset': f"is RULER's validation/test split; {_LEAVE_OUT} (subset_list in dataset_args names the corpora)",
    }
)


def ruler_task_hint(task: object) -> str | None:
    """What to write for a RULER task name given as ``task`` ('niah', 'niah_multikey_2'); None for other names."""
    if not isinstance(task, str):
        return None
    name = task.removeprefix('ruler_')
    if name == 'niah':
        return "RULER's niah is task 'ruler_niah' here, its arguments as RULER names them"
    if name in PRESETS:
        return f"RULER's {name} is task 'ruler_niah' with ruler_preset: {task!r} here"
    return None
