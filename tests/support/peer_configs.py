"""Other tools' documented needle-in-a-haystack configurations, as parameter values (the facts of each config, not
their docs' text), for tests/integration/test_peer_configs.py: each runs through run_task as its authors wrote it.

Only what points outside the test changes: corpus folders and server URLs. Where a config's length grid reaches
128k tokens it is shrunk (said per config), since a test server round trip per cell must stay fast.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# OpenCompass CDME (docs/*/advanced_guides/needleinahaystack_eval.md, configs/datasets/cdme/cdme8k.py, Jan 2024):
# one dataset dict per (length, depth) cell; ours is one cell of its grid (length 1000, depth 50), the dict
# otherwise as written, minus the OpenCompass objects (abbr, type, path, reader_cfg, infer_cfg, eval_cfg), which
# are refused with what to write instead.
CDME_SINGLE: dict[str, Any] = {
    'length': 1000,
    'depth': 50,
    'tokenizer_model': 'gpt-4',
    'file_list': ['zh_finance.jsonl'],
    'num_repeats_per_file': 10,
    'length_buffer': 200,
    'guide': True,
    'language': 'Chinese',
    'needle': '\n小明最喜欢的实习的地点就是上海人工智能实验室。\n',
    'retrieval_question': '小明最喜欢的实习地点是哪里？请按照“小明最喜欢的实习地点就是________。”的格式回答。',
}

# Its multi-needle reasoning dict (configs/datasets/cdme/multi_needle/cdme8k_cot3_italy.py): the user's own chain.
CDME_CHAIN_NEEDLES = [
    '\n意大利的佛罗伦萨有一家名为"La Giostra"的餐馆，是整个佛罗伦萨中排行第一的餐馆。\n',
    '"La Giostra"餐馆的特色菜肴是松露奶酪通心粉。',
    '松露奶酪通心粉是该家餐馆的有着意大利皇室烹饪血统的大厨Jack制作',
]
CDME_CHAIN: dict[str, Any] = {
    'length': 1000,
    'depth': 25,  # the chain's links go at 25, 50 and 75 (diff 25)
    'tokenizer_model': 'gpt-4',
    'file_list': ['zh_finance.jsonl'],
    'num_repeats_per_file': 10,
    'length_buffer': 200,
    'guide': True,
    'language': 'Chinese',
    'needles': CDME_CHAIN_NEEDLES,
    'diff': 25,
    'retrieval_question': (
        "制作佛罗伦萨中排行第一的餐馆的特色菜肴的人叫什么？请按照'制作佛罗伦萨中排行第一的餐馆的特色菜肴的人叫______。'的格式回答。"
    ),
    'answer': '制作佛罗伦萨中排行第一的餐馆的特色菜肴的人叫Jack',
    'keyword': 'Jack',
}

# EvalScope's documented examples (docs/*/third_party/needle_haystack.md): the English needle and question for both
# subsets. Lengths shrunk from 1000..128000 (20 intervals) / 1000..32000 (10) to 1000..2000 (2); depths as written.
EVALSCOPE_SINGLE: dict[str, Any] = {
    'retrieval_question': 'What is the best thing to do in San Francisco?',
    'needles': ['\nThe best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.\n'],
    'context_lengths_min': 1000,
    'context_lengths_max': 2000,
    'context_lengths_num_intervals': 2,
    'document_depth_percent_min': 0,
    'document_depth_percent_max': 100,
    'document_depth_percent_intervals': 10,
    'tokenizer_path': 'Qwen/Qwen3-0.6B',
    'show_score': True,
}
PIZZA_NEEDLES = [
    ' Figs are one of the secret ingredients needed to build the perfect pizza. ',
    ' Prosciutto is one of the secret ingredients needed to build the perfect pizza. ',
    ' Goat cheese is one of the secret ingredients needed to build the perfect pizza. ',
]
EVALSCOPE_MULTI: dict[str, Any] = {
    'retrieval_question': 'What is the secret ingredient needed to build the perfect pizza?',
    'needles': PIZZA_NEEDLES,
    'context_lengths_min': 1000,
    'context_lengths_max': 2000,
    'context_lengths_num_intervals': 2,
    'document_depth_percent_min': 0,
    'document_depth_percent_max': 100,
    'document_depth_percent_intervals': 10,
    'tokenizer_path': 'Qwen/Qwen3-0.6B',
    'show_score': True,
}

# EvalScope's own test of the benchmark (tests/benchmark/test_eval.py): lengths up to 10000 in 5 intervals, shrunk to
# 1000..2000 in 2.
EVALSCOPE_TEST: dict[str, Any] = {
    'context_lengths_max': 2000,
    'context_lengths_num_intervals': 2,
    'document_depth_percent_intervals': 5,
    'show_score': True,
}

# CDME's single-needle dict moved into a subset of its own, in English (CDME's prompts have an English branch; the
# file name is the one NeedleBench uses for Paul Graham's essays).
CDME_SUBSET_EN: dict[str, Any] = {
    'tokenizer_model': 'gpt-4',
    'num_repeats_per_file': 2,
    'length_buffer': 200,
    'guide': True,
    'length': 1000,
    'depth': 50,
    'subsets': {
        'cdme_en': {
            'file_list': ['PaulGrahamEssays.jsonl'],
            'language': 'English',
            'needle': EVALSCOPE_SINGLE['needles'][0],  # the same sentence, written '\n...\n'
            'retrieval_question': 'What is the best thing to do in San Francisco? Please answer in the format '
            "'The best thing to do in San Francisco is ________.'",
        }
    },
}

# inspect_evals niah's options (min_context, max_context, n_contexts, n_positions, start_buffer, end_buffer,
# n_needles, sample_method, fixed_index, n_runs); its lengths (10k..120k) shrunk to 1000..2000.
INSPECT_NIAH: dict[str, Any] = {
    'min_context': 1000,
    'max_context': 2000,
    'n_contexts': 2,
    'n_positions': 3,
    'start_buffer': 50,
    'end_buffer': 50,
    'n_needles': 2,
    'sample_method': 'sequential',
    'fixed_index': 3,
    'n_runs': 2,
}


@dataclass(frozen=True)
class PeerConfig:
    """One config: its extra_params, the subsets it runs, the corpus files it names (written by the test) and what
    a model that found the needles answers."""

    name: str
    extra_params: dict[str, Any]
    subsets: list[str] | None
    jsonl_files: dict[str, str] = field(default_factory=dict)  # file_list name -> language of the text written
    needles: tuple[str, ...] = ()  # texts a right model must find in the prompt ('' : answers from the prompt)
    right_answer: str | None = None  # None: the right model answers from the prompt (needle_finder)
    all_matches: bool = False  # the right model names every sentence as close to the question as the best
    options: dict[str, Any] = field(default_factory=dict)


PEER_CONFIGS = [
    PeerConfig(
        'cdme_single',
        CDME_SINGLE,
        ['chinese'],
        jsonl_files={'zh_finance.jsonl': 'chinese'},
        needles=(CDME_SINGLE['needle'].strip(),),
        right_answer='小明最喜欢的实习地点就是上海人工智能实验室。',
    ),
    PeerConfig(
        'cdme_chain',
        CDME_CHAIN,
        ['chinese'],
        jsonl_files={'zh_finance.jsonl': 'chinese'},
        needles=tuple(needle.strip() for needle in CDME_CHAIN_NEEDLES),
        right_answer=CDME_CHAIN['answer'] + '。',
    ),
    PeerConfig(
        'cdme_subset_en',
        CDME_SUBSET_EN,
        ['cdme_en'],
        jsonl_files={'PaulGrahamEssays.jsonl': 'english'},
        needles=(CDME_SUBSET_EN['subsets']['cdme_en']['needle'].strip(),),
    ),
    PeerConfig('evalscope_single', EVALSCOPE_SINGLE, ['chinese', 'english']),
    PeerConfig('evalscope_test', EVALSCOPE_TEST, ['english']),
    PeerConfig('evalscope_multi', EVALSCOPE_MULTI, ['chinese', 'english'], all_matches=True),
    PeerConfig('inspect_niah', INSPECT_NIAH, ['english']),
]
