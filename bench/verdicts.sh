#!/usr/bin/env bash
# Records the labelled scenario matrix of issue 14 and prints the analyzer's
# verdicts on it: a confusion table (expected wall against verdict) and a
# stability table (the recordings of each scenario agree on the verdict,
# and their operating points lie within one level).
#
# Each scenario's wall is known by construction, on headroom's test engine
# (llama.cpp through node-llama-cpp, CPU; docs/test-engine.md) or, for the
# starved client, a Go streaming server that bursts tokens at a load
# generator held to one core:
#
#   kv        KV budget too small: 150 tokens shared, requests of 96:
#             from c=2 the engine preempts                              -> kv_cache
#   slotcap   1 sequence, ample KV: from c=2 requests wait for it       -> engine_cap
#   ample     16 sequences, ample KV, an open loop of 1-2 req/s of short
#             requests that keeps the engine idle most of the time      -> none
#   cpu       the 3.5M-parameter model, 16 sequences: decode saturates
#             the engine's CPU thread, TPOT bends                       -> compute
#   openloop  2, 4, then 400 req/s offered to 4 client slots            -> front_queue
#   client    a burst server of 256 KiB chunks; headroom on one core    -> client_bound
#
# Usage: bench/verdicts.sh [OUT] [RECORDINGS]
#   OUT         where the runs go (default testdata/verdicts); EXPECTED.tsv is
#               written there and the tables are printed
#   RECORDINGS  recordings per scenario (default 3)
#   SCENARIOS   environment: a subset, e.g. SCENARIOS="kv slotcap"
#   REPORT_ONLY=1 prints the tables of the runs already in OUT
# Needs the test engine (.ci/install-engine.sh). Takes 10-20 minutes on the
# 2-core VM.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-testdata/verdicts}
n=${2:-3}
scenarios=${SCENARIOS:-"kv slotcap ample cpu openloop client"}
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

expected() {
  case $1 in
    kv) echo kv_cache ;; slotcap) echo engine_cap ;; ample) echo none ;;
    cpu) echo compute ;; openloop) echo front_queue ;; client) echo client_bound ;;
  esac
}

if [ -z "${REPORT_ONLY:-}" ]; then
  bash .ci/install-engine.sh >/dev/null
  go build -o "$tmp/headroom" ./cmd/headroom
  go build -o "$tmp/streamserver" ./bench/streamserver
  go run ./internal/gguf/cmd/write-llama -preset tiny -o "$tmp/tiny.gguf" >/dev/null
  go run ./internal/gguf/cmd/write-llama -preset small -o "$tmp/small.gguf" >/dev/null
  port=$((20000 + RANDOM % 20000))
  engine() { # engine MODEL ARGS...: the test engine's command line on $port
    local model=$1
    shift
    echo "node test/engine/server.mjs --model $tmp/$model.gguf --port $port --max-lifetime-s 900 --step-log-interval-ms 250 $*"
  }
  sweep() { # sweep SCENARIO RECORDING DESCRIPTION ARGS...
    local scen=$1 rec=$2 desc=$3
    shift 3
    local dir="$out/$scen/$rec"
    rm -rf "$dir"
    mkdir -p "$out/$scen"
    "$tmp/headroom" sweep --base-url "http://127.0.0.1:$port" --no-gpu -o "$dir" \
      --label "$scen $rec" --tag verdicts --tag "scenario=$scen" --description "$desc" "$@" >"$tmp/$scen-$rec.log" 2>&1 ||
      { echo "sweep $scen $rec failed:"; tail -5 "$tmp/$scen-$rec.log"; exit 1; }
    echo "recorded $dir"
  }
  common=(--prompt-tokens 64 --output-tokens 32 --requests-per-level 100)
  short=(--prompt-tokens 64 --output-tokens 16 --requests-per-level 100)
  for rec in $(seq 1 "$n"); do
    for scen in $scenarios; do
      port=$((port + 1))
      case $scen in
        kv)
          sweep kv "$rec" "test engine, tiny random model, 8 sequences, a KV budget of 150 tokens: requests of 64+32 tokens, one fits" \
            --server-cmd "$(engine tiny --sequences 8 --ctx-per-seq 128 --kv-budget-tokens 150)" --concurrency 1,2,4 "${common[@]}" ;;
        slotcap)
          sweep slotcap "$rec" "test engine, tiny random model, 1 sequence, KV budget 256 tokens (ample for its one request of 96)" \
            --server-cmd "$(engine tiny --sequences 1 --ctx-per-seq 256)" --concurrency 1,2,4,8 "${short[@]}" ;;
        ample)
          sweep ample "$rec" "test engine, tiny random model, 16 sequences, KV budget 4096 tokens; open loop of 1-2 req/s of 8-token requests, the engine idle most of the time" \
            --server-cmd "$(engine tiny --sequences 16 --ctx-per-seq 256)" --rate 1,2 --concurrency 16 \
            --prompt-tokens 64 --output-tokens 8 --requests-per-level 100 ;;
        cpu)
          sweep cpu "$rec" "test engine, small random model (3.5M parameters, F16), 16 sequences, ample KV, one llama.cpp thread: decode saturates the CPU" \
            --server-cmd "$(engine small --sequences 16 --ctx-per-seq 256)" --concurrency 1,2,4,8,16 "${short[@]}" ;;
        openloop)
          sweep openloop "$rec" "test engine, tiny random model, 16 sequences; open loop, 4 client slots, 400 req/s offered at the top" \
            --server-cmd "$(engine tiny --sequences 16 --ctx-per-seq 256)" --rate 2,4,400 --concurrency 4 "${short[@]}" ;;
        client)
          "$tmp/streamserver" -addr "127.0.0.1:$port" -itl 0 -batch 4 -pad 262144 >/dev/null 2>&1 &
          pids+=($!)
          for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && break; sleep 0.1; done
          GOMAXPROCS=1 sweep client "$rec" "bench/streamserver bursting 32-chunk streams whose chunks each carry 256 KiB of filler text: parsing them costs the client, not the server; the load generator held to one core (GOMAXPROCS=1)" \
            --concurrency 1,2 --prompt-tokens 16 --output-tokens 32 --requests-per-level 100 --metrics-interval 0
          kill "${pids[-1]}" 2>/dev/null || true ;;
        *) echo "unknown scenario $scen" >&2; exit 2 ;;
      esac
    done
  done
fi

# The expected verdict of every recording present.
{
  echo "# run directory<TAB>expected wall (bench/verdicts.sh)"
  for d in "$out"/*/*/; do
    d=${d%/}
    [ -f "$d/manifest.json" ] || continue
    scen=$(basename "$(dirname "$d")")
    echo -e "${d#"$out"/}\t$(expected "$scen")"
  done
} >"$out/EXPECTED.tsv"
go run ./bench/verdicts -expect "$out/EXPECTED.tsv"
