#!/usr/bin/env bash
# Load generator benchmark: the seed's Python client (script 02, verbatim in
# bench/seed/) against `headroom sweep`, both streaming from the same Go
# server (bench/streamserver), client pinned to core 0 and server to core 1,
# candidates alternated back to back (the machine is noisy: compare ratios).
#
#   bench/run.sh [quick]      # results on stdout; paste into docs/performance.md
#   ONLY="paced burst streams" bench/run.sh   # a subset of the scenarios
#                             (paced10 or paced1: one of the two paced comparisons)
#
# It ends each paced comparison with the ratio the issue asks for: the most
# chunks per second each client ingests without falling behind (TPOT p50
# within 10 % of the pacing in every repetition, and at every lower level).
#
# Needs: taskset, curl, Python with aiohttp (Debian: apt-get install -y
# python3-aiohttp, run with /usr/bin/python3), and Go unless BIN is given.
# The seed runs stock (no MALLOC_* tuning). Environment:
#   PYTHON=/usr/bin/python3   the seed's interpreter (needs aiohttp)
#   BIN=dir                   prebuilt headroom, streamserver, runstats, holdstreams
#                             (a GPU box has no Go: build them CGO_ENABLED=0 here)
#   CLIENT_CPUS=0 SERVER_CPUS=1   taskset lists; give the server more cores to
#                             take it out of the way (it is the limit on 2 cores)
#   LEVELS_1MS=16,64,128,256,512  the levels paced at 1 ms per token
#   REPS=2 PRIO="nice -n -10" HOLD_PRIO="chrt -f 10" STREAMS=10000
set -euo pipefail
cd "$(dirname "$0")/.."
W=$(mktemp -d /tmp/headroom-bench.XXXXXX)
trap 'if [ -n "${SERVER_PID:-}" ]; then kill "$SERVER_PID" 2>/dev/null || true; fi; rm -rf "$W"' EXIT
PORT=8931
URL=http://127.0.0.1:$PORT
REPS=${REPS:-2}
QUICK=${1:-}
PYTHON=${PYTHON:-/usr/bin/python3}
CLIENT_CPUS=${CLIENT_CPUS:-0}
SERVER_CPUS=${SERVER_CPUS:-1}
# The machine is shared: both sides of both candidates run at a higher priority
# than the rest (PRIO="" turns that off).
PRIO=${PRIO-nice -n -10}

if [ -n "${BIN:-}" ]; then
  for b in headroom streamserver runstats holdstreams; do cp "$BIN/$b" "$W/$b"; done
  goversion=$("$W/headroom" version 2>/dev/null | grep -o 'go[0-9.]*' | head -1 || true)
else
  for b in streamserver runstats holdstreams; do go build -o "$W/$b" ./bench/$b; done
  go build -o "$W/headroom" ./cmd/headroom
  goversion=$(go env GOVERSION)
fi
"$PYTHON" -c 'import aiohttp' 2>/dev/null || { echo "need aiohttp for $PYTHON (Debian: apt-get install -y python3-aiohttp)" >&2; exit 1; }

echo "# load generator benchmark, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r), ${goversion:-go ?}, python $("$PYTHON" -V 2>&1 | cut -d' ' -f2), aiohttp $("$PYTHON" -c 'import aiohttp; print(aiohttp.__version__)')"
echo "# priority: ${PRIO:-normal}; client on CPUs $CLIENT_CPUS, server on CPUs $SERVER_CPUS"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

server() { # itl [extra flags]
  if [ -n "${SERVER_PID:-}" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  $PRIO taskset -c "$SERVER_CPUS" "$W/streamserver" -addr 127.0.0.1:$PORT -itl "$@" & SERVER_PID=$!
  for _ in $(seq 50); do curl -sf $URL/v1/models >/dev/null 2>&1 && return; sleep 0.1; done
  echo "bench server did not start" >&2; exit 1
}
stat() { curl -s $URL/stats | "$PYTHON" -c 'import json,sys; d=json.load(sys.stdin); print(d["chunks"], d["cpu_s"])'; }

# cpu_of CMD...: runs CMD pinned to the client's CPUs and prints its user+sys CPU seconds (bash `times`).
cpu_of() {
  ( $PRIO taskset -c "$CLIENT_CPUS" "$@" >"$W/client.out" 2>"$W/client.err"; times ) | tail -1 |
    "$PYTHON" -c 'import sys,re; t=[float(m)*60+float(s) for m,s in re.findall(r"(\d+)m([\d.]+)s", sys.stdin.read())]; print(sum(t))'
}

# one candidate at one pacing and set of levels: prints "cpu_s chunks" and leaves per-level JSON in $W/$1.json
run_candidate() { # name levels output_tokens
  local name=$1 levels=$2 out=$3
  read -r c0 _ <<<"$(stat)"
  if [ "$name" = seed ]; then
    cpu=$(cpu_of "$PYTHON" bench/seed/02_serving_sweep.py --base-url $URL --model bench \
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
      "$PYTHON" - "$W/$name.json" "$name" "$rep" "$cpu" "$chunks" "$itl" "$W/kept.tsv" <<'PY'
import json, sys
path, name, rep, cpu, chunks, itl, kept = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
rows = json.load(open(path))["rows"]
print(f"{name:8s} rep {rep}: client CPU {cpu:.2f} s for {chunks} chunks = {cpu/chunks*1e6:.1f} µs/chunk")
with open(kept, "a") as k:
    for r in rows:
        c = int(r["concurrency"])
        tpot_err = (r["tpot_p50_ms"] - itl) / itl * 100
        rate = c * 1000 / r["tpot_p50_ms"] if r["tpot_p50_ms"] > 0 else 0
        print(f"   c={c:4d}  TTFT p50 {r['ttft_p50_ms']:8.2f} ms  p99 {r['ttft_p99_ms']:8.2f} ms   TPOT p50 {r['tpot_p50_ms']:7.3f} ms ({tpot_err:+6.1f} %)  p99 {r['tpot_p99_ms']:7.3f} ms   ~{rate:8.0f} chunks/s")
        k.write(f"{name}\t{c}\t{tpot_err}\n")
PY
    done
  done
  kept_up "$itl" "$levels"
}

# kept_up ITL_MS LEVELS: from this comparison's rows, the most chunks per second
# (concurrency × 1000/ITL, offered by the server) each client ingests without
# falling behind, and their ratio. A level counts only when every repetition
# kept TPOT p50 within 10 % of the pacing and every lower level did too; a
# client that kept up at the highest level gets "≥" (the bench, not the
# client, set its limit).
kept_up() {
  "$PYTHON" - "$W/kept.tsv" "$1" "$2" <<'PY'
import sys
path, itl, levels = sys.argv[1], float(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")]
ok = {}
for line in open(path):
    name, c, err = line.split("\t")
    ok.setdefault(name, {}).setdefault(int(c), []).append(abs(float(err)) <= 10)
best = {}
for name in ("seed", "headroom"):
    top, bounded = 0, True
    for c in levels:
        if not all(ok.get(name, {}).get(c, [False])):
            break
        top = c
    else:
        bounded = False
    rate = top * 1000 / itl
    best[name] = (rate, bounded)
    how = f"{rate:,.0f} chunks/s (c = {top})" if top else "not even the first level"
    print(f"kept up ({itl:g} ms pacing): {name:8s} {'' if bounded else '≥ '}{how}")
(s, sb), (h, hb) = best["seed"], best["headroom"]
if not sb:
    print("ratio headroom/seed: not measured here (the seed kept up at every level; add higher levels)")
elif s > 0:
    print(f"ratio headroom/seed: {'' if hb else '≥ '}{h / s:.1f}×")
PY
  rm -f "$W/kept.tsv"
}

ONLY=${ONLY:-paced burst streams}
want() { [[ " $ONLY " == *" $1 "* ]]; }
if [ "$QUICK" = quick ]; then
  want paced && compare 10 4,64 64
else
  if want paced || want paced10; then compare 10 4,32,128,256 128; fi
  if want paced || want paced1; then compare 1 "${LEVELS_1MS:-16,64,128,256,512}" 128; fi
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
    cpu=$(cpu_of "$PYTHON" bench/seed/02_serving_sweep.py --base-url $URL --model bench \
      --prompt-tokens 64 --output-tokens 4096 --levels "$c" --rounds 2 --out "$W/seed.json")
    t1=$(date +%s.%N)
    read -r c1 _ <<<"$(stat)"
    "$PYTHON" -c "import sys; cpu,wall,n=float(sys.argv[1]),float(sys.argv[2]),int(sys.argv[3]); print(f'seed     rep $rep: {n} chunks in {wall:.2f} s = {n/wall:9.0f} chunks/s at {cpu/wall*100:3.0f} % of a core ({cpu/n*1e6:.2f} µs/chunk, {n/cpu:9.0f} chunks per CPU-second; process lifetime)')" "$cpu" "$("$PYTHON" -c "print($t1 - $t0)")" $((c1 - c0))
    rm -rf "$W/run"
    cpu=$(cpu_of "$W/headroom" sweep --base-url $URL --model bench --prompt-tokens 64 --output-tokens 4096 \
      --concurrency "$c" --requests-per-level $((2 * c)) --warmup 0 --metrics-interval 0 --no-gpu -o "$W/run")
    # The measured window's rate, and CPU from client_samples when the window
    # held one (a burst shorter than the sampling interval has none).
    "$W/runstats" "$W/run" | "$PYTHON" -c "import json,sys; r=json.load(sys.stdin)['rows'][0]; s=r['client_cpu_share']; n=r['chunks_per_s']; cpu=f'at {s*100:3.0f} % of a core ({s/n*1e6:.2f} µs/chunk, {n/s:9.0f} chunks per CPU-second; from client_samples)' if s > 0 else '(window shorter than one client sample; process CPU: $cpu s for the run)'; print(f'headroom rep $rep: {n:9.0f} chunks/s over the measured window {cpu}')"
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
# headroom's load generator, then the minimal raw-TCP client (holdstreams -floor):
# the floor that the server, the kernel and the Go runtime set on this host.
for rep in $(seq "$REPS"); do
  for floor in false true; do
    $PRIO taskset -c "$CLIENT_CPUS" "$W/holdstreams" -url $URL -streams "${STREAMS:-10000}" -tokens 8 -by-second -floor=$floor | sed 's/^/   /'
  done
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
