#!/usr/bin/env bash
# Records the bundled test-engine sweep (examples/runs/sweep-testengine): a real
# `headroom sweep` against headroom's test engine (llama.cpp via node-llama-cpp,
# CPU) serving a random-weight model, with a KV budget small enough that the
# sweep reaches the KV wall. Needs the test engine installed (.ci/install-engine.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-examples/runs/sweep-testengine}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bash .ci/install-engine.sh
port=18931
go build -o "$tmp/headroom" ./cmd/headroom
go run ./internal/gguf/cmd/write-llama -preset small -o "$tmp/headroom-small-random.gguf"
"$tmp/headroom" sweep \
  --server-cmd "node test/engine/server.mjs --model $tmp/headroom-small-random.gguf --port $port --sequences 8 --ctx-per-seq 512 --kv-budget-tokens 1024" \
  --base-url "http://127.0.0.1:$port" --concurrency 1,2,4,8,16,32 --prompt-tokens 128 --output-tokens 64 --requests-per-level 100 \
  --no-gpu -o "$out" --label "test engine, 2-core CPU" --tag test-engine \
  --description "headroom's test engine: llama.cpp (node-llama-cpp 3.21.1, CPU, 1 thread) behind test/engine/server.mjs, serving headroom-small-random, a 3.5M-parameter Llama-shaped GGUF with random weights (256 wide, 4 layers, F16, byte-level vocabulary) written by internal/gguf: the text is meaningless; the tokenization, batching over 8 sequences, the shared KV budget of 1024 tokens (the newest request is preempted and recomputed when it is exceeded) and the timing are real. Client and server share one 2-core VM."
