#!/usr/bin/env bash
# Many client hosts against one server: STREAMS concurrent streams (default
# 50,000) from SHARDS sweep shards (default 4), each in its own network
# namespace (ip netns + a veth pair), against bench/streamserver, one level
# of STREAMS streams, then headroom merge of the shards. Bounded: every
# process is killed after LIMIT seconds (default 300).
#
#   bench/multihost.sh                    # 50,000 streams, 4 shards
#   STREAMS=2000 bench/multihost.sh       # small scale, on a busy machine
#
# Prints per shard: requests, streams held at once (client_samples'
# open_streams), chunks/s, timestamp error p50/p99 against the server's
# pacing (bench/shardstats); the merge's time; and merge time per row at
# three sizes (collect/merge BenchmarkMerge: linear when the per-row time
# stays flat). Needs root (namespaces, ulimit), iproute2 and Go.
#   TOKENS=16 ITL=1s   each stream: TOKENS chunks, one every ITL (staggered phases)
#   MERGE_BENCH=0      leave out the merge benchmark
set -euo pipefail
cd "$(dirname "$0")/.."
STREAMS=${STREAMS:-50000}
SHARDS=${SHARDS:-4}
TOKENS=${TOKENS:-16}
ITL=${ITL:-1s}
LIMIT=${LIMIT:-300}
[ "$(id -u)" = 0 ] || { echo "needs root (ip netns)" >&2; exit 1; }
command -v ip >/dev/null || { echo "needs ip (Debian: apt-get install -y iproute2)" >&2; exit 1; }
ulimit -n $(( STREAMS + 10000 )) 2>/dev/null || ulimit -n "$(ulimit -Hn)"

W=$(mktemp -d /tmp/headroom-multihost.XXXXXX)
TAG=$$
NS=()
cleanup() {
  [ -n "${SERVER_PID:-}" ] && kill "$SERVER_PID" 2>/dev/null || true
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
  for i in "${!NS[@]}"; do ip link del "m${TAG}v${i}" 2>/dev/null || true; ip netns del "${NS[$i]}" 2>/dev/null || true; done
  rm -rf "$W"
}
trap cleanup EXIT
for b in streamserver shardstats; do go build -o "$W/$b" ./bench/$b; done
go build -o "$W/headroom" ./cmd/headroom

PORT=18950
"$W/streamserver" -addr 0.0.0.0:$PORT -itl "$ITL" -stagger > "$W/server.log" 2>&1 & SERVER_PID=$!
octet=$(( 100 + TAG % 150 ))
for i in $(seq 0 $((SHARDS - 1))); do
  ns="hrm${TAG}-$i"; NS+=("$ns")
  ip netns add "$ns"
  ip link add "m${TAG}v${i}" type veth peer name "m${TAG}p${i}"
  ip link set "m${TAG}p${i}" netns "$ns"
  ip addr add "10.$octet.$i.1/24" dev "m${TAG}v${i}"; ip link set "m${TAG}v${i}" up
  ip -n "$ns" addr add "10.$octet.$i.2/24" dev "m${TAG}p${i}"; ip -n "$ns" link set "m${TAG}p${i}" up; ip -n "$ns" link set lo up
done
sleep 0.5

echo "# many client hosts: $STREAMS streams from $SHARDS shards (network namespaces), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r), $(go env GOVERSION)"
echo "# each stream: $TOKENS chunks, one every $ITL (staggered); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
START=$(date -u -d '+12 seconds' +%Y-%m-%dT%H:%M:%SZ)
PIDS=()
t0=$(date +%s.%N)
for i in $(seq 0 $((SHARDS - 1))); do
  timeout -s KILL "$LIMIT" ip netns exec "${NS[$i]}" "$W/headroom" sweep --base-url "http://10.$octet.$i.1:$PORT" \
    --concurrency "$STREAMS" --requests-per-level "$STREAMS" --warmup 0 --output-tokens "$TOKENS" --prompt-tokens 8 \
    --timeout 10m --no-gpu --metrics-interval 0 --shard "$i/$SHARDS" --start-at "$START" -o "$W/shard-$i" \
    > "$W/shard-$i.log" 2>&1 & PIDS+=($!)
done
fail=0
for i in "${!PIDS[@]}"; do wait "${PIDS[$i]}" || { echo "shard $i failed (rc $?):"; tail -3 "$W/shard-$i.log"; fail=1; }; done
echo "# shards done in $(echo "$(date +%s.%N) - $t0" | bc) s (including the wait for --start-at)"
dirs=(); for i in $(seq 0 $((SHARDS - 1))); do [ -f "$W/shard-$i/manifest.json" ] && dirs+=("$W/shard-$i"); done
"$W/shardstats" -itl "$ITL" "${dirs[@]}" | sed "s|$W/||"
m0=$(date +%s.%N)
"$W/headroom" merge -o "$W/merged" "${dirs[@]}" | sed "s|$W/||"
echo "# merge: $(echo "$(date +%s.%N) - $m0" | bc) s wall, $(du -sh "$W/merged" | cut -f1) written"
if [ "${MERGE_BENCH:-1}" = 1 ]; then
  echo "# merge time per row at three sizes (4 shards, 17 rows per request):"
  go test -run XXX -bench Merge -benchtime 3x ./collect/merge | grep Benchmark
fi
exit $fail
