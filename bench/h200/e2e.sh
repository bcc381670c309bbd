#!/usr/bin/env bash
# The flagship end-to-end run (issue 10), one phase per device call:
#
#   small  headroom probe; headroom sweep of the GPU engine (bench/gpu-engine) serving a random-weight
#          Llama-3.1-8B-shaped model with a KV cache small enough that concurrency 128 with 1024-token
#          prompts reaches the KV wall.
#   large  the same sweep with a KV cache that holds every request (no KV wall); then the seed's
#          script 02 against the same engine configuration and levels, for docs/validation.md.
#
# Everything goes into $OUT/work and is packed into $OUT/e2e-<phase>.tar.gz at the end, also when a
# step fails or the deadline is reached (each step is bounded; a sweep cut short is stopped with
# SIGINT and leaves a valid run marked incomplete).
#
# On the H200 box:  PHASE=small bash bench/h200/e2e.sh   (needs bin/headroom, built here with
#                   CGO_ENABLED=0 go build -o bin/headroom ./cmd/headroom, carried with the call)
# Dry run here:     ENGINE=testengine PHASE=small OUT=/tmp/e2e bash bench/h200/e2e.sh
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
PHASE=${PHASE:-small}
ENGINE=${ENGINE:-gpu}
OUT=${OUT:-/tmp/h200-e2e}
BUDGET_S=${BUDGET_S:-575}           # the device allows 600 s per command
LEVELS=${LEVELS:-1,2,4,8,16,32,64,128}
PROMPT_TOKENS=${PROMPT_TOKENS:-1024}
OUTPUT_TOKENS=${OUTPUT_TOKENS:-64}
DURATION=${DURATION:-10s}           # measured sending time per level (closed loop)
WARMUP=${WARMUP:-4}                 # warm-up requests per level, as script 02 (min(c, 4))
H=$ROOT/bin/headroom
W=$OUT/work
mkdir -p "$W"
export PYTHONUNBUFFERED=1 TIKTOKEN_CACHE_DIR=${TIKTOKEN_CACHE_DIR:-/opt/tiktoken_cache}
start=$SECONDS
left() { echo $((BUDGET_S - (SECONDS - start))); }
log() { echo "[e2e $PHASE +$((SECONDS - start))s] $*" | tee -a "$W/e2e.log"; }
pack() {
  log "packing $W"
  tar -czf "$OUT/e2e-$PHASE.tar.gz" -C "$W" . && ls -la "$OUT"
}
trap pack EXIT

case $ENGINE in
gpu)
  PY=${PY:-/opt/torch/.venv/bin/python}
  port=8000
  case $PHASE in
  small) kv_blocks=${KV_BLOCKS:-256} ;;   # 256 x 256 tokens = 65,536: ~60 requests of 1024+64 tokens
  large) kv_blocks=${KV_BLOCKS:-768} ;;   # 196,608 tokens: 128 requests of 1088 tokens fit
  esac
  shape=${SHAPE:-8b}
  engine_flags="--model-shape $shape --kv-blocks $kv_blocks --block-size 256 --max-batch-tokens 8192 --seed 0"
  # transformers' decode step was overhead-bound in the smoke run (80-110 ms for both shapes). In the
  # small phase, time the engine alone with CUDA graphs left to the engine ("auto") and forced on, and
  # serve with the faster; CUDA_GRAPH=auto|on|off fixes the choice (the large phase reuses it).
  cuda_graph=${CUDA_GRAPH:-}
  if [ -z "$cuda_graph" ] && [ "$PHASE" = small ]; then
    for cg in auto on; do
      log "engine alone, --cuda-graph $cg"
      timeout -k 5 100 "$PY" bench/gpu-engine/smoke_client.py engine $engine_flags --cuda-graph $cg \
        > "$W/engine-only-cg-$cg.txt" 2>&1
      log "engine alone, --cuda-graph $cg: exit $?: $(grep '^engine only, 8' "$W/engine-only-cg-$cg.txt")"
    done
    tpot() { sed -n 's/^engine only, 8 .*tpot mean \([0-9.]*\) ms.*/\1/p' "$W/engine-only-cg-$1.txt"; }
    a=$(tpot auto); o=$(tpot on)
    cuda_graph=auto
    if [ -n "$o" ] && { [ -z "$a" ] || awk -v o="$o" -v a="$a" 'BEGIN{exit !(o < 0.8 * a)}'; }; then cuda_graph=on; fi
    log "serving with --cuda-graph $cuda_graph (8-request TPOT: auto ${a:-?} ms, on ${o:-?} ms)"
  fi
  echo "${cuda_graph:=auto}" > "$W/cuda-graph-choice.txt"
  server="$PY bench/gpu-engine/server.py $engine_flags --cuda-graph $cuda_graph --port $port"
  model_desc="a random-weight bf16 Llama-3.1-8B-shaped model (hidden 4096, 32 layers, 32 heads, 8 KV heads, FF 14336, vocab 128256) created on the GPU, like vLLM's --load-format dummy: the text is meaningless; the compute and memory traffic are those of the real shape"
  [ "$shape" = 1b ] && model_desc="a random-weight bf16 Llama-3.2-1B-shaped model created on the GPU, like vLLM's --load-format dummy: the text is meaningless; the compute and memory traffic are those of the real shape"
  desc="transformers 5.17 continuous batching (paged KV cache, FIFO scheduler) behind headroom's bench/gpu-engine/server.py, serving $model_desc. KV cache bounded to $kv_blocks blocks of 256 tokens. Client and server on the same H200 box."
  ;;
testengine)   # a dry run of the orchestration on a machine without a GPU
  PY=${PY:-/usr/bin/python3}
  port=18977
  bash .ci/install-engine.sh
  go run ./internal/gguf/cmd/write-llama -preset small -o "$W/model.gguf" >/dev/null
  [ -x "$H" ] || go build -o "$H" ./cmd/headroom
  server="node test/engine/server.mjs --model $W/model.gguf --port $port --sequences 8 --ctx-per-seq 2048 --kv-budget-tokens 4096"
  desc="dry run against headroom's CPU test engine"
  ;;
esac
base=http://127.0.0.1:$port
log "phase $PHASE, engine $ENGINE, levels $LEVELS, $PROMPT_TOKENS+$OUTPUT_TOKENS tokens, budget ${BUDGET_S}s"
command -v nvidia-smi >/dev/null && nvidia-smi > "$W/nvidia-smi.txt" 2>&1
"$H" version > "$W/headroom-version.txt" 2>&1
[ "$ENGINE" = gpu ] && "$PY" bench/gpu-engine/server.py --model-shape "${SHAPE:-8b}" --print-config > "$W/config-${SHAPE:-8b}.json" 2>/dev/null

if [ "$PHASE" = small ] && [ "$ENGINE" = gpu ]; then
  log "probe"
  timeout -s INT 120 "$H" probe -o "$W/probe" > "$W/probe.out" 2>&1
  log "probe exit $?"
fi

# --- headroom sweep, starting and stopping the server itself (so every flag is in the manifest) ---
reserve=20
[ "$PHASE" = large ] && reserve=200   # leave script 02 its time
sweep_s=$(( $(left) - reserve ))
log "headroom sweep (at most ${sweep_s}s)"
timeout -s INT -k 20 "$sweep_s" "$H" sweep --server-cmd "$server" --base-url "$base" \
  --concurrency "$LEVELS" --prompt-tokens "$PROMPT_TOKENS" --output-tokens "$OUTPUT_TOKENS" \
  --warmup "$WARMUP" --duration-per-level "$DURATION" --server-timeout 240s \
  --label "H200 ${SHAPE:-8b}-shape, KV ${kv_blocks:-test} blocks" --tag "phase=$PHASE" --tag "kv_blocks=${kv_blocks:-0}" \
  --description "$desc" -o "$W/sweep-$PHASE" > "$W/sweep-$PHASE.out" 2>&1
log "headroom sweep exit $?"

# --- the seed's script 02 against the same engine, same levels (large phase only) ---
if [ "$PHASE" = large ] && [ "$(left)" -gt 60 ]; then
  log "starting the server for script 02"
  $server > "$W/script02-server.out" 2> "$W/script02-server.log" &
  spid=$!
  for _ in $(seq 240); do curl -sf "$base/health" >/dev/null 2>&1 && break; sleep 1; done
  model=$(curl -s "$base/v1/models" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])')
  # Script 02 sizes prompts at 1.3 tokens per word; give it the word count that makes PROMPT_TOKENS
  # with this server's tokenizer, measured on its own word list, so both clients send the same load.
  arg=$("$PY" bench/h200/script02_words.py "$base" "$PROMPT_TOKENS" prompt)
  log "script 02: model $model, --prompt-tokens $arg (= $PROMPT_TOKENS tokens with this tokenizer)"
  echo "$arg" > "$W/script02-prompt-tokens-arg.txt"
  timeout -s INT $(( $(left) - 15 )) "$PY" bench/seed/02_serving_sweep.py --base-url "$base" --model "$model" \
    --prompt-tokens "$arg" --output-tokens "$OUTPUT_TOKENS" --levels "$LEVELS" \
    --out "$W/serving_sweep_$PHASE.json" > "$W/script02.out" 2>&1
  log "script 02 exit $?"
  kill -TERM "$spid" 2>/dev/null; for _ in $(seq 20); do kill -0 "$spid" 2>/dev/null || break; sleep 0.5; done
  kill -KILL "$spid" 2>/dev/null
fi
log "done"
