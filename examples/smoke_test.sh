#!/usr/bin/env bash
# Two English samples against a local OpenAI-compatible server, rule scoring: a quick check that a model and the
# benchmark talk to each other. Usage: examples/smoke_test.sh http://127.0.0.1:8000/v1 my-model [/path/to/corpus]
set -euo pipefail
url=${1:?api url}; model=${2:?model name}; corpus=${3:-}
args='{"needle_haystack": {"subset_list": ["english"]'
[ -n "$corpus" ] && args+=", \"local_path\": \"$corpus\""
args+='}}'
evalscope eval --model "$model" --api-url "$url" --datasets needle_haystack --dataset-args "$args" \
  --limit 2 --judge '{"strategy": "rule"}'
