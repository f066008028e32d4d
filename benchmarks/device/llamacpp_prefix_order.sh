#!/usr/bin/env bash
# Grid order vs our prefix-friendly order, end to end, against llama.cpp's llama-server on one GPU.
#
#   llamacpp_prefix_order.sh build                         # configure + build llama-server (CUDA)
#   llamacpp_prefix_order.sh replay EXPORT W [ARGS...]     # W in flight, a fresh server per run; ARGS go to --replay
#
# Environment (defaults in brackets):
#   LLAMA_SRC   llama.cpp source directory or .tar.xz of one [.gpu/a/llama.cpp.tar.xz]
#   BUILD       build directory [/tmp/llama-build]
#   CUDA_ARCH   CMAKE_CUDA_ARCHITECTURES [90: H100/H200]
#   MODEL       GGUF model [/tmp/SmolLM2-135M-Instruct.Q4_1.gguf]
#   CTX_SLOT    context per slot in tokens; must hold the longest prompt in the model's tokens [73728]
#   PORT        [8080]
#   OUT         where logs and JSON go [./out]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
LLAMA_SRC=${LLAMA_SRC:-.gpu/a/llama.cpp.tar.xz}
BUILD=${BUILD:-/tmp/llama-build}
CUDA_ARCH=${CUDA_ARCH:-90}
MODEL=${MODEL:-/tmp/SmolLM2-135M-Instruct.Q4_1.gguf}
CTX_SLOT=${CTX_SLOT:-73728}
PORT=${PORT:-8080}
OUT=${OUT:-./out}
mkdir -p "$OUT"

build() {
    local src=$LLAMA_SRC
    if [[ $src == *.tar.xz ]]; then
        mkdir -p /tmp/llama-src
        [[ -f /tmp/llama-src/llama.cpp/CMakeLists.txt ]] || tar xJf "$src" -C /tmp/llama-src
        src=/tmp/llama-src/llama.cpp
    fi
    # Only llama-server: no tests, examples, web UI (its assets would be downloaded), OpenSSL or NCCL.
    cmake -S "$src" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" -DGGML_NATIVE=OFF -DGGML_CUDA_NCCL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
        -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF >"$OUT/cmake.log" 2>&1 \
        || { tail -40 "$OUT/cmake.log"; exit 1; }
    cmake --build "$BUILD" --target llama-server -j "$(nproc)" >"$OUT/build.log" 2>&1 || { grep -B2 -A8 -m3 error "$OUT/build.log"; tail -5 "$OUT/build.log"; exit 1; }
    test -x "$BUILD/bin/llama-server"
}

replay() {
    local export=$1 w=$2
    shift 2
    # --parallel W: one slot per request in flight (EvalScope's eval_batch_size); each slot gets CTX_SLOT of the
    # context. The model's 8k training context caps a slot's context, so it is raised: speed, not accuracy, counts.
    # Prompt caching is left at the server's defaults (cache_prompt on, --cache-ram 8192 MiB host cache,
    # --slot-prompt-similarity 0.10, idle slots saved to the host cache).
    local server="$BUILD/bin/llama-server -m $MODEL -a model --host 127.0.0.1 --port $PORT -ngl 99 --parallel $w \
-c $((w * CTX_SLOT)) --override-kv llama.context_length=int:$CTX_SLOT --no-ui"
    python3 "$here/../bench_server_order.py" --replay "$export" --api-url "http://127.0.0.1:$PORT/v1" \
        --model model --in-flight "$w" --server-cmd "$server" --server-log "$OUT/server-w$w.log" \
        --json "$OUT/w$w.json" "$@" 2>&1 | tee "$OUT/w$w.txt"
}

case ${1:-} in
    build) build ;;
    replay) shift; replay "$@" ;;
    *) sed -n '2,14p' "$0"; exit 2 ;;
esac
