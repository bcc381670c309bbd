#!/usr/bin/env bash
# Records the GPU part of the verdict matrix (issue 14) on a CUDA host with
# llama.cpp's llama-server: three scenarios whose wall is known by
# construction, RECORDINGS times each, as /work/coord/gpu-scenarios.md
# defines them. Run it on the GPU host; bench/verdicts.sh's REPORT_ONLY mode
# or `go run ./bench/verdicts -expect OUT/EXPECTED.tsv` prints the tables.
#
#   gpu-kv-small  -c 8192 -np 32 --kv-unified, levels 1-32:
#                 12 requests of 640 tokens fit the cache            -> kv_cache
#   gpu-kv-large  -c 131072 -np 8 --kv-unified, levels 1-32:
#                 8 slots, the cache holds 200 requests              -> engine_cap
#   gpu-membound  -c 131072 -np 64 --kv-unified, levels 1-8:
#                 batch <= 8, decode memory-bound, nothing waits     -> none
#
# Recorded 2026-12-05 on an H100 (bench/h200/llamacpp.sh, which runs these scenarios with 512 + 32
# tokens): kv-small as expected; kv-large and membound read as engine overhead first, because each
# new prompt taken into a step holds the running answers up (docs/validation.md, "The GPU rows").
#
# --cache-ram 0: llama-server's host-RAM prompt cache (default 8 GiB) thrashes
# from c=4 on this workload (the GPU helper's 2026-12-01 sweeps: thousands of
# "making room for prompt cache entry" lines and a 140 s stall at c=16).
#
# Environment:
#   HEADROOM      the headroom binary (CGO_ENABLED=0 build)
#   LLAMA_SERVER  llama-server (built for the GPU; LD_LIBRARY_PATH set by the caller)
#   MODEL         the GGUF to serve (a random-weight Llama-3.1-8B shape in f16)
#   OUT           where the runs go (default ./verdicts-gpu)
#   RECORDINGS    recordings per scenario (default 3)
#   REQUESTS      measured requests per level (default 100: p99 needs 100)
#   SCENARIOS     a subset, e.g. "gpu-kv-small gpu-kv-large"
set -euo pipefail
: "${HEADROOM:?set HEADROOM to the headroom binary}" "${LLAMA_SERVER:?set LLAMA_SERVER}" "${MODEL:?set MODEL to the GGUF}"
out=${OUT:-verdicts-gpu}
n=${RECORDINGS:-3}
requests=${REQUESTS:-100}
scenarios=${SCENARIOS:-"gpu-kv-small gpu-kv-large gpu-membound"}
mkdir -p "$out"
port=$((30000 + RANDOM % 20000))

expected() {
  case $1 in gpu-kv-small) echo kv_cache ;; gpu-kv-large) echo engine_cap ;; gpu-membound) echo none ;; esac
}

record() { # record SCENARIO N CTX SLOTS LEVELS
  local scen=$1 rec=$2 ctx=$3 slots=$4 levels=$5
  port=$((port + 1))
  local dir="$out/$scen/$rec"
  rm -rf "$dir"
  mkdir -p "$out/$scen"
  "$HEADROOM" sweep \
    --server-cmd "$LLAMA_SERVER -m $MODEL -ngl 99 --host 127.0.0.1 --port $port --metrics --no-webui --cache-ram 0 -c $ctx -np $slots --kv-unified -b 2048 -ub 512" \
    --base-url "http://127.0.0.1:$port" --endpoint completions --concurrency "$levels" \
    --prompt-tokens 512 --output-tokens 128 --requests-per-level "$requests" \
    -o "$dir" --label "$scen $rec" --tag verdicts --tag "scenario=$scen" \
    --description "llama.cpp llama-server (CUDA), random-weight Llama-3.1-8B shape f16, -c $ctx -np $slots --kv-unified"
}

for rec in $(seq 1 "$n"); do
  for scen in $scenarios; do
    case $scen in
      gpu-kv-small) record "$scen" "$rec" 8192 32 1,2,4,8,16,32 ;;
      gpu-kv-large) record "$scen" "$rec" 131072 8 1,2,4,8,16,32 ;;
      gpu-membound) record "$scen" "$rec" 131072 64 1,2,4,8 ;;
      *) echo "unknown scenario $scen" >&2; exit 2 ;;
    esac
  done
done
{
  echo "# run directory<TAB>expected wall (bench/verdicts-gpu.sh)"
  for d in "$out"/*/*/; do
    d=${d%/}
    [ -f "$d/manifest.json" ] || continue
    echo -e "${d#"$out"/}\t$(expected "$(basename "$(dirname "$d")")")"
  done
} >"$out/EXPECTED.tsv"
