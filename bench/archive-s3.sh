#!/usr/bin/env bash
# Times `headroom compare` and `headroom index` on one archive from local disk
# and from a loopback SeaweedFS S3 server: compare the first time (filling
# --cache; runs holding their own summary read it) and again (from the
# cache), and index into a new dataset, printing wall and CPU seconds, max
# RSS, the cost per run and the S3 / local ratios (docs/performance.md,
# "Archives at scale").
#
#   [ROUNDS=2] [HEADROOM_BIN=path] bash bench/archive-s3.sh ARCHIVE_DIR
#
# ARCHIVE_DIR is an archive made by BenchmarkArchiveScale (HEADROOM_ARCHIVE_DIR,
# e.g. /tmp/arch/n100). Needs the SeaweedFS binary of .ci/install-seaweedfs.sh.
# HEADROOM_BIN times another build (it must upload a whole directory, as
# this version's does); without it the script builds the working tree's.
set -euo pipefail
archive=${1:?usage: bench/archive-s3.sh ARCHIVE_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
weed_pid=""
cleanup() {
  if [ -n "$weed_pid" ]; then kill -- "-$weed_pid" 2>/dev/null || true; wait "$weed_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

weed=${HEADROOM_WEED:-$(bash "$root/.ci/install-seaweedfs.sh")}
hr=${HEADROOM_BIN:-}
if [ -z "$hr" ]; then
  (cd "$root" && go build -o "$work/headroom" ./cmd/headroom)
  hr="$work/headroom"
fi

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
p=(); for _ in 1 2 3 4 5 6 7 8; do p+=("$(port)"); done
mkdir -p "$work/weed"
setsid "$weed" server -dir="$work/weed" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
  -master.port="${p[0]}" -master.port.grpc="${p[1]}" -volume.port="${p[2]}" -volume.port.grpc="${p[3]}" \
  -filer -filer.port="${p[4]}" -filer.port.grpc="${p[5]}" -s3 -s3.port="${p[6]}" -s3.port.grpc="${p[7]}" \
  -s3.port.iceberg=0 -s3.port.lance=0 -volume.max=64 -master.volumeSizeLimitMB=64 \
  -filer.localSocket="$work/weed/filer.sock" -s3.localSocket="$work/weed/s3.sock" >"$work/weed.log" 2>&1 &
weed_pid=$!
export AWS_ENDPOINT_URL_S3="http://127.0.0.1:${p[6]}" AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret \
  AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE="$work/none" AWS_SHARED_CREDENTIALS_FILE="$work/none" \
  XDG_CACHE_HOME="$work/xdg"
for _ in $(seq 300); do
  curl -sf -X PUT "$AWS_ENDPOINT_URL_S3/bench" >/dev/null 2>&1 && break
  sleep 0.3
done

# CPU seconds (user + sys) the SeaweedFS server has used so far
weedCPU() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f\n", ($14 + $15) / hz }' "/proc/$weed_pid/stat"; }
timeWait() { ss -tan state time-wait "( dport = :${p[6]} or sport = :${p[6]} )" | tail -n +2 | wc -l; }

n=$(find "$archive" -name manifest.json | wc -l)
before=$(weedCPU); start=$(date +%s.%N)
"$hr" upload "$archive" s3://bench/archive >/dev/null
echo "uploaded $n runs in $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s (server CPU $(awk -v a="$before" -v b="$(weedCPU)" 'BEGIN { printf "%.1f", b - a }') s); load average $(cut -d' ' -f1-3 /proc/loadavg)"

# one timed command: prints "wall_s cpu_s max_rss_mb"
# (and, in $work/server, "server CPU s, TIME-WAIT connections" for S3)
timedCmd() {
  local w0 tw
  w0=$(weedCPU); tw=$(timeWait)
  /usr/bin/time -f '%e %U %S %M' -o "$work/t" "$hr" "$@" >/dev/null
  awk -v a="$w0" -v b="$(weedCPU)" -v t0="$tw" -v t1="$(timeWait)" 'BEGIN { printf "server CPU %.2f s, %d connections closed", b - a, t1 - t0 }' >"$work/server"
  awk '{printf "%.2f %.2f %.0f\n", $1, $2 + $3, $4 / 1024}' "$work/t"
}
timed() { timedCmd compare "$@" -o "$work/out" --format none --group-by engine.version; }
srv() { if [ "$1" = s3 ]; then echo "; $(cat "$work/server")"; fi; }
declare -A wall
for round in $(seq "${ROUNDS:-2}"); do
  for where in local s3; do
    src=$archive; [ "$where" = s3 ] && src=s3://bench/archive
    cache="$work/cache-$where-$round"
    read -r w c r < <(timed "$src" --cache "$cache")
    echo "round $round  $where  first (fills the cache): wall ${w} s, CPU ${c} s, max RSS ${r} MB$(srv "$where")"
    wall[$where-first-$round]=$w
    read -r w c r < <(timed "$src" --cache "$cache")
    echo "round $round  $where  from the cache:          wall ${w} s, CPU ${c} s, max RSS ${r} MB$(srv "$where")"
    wall[$where-cached-$round]=$w
    dest="$work/index-$where-$round"; [ "$where" = s3 ] && dest=s3://bench/index-$round
    read -r w c r < <(timedCmd index "$src" -o "$dest")
    echo "round $round  $where  index, new dataset:      wall ${w} s, CPU ${c} s, max RSS ${r} MB ($(awk -v w="$w" -v n="$n" 'BEGIN { printf "%.2f", 1000 * w / n }') ms wall per run)$(srv "$where")"
    wall[$where-index-$round]=$w
  done
done
for round in $(seq "${ROUNDS:-2}"); do
  for k in first cached index; do
    awk -v s="${wall[s3-$k-$round]}" -v l="${wall[local-$k-$round]}" -v k="$k" -v r="$round" \
      'BEGIN { printf "round %s  %-6s S3 / local = %.2f\n", r, k, s / l }'
  done
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
