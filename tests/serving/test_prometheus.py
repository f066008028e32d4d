"""Prompt tokens computed, read from llama.cpp's and vLLM's Prometheus pages."""

from __future__ import annotations

from evalscope_niah.serving.prometheus import computed_tokens, parse_prometheus


def test_llama_cpp_counts_computed_prompt_tokens_itself() -> None:
    llama = '# HELP llamacpp:prompt_tokens_total x\nllamacpp:prompt_tokens_total 1200\nllamacpp:n_decode_total 9\n'
    assert computed_tokens(parse_prometheus(llama)) == 1200


def test_vllm_prompt_tokens_less_prefix_cache_hits_summed_over_engines() -> None:
    vllm = (
        '# TYPE vllm:prompt_tokens_total counter\n'
        'vllm:prompt_tokens_total{engine="0",model_name="m"} 1000.0\n'
        'vllm:prompt_tokens_total{engine="1",model_name="m"} 500.0\n'
        'vllm:prefix_cache_hits_total{engine="0",model_name="m"} 640.0\n'
        'garbage line\n'
    )
    assert computed_tokens(parse_prometheus(vllm)) == 1500 - 640


def test_a_page_without_either_counter_says_nothing() -> None:
    assert computed_tokens(parse_prometheus('other_metric 3\n')) is None
    assert computed_tokens(parse_prometheus('')) is None
