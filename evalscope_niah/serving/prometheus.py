"""Prompt tokens a server really computed, read from its Prometheus text page (``GET /metrics``).

Stdlib only, and importing nothing else of the package: ``benchmarks/bench_server_order.py --replay`` runs it on a
GPU machine where EvalScope may not be installed. llama.cpp counts computed prompt tokens itself; vLLM counts all
prompt tokens and, apart, the prefix-cache hits among them.
"""

from __future__ import annotations

import urllib.request

__all__ = ['computed_tokens', 'parse_prometheus', 'read_counters']

LLAMA_COMPUTED = 'llamacpp:prompt_tokens_total'
LLAMA_CACHED = 'llamacpp:prompt_tokens_cached_total'
VLLM_PROMPT, VLLM_HITS = 'vllm:prompt_tokens_total', 'vllm:prefix_cache_hits_total'

# A metrics page is a few KB; a server that sends more is cut here rather than read into memory whole.
MAX_PAGE_BYTES = 1 << 22


def parse_prometheus(text: str) -> dict[str, float]:
    """Each metric of a Prometheus text page, summed over its labels (vLLM labels one sample per engine)."""
    sums: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith('#') or not line.strip():
            continue
        if '{' in line:  # name{labels} value
            name, _, rest = line.partition('{')
            rest = rest.rpartition('}')[2]
        else:  # name value
            name, _, rest = line.partition(' ')
        fields = rest.split()
        try:
            sums[name.strip()] = sums.get(name.strip(), 0.0) + float(fields[0])
        except (IndexError, ValueError):
            continue  # a malformed line says nothing; the counters we read are on lines of their own
    return sums


def read_counters(metrics_url: str, *, timeout: float = 10.0) -> dict[str, float]:
    """The counters of ``metrics_url`` (a ``/metrics`` page), summed over their labels."""
    with urllib.request.urlopen(metrics_url, timeout=timeout) as response:
        return parse_prometheus(response.read(MAX_PAGE_BYTES).decode('utf-8', 'replace'))


def computed_tokens(counters: dict[str, float]) -> float | None:
    """Prompt tokens the server computed (cache hits excluded); None where the page has neither server's counter."""
    if LLAMA_COMPUTED in counters:
        return counters[LLAMA_COMPUTED]
    if VLLM_PROMPT in counters:
        return counters[VLLM_PROMPT] - counters.get(VLLM_HITS, 0.0)
    return None
