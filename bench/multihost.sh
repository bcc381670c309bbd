#!/usr/bin/env bash
# Many client hosts against one server: STREAMS concurrent streams (default
# 50,000) from SHARDS sweep shards (default 4), each in its own network
# namespace, against SERVERS bench/streamserver processes (default 4) that
# share one port with SO_REUSEPORT in a server namespace of their own; one
# veth pair joins each shard's namespace to the server's. One open-loop
# level of STREAMS requests arriving at RATE requests/s (the shards' bounded
# connection-open rate), each a stream of TOKENS chunks one every ITL, so
# that every stream is still open when the last one arrives; then headroom
# merge of the shards. Bounded: every process is killed after LIMIT seconds
# (default 420).
#
#   bench/multihost.sh                    # 50,000 streams, 4 shards
#   STREAMS=2000 bench/multihost.sh       # small scale, on a busy machine
#
# Why the server side looks like this (measured here, docs/performance.md):
# one process may open at most the hard open-file limit of this machine
# (20,000, and only a process with CAP_SYS_RESOURCE may raise it), so one
# streamserver cannot hold 50,000 connections; several processes share the
# port with SO_REUSEPORT. The accept backlog is net.core.somaxconn (4096 on
# this host), which is per network namespace: it is raised inside the
# server's namespace only, with tcp_max_syn_backlog, leaving the host's
# settings alone. The chunk rate is sized to two shared cores: one stream
# in ten seconds' worth of chunks each second (50,000 streams: 5,000
# chunks/s); at 1 s between chunks, 8,000 streams already made the clients
# read late by seconds (docs/performance.md).
#
# Prints per shard: requests, streams held at once (client_samples'
# open_streams), chunks/s, timestamp error p50/p99 against the server's
# pacing (bench/shardstats); the server namespace's established connections
# at their peak (ss) and its TCP counters over the run (nstat: listen
# overflows and drops, resets); the processes' CPU time; the merge's time;
# and merge time per row at three sizes (collect/merge BenchmarkMerge:
# linear when the per-row time stays flat). Needs root (namespaces), iproute2
# and Go.
#   TOKENS=8 ITL=10s   each stream: TOKENS chunks, one every ITL (staggered phases)
#   RATE=2000          arrivals per second, all shards together
#   MERGE_BENCH=0      leave out the merge benchmark
set -euo pipefail
cd "$(dirname "$0")/.."
STREAMS=${STREAMS:-50000}
SHARDS=${SHARDS:-4}
SERVERS=${SERVERS:-4}
TOKENS=${TOKENS:-8}
ITL=${ITL:-10s}
RATE=${RATE:-2000}
LIMIT=${LIMIT:-420}
[ "$(id -u)" = 0 ] || { echo "needs root (ip netns)" >&2; exit 1; }
command -v ip >/dev/null || { echo "needs ip (Debian: apt-get install -y iproute2)" >&2; exit 1; }
command -v nstat >/dev/null && command -v ss >/dev/null || { echo "needs nstat and ss (iproute2)" >&2; exit 1; }

# Every process gets the hard open-file limit; each must fit its share.
ulimit -n "$(ulimit -Hn)"
fds=$(ulimit -n)
for need in "$(( STREAMS / SHARDS + 1000 )) per shard" "$(( STREAMS / SERVERS + 1000 )) per server process"; do
  [ "${need%% *}" -le "$fds" ] || { echo "open-file limit $fds is below the $need: raise SHARDS or SERVERS" >&2; exit 1; }
done
itl_s=$(echo "$ITL" | sed 's/ms$/\/1000/; s/s$//' | bc -l)
hold=$(echo "scale=1; ($TOKENS - 1) * $itl_s / 1" | bc -l)
arrive=$(echo "scale=1; $STREAMS / $RATE" | bc -l)
if [ "$(echo "$hold <= $arrive + 5" | bc)" = 1 ]; then
  echo "streams last $hold s but arrive over $arrive s: the first would end before the last opens (raise TOKENS or ITL, or RATE)" >&2; exit 1
fi

W=$(mktemp -d /tmp/headroom-multihost.XXXXXX)
TAG=$$
SRV="hrm${TAG}-srv"
NS=()
SERVER_PIDS=()
PIDS=()
cleanup() {
  [ -n "${SS_PID:-}" ] && kill "$SS_PID" 2>/dev/null || true
  for p in "${SERVER_PIDS[@]:-}" "${PIDS[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
  for i in "${!NS[@]}"; do ip netns del "${NS[$i]}" 2>/dev/null || true; done
  ip netns del "$SRV" 2>/dev/null || true # deletes the veth pairs with it
  rm -rf "$W"
}
trap cleanup EXIT
for b in streamserver shardstats; do go build -o "$W/$b" ./bench/$b; done
go build -o "$W/headroom" ./cmd/headroom

ip netns add "$SRV"
ip -n "$SRV" link set lo up
ip netns exec "$SRV" sysctl -q -w net.core.somaxconn=65535 net.ipv4.tcp_max_syn_backlog=65535
octet=$(( 100 + TAG % 150 ))
for i in $(seq 0 $((SHARDS - 1))); do
  ns="hrm${TAG}-$i"; NS+=("$ns")
  ip netns add "$ns"
  ip link add "m${TAG}s${i}" netns "$SRV" type veth peer name "m${TAG}c${i}" netns "$ns"
  ip -n "$SRV" addr add "10.$octet.$i.1/24" dev "m${TAG}s${i}"; ip -n "$SRV" link set "m${TAG}s${i}" up
  ip -n "$ns" addr add "10.$octet.$i.2/24" dev "m${TAG}c${i}"; ip -n "$ns" link set "m${TAG}c${i}" up; ip -n "$ns" link set lo up
done
PORT=18950
for k in $(seq 1 "$SERVERS"); do
  ip netns exec "$SRV" "$W/streamserver" -addr 0.0.0.0:$PORT -reuseport -itl "$ITL" -stagger > "$W/server-$k.log" 2>&1 & SERVER_PIDS+=($!)
done
sleep 0.5
peak="$W/estab"
( while :; do ip netns exec "$SRV" ss -H -t state established "( sport = :$PORT )" | wc -l >> "$peak"; sleep 2; done ) & SS_PID=$!

echo "# many client hosts: $STREAMS streams from $SHARDS shards (network namespaces) against $SERVERS server processes (SO_REUSEPORT), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r), $(go env GOVERSION); open files per process $fds"
echo "# server namespace: somaxconn $(ip netns exec "$SRV" cat /proc/sys/net/core/somaxconn), tcp_max_syn_backlog $(ip netns exec "$SRV" cat /proc/sys/net/ipv4/tcp_max_syn_backlog) (host: $(cat /proc/sys/net/core/somaxconn), $(cat /proc/sys/net/ipv4/tcp_max_syn_backlog))"
echo "# each stream: $TOKENS chunks, one every $ITL (staggered), open $hold s; arrivals $RATE/s over $arrive s; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
START=$(date -u -d '+20 seconds' +%Y-%m-%dT%H:%M:%SZ)
t0=$(date +%s.%N)
for i in $(seq 0 $((SHARDS - 1))); do
  timeout -s KILL "$LIMIT" ip netns exec "${NS[$i]}" "$W/headroom" sweep --base-url "http://10.$octet.$i.1:$PORT" \
    --rate "$RATE" --concurrency "$STREAMS" --requests-per-level "$STREAMS" --warmup 0 --output-tokens "$TOKENS" --prompt-tokens 8 \
    --timeout 10m --no-gpu --metrics-interval 0 --shard "$i/$SHARDS" --start-at "$START" -o "$W/shard-$i" \
    > "$W/shard-$i.log" 2>&1 & PIDS+=($!)
done
fail=0
for i in "${!PIDS[@]}"; do wait "${PIDS[$i]}" || { echo "shard $i failed (rc $?):"; tail -3 "$W/shard-$i.log"; fail=1; }; done
echo "# shards done in $(echo "$(date +%s.%N) - $t0" | bc) s (including the wait for --start-at)"
kill "$SS_PID"; SS_PID=
echo "# server namespace: established connections at the peak (ss, every 2 s): $(sort -n "$peak" | tail -1)"
echo "# server namespace TCP counters over the run (nstat; a new namespace starts at 0):"
ip netns exec "$SRV" nstat -az 2>/dev/null | grep -E 'TcpExtListenOverflows|TcpExtListenDrops|TcpExtTCPReqQFullDoCookies|TcpExtTCPReqQFullDrop|TcpExtSyncookiesSent|TcpAttemptFails|TcpEstabResets|TcpOutRsts|TcpPassiveOpens|TcpExtTCPAbortOnData' | awk '{print "#   " $1, $2}'
ticks=0; for p in "${SERVER_PIDS[@]}"; do t=$(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0); ticks=$((ticks + t)); done
echo "# server processes' CPU: $(echo "scale=1; $ticks / $(getconf CLK_TCK)" | bc) s (the shards' own CPU is in shardstats below)"
dirs=(); for i in $(seq 0 $((SHARDS - 1))); do [ -f "$W/shard-$i/manifest.json" ] && dirs+=("$W/shard-$i"); done
"$W/shardstats" -itl "$ITL" "${dirs[@]}" | sed "s|$W/||"
m0=$(date +%s.%N)
"$W/headroom" merge -o "$W/merged" "${dirs[@]}" | sed "s|$W/||"
echo "# merge: $(echo "$(date +%s.%N) - $m0" | bc) s wall, $(du -sh "$W/merged" | cut -f1) written"
"$W/shardstats" -itl "$ITL" "$W/merged" | sed "s|$W/||"
if [ "${MERGE_BENCH:-1}" = 1 ]; then
  echo "# merge time per row at three sizes (4 shards, 17 rows per request):"
  go test -run XXX -bench Merge -benchtime 3x ./collect/merge | grep Benchmark
fi
exit $fail
