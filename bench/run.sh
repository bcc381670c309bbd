#!/usr/bin/env bash
# Load generator benchmark: the seed's Python client (script 02, verbatim in
# bench/seed/) against `headroom sweep`, both streaming from the same Go
# server (bench/streamserver), client pinned to core 0 and server to core 1,
# candidates alternated back to back (the machine is noisy: compare ratios).
#
#   bench/run.sh [quick]      # results on stdout; paste into docs/performance.md
#   ONLY="paced burst streams" bench/run.sh   # a subset of the scenarios
#
# Needs: Go, taskset, Debian's python3-aiohttp (apt-get install -y python3-aiohttp),
# run with /usr/bin/python3. The seed runs stock (no MALLOC_* tuning).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
W=$(mktemp -d /tmp/headroom-bench.XXXXXX)
trap 'if [ -n "${SERVER_PID:-}" ]; then kill "$SERVER_PID" 2>/dev/null || true; fi; rm -rf "$W"' EXIT
PORT=8931
URL=http://127.0.0.1:$PORT
REPS=${REPS:-2}
QUICK=${1:-}
# The machine is shared: both sides of both candidates run at a higher priority
# than the rest (PRIO="" turns that off).
PRIO=${PRIO-nice -n -10}

go build -o "$W/headroom" ./cmd/headroom
go build -o "$W/streamserver" ./bench/streamserver
go build -o "$W/runstats" ./bench/runstats
go build -o "$W/holdstreams" ./bench/holdstreams
/usr/bin/python3 -c 'import aiohttp' 2>/dev/null || { echo "need python3-aiohttp: apt-get install -y python3-aiohttp" >&2; exit 1; }

echo "# load generator benchmark, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r), go $(go env GOVERSION), python $(/usr/bin/python3 -V 2>&1 | cut -d' ' -f2), aiohttp $(/usr/bin/python3 -c 'import aiohttp; print(aiohttp.__version__)')"
echo "# priority: ${PRIO:-normal}; client on core 0, server on core 1"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

server() { # itl [extra flags]
  if [ -n "${SERVER_PID:-}" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  $PRIO taskset -c 1 "$W/streamserver" -addr 127.0.0.1:$PORT -itl "$@" & SERVER_PID=$!
  for _ in $(seq 50); do curl -sf $URL/v1/models >/dev/null 2>&1 && return; sleep 0.1; done
  echo "bench server did not start" >&2; exit 1
}
stat() { curl -s $URL/stats | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["chunks"], d["cpu_s"])'; }

# cpu_of CMD...: runs CMD pinned to core 0 and prints its user+sys CPU seconds (bash `times`).
cpu_of() {
  ( $PRIO taskset -c 0 "$@" >"$W/client.out" 2>"$W/client.err"; times ) | tail -1 |
    /usr/bin/python3 -c 'import sys,re; t=[float(m)*60+float(s) for m,s in re.findall(r"(\d+)m([\d.]+)s", sys.stdin.read())]; print(sum(t))'
}

# one candidate at one pacing and set of levels: prints "cpu_s chunks" and leaves per-level JSON in $W/$1.json
run_candidate() { # name levels output_tokens
  local name=$1 levels=$2 out=$3
  read -r c0 _ <<<"$(stat)"
  if [ "$name" = seed ]; then
    cpu=$(cpu_of /usr/bin/python3 bench/seed/02_serving_sweep.py --base-url $URL --model bench \
      --prompt-tokens 512 --output-tokens "$out" --levels "$levels" --rounds 4 --out "$W/seed.json")
  else
    # The same requests as the seed with --rounds 4: per level 4 warm-ups
    # (min(c,4) for c >= 4) and 4 × c measured requests, all levels in one process.
    rm -rf "$W/run"
    cpu=$(cpu_of "$W/headroom" sweep --base-url $URL --model bench --prompt-tokens 512 --output-tokens "$out" \
      --concurrency "$levels" --requests-per-level 0 --warmup 4 --metrics-interval 0 --no-gpu -o "$W/run")
    "$W/runstats" "$W/run" >"$W/$name.json"
  fi
  read -r c1 _ <<<"$(stat)"
  echo "$cpu $((c1 - c0))"
}

# compare ITL_MS LEVELS OUTPUT_TOKENS: alternates candidates REPS times, prints a table
compare() {
  local itl=$1 levels=$2 out=$3
  server "${itl}ms"
  echo
  echo "## paced at ${itl} ms per token, ${out} tokens per request, levels $levels (server TTFT 0)"
  for rep in $(seq "$REPS"); do
    for name in seed headroom; do
      read -r cpu chunks <<<"$(run_candidate $name "$levels" "$out")"
      /usr/bin/python3 - "$W/$name.json" "$name" "$rep" "$cpu" "$chunks" "$itl" <<'PY'
import json, sys
path, name, rep, cpu, chunks, itl = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
rows = json.load(open(path))["rows"]
print(f"{name:8s} rep {rep}: client CPU {cpu:.2f} s for {chunks} chunks = {cpu/chunks*1e6:.1f} µs/chunk")
for r in rows:
    c = int(r["concurrency"])
    tpot_err = (r["tpot_p50_ms"] - itl) / itl * 100
    rate = c * 1000 / r["tpot_p50_ms"] if r["tpot_p50_ms"] > 0 else 0
    print(f"   c={c:4d}  TTFT p50 {r['ttft_p50_ms']:8.2f} ms  p99 {r['ttft_p99_ms']:8.2f} ms   TPOT p50 {r['tpot_p50_ms']:7.3f} ms ({tpot_err:+6.1f} %)  p99 {r['tpot_p99_ms']:7.3f} ms   ~{rate:8.0f} chunks/s")
PY
    done
  done
}

ONLY=${ONLY:-paced burst streams}
want() { [[ " $ONLY " == *" $1 "* ]]; }
if want paced; then
  if [ "$QUICK" = quick ]; then
    compare 10 4,64 64
  else
    compare 10 4,32,128,256 128
    compare 1 16,64,128,256,512 128
  fi
fi

# burst C: the server sends as fast as it can (32 chunks per flush), 4096 tokens per request; the
# ingest rate is chunks over the client's busy time, and CPU per chunk says what one core could take.
burst() {
  local c=$1
  server 0 -batch 32
  echo
  echo "## burst: server sends as fast as it can (32 chunks per write), c=$c, 4096 tokens per request"
  for rep in $(seq "$REPS"); do
    read -r c0 _ <<<"$(stat)"
    t0=$(date +%s.%N)
    cpu=$(cpu_of /usr/bin/python3 bench/seed/02_serving_sweep.py --base-url $URL --model bench \
      --prompt-tokens 64 --output-tokens 4096 --levels "$c" --rounds 2 --out "$W/seed.json")
    t1=$(date +%s.%N)
    read -r c1 _ <<<"$(stat)"
    /usr/bin/python3 -c "import sys; cpu,wall,n=float(sys.argv[1]),float(sys.argv[2]),int(sys.argv[3]); print(f'seed     rep $rep: {n} chunks in {wall:.2f} s = {n/wall:9.0f} chunks/s at {cpu/wall*100:3.0f} % of a core ({cpu/n*1e6:.2f} µs/chunk, {n/cpu:9.0f} chunks per CPU-second; process lifetime)')" "$cpu" "$(echo "$t1 - $t0" | bc)" $((c1 - c0))
    rm -rf "$W/run"
    cpu=$(cpu_of "$W/headroom" sweep --base-url $URL --model bench --prompt-tokens 64 --output-tokens 4096 \
      --concurrency "$c" --requests-per-level $((2 * c)) --warmup 0 --metrics-interval 0 --no-gpu -o "$W/run")
    "$W/runstats" "$W/run" | /usr/bin/python3 -c "import json,sys; r=json.load(sys.stdin)['rows'][0]; s=r['client_cpu_share']; print(f'headroom rep $rep: {r[\"chunks_per_s\"]:9.0f} chunks/s over the measured window at {s*100:3.0f} % of a core ({s/r[\"chunks_per_s\"]*1e6:.2f} µs/chunk, {r[\"chunks_per_s\"]/s:9.0f} chunks per CPU-second; from client_samples)')"
  done
}

if want burst && [ "$QUICK" != quick ]; then
  burst 64
fi

want streams || exit 0
echo
echo "## ${STREAMS:-10000} concurrent streams, one token per second per stream at staggered phases, 8 tokens each"
# Real-time priority here: the client is not CPU-bound (about a quarter of its core), so
# SCHED_FIFO only takes away the other processes' wake-up delays, not their CPU.
PRIO=${HOLD_PRIO-chrt -f 10}
echo "# priority: ${PRIO:-normal}"
server 1s -ttft 8s -stagger
$PRIO taskset -c 0 "$W/holdstreams" -url $URL -streams "${STREAMS:-10000}" -tokens 8 -by-second | sed 's/^/   /'
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
