#!/usr/bin/env bash
# Times compare and index over replayed archives of 100, 1,000 and 10,000
# runs from local disk (BenchmarkArchiveScale) and prints, per step, the CPU
# per run, the peak live heap and how the CPU grows from one size to the
# next (1.00 = linear), with the machine's load beside them
# (docs/performance.md, "Archives at scale").
#
#   bash bench/archive-scale.sh [SIZES] [STEPS]
#
# SIZES defaults to 100,1000,10000; STEPS is a regular expression of the
# benchmark's steps (default: every step): compare (the full path, filling a
# cache), compare-cached, index, index-cached, index-again, summaries (what
# each run's sweep pays at close), compare-own and index-own (every run
# read from its own summary). ARCHIVE_DIR (default /tmp/headroom-archive)
# keeps the generated archives: the 10,000-run one takes ~20 minutes to
# make and 1.2 GB. For the S3 ratio, run bench/archive-s3.sh on one of them.
set -euo pipefail
sizes=${1:-100,1000,10000}
steps=${2:-.*}
root=$(cd "$(dirname "$0")/.." && pwd)
export HEADROOM_ARCHIVE_DIR=${ARCHIVE_DIR:-/tmp/headroom-archive} HEADROOM_ARCHIVE_SIZES=$sizes
mkdir -p "$HEADROOM_ARCHIVE_DIR"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
(cd "$root" && go test ./analyze/compare -run '^$' -bench "ArchiveScale/($steps)/" -benchtime 1x -timeout 3h) | tee "$out"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
awk '
/^BenchmarkArchiveScale\// {
  split($1, p, "/"); step = p[2]; n = p[3]; sub(/^runs=/, "", n); sub(/-[0-9]+$/, "", n)
  for (i = 2; i <= NF; i++) { if ($i == "cpu-s/op") cpu = $(i-1); if ($i == "peak-heap-MiB") heap = $(i-1); if ($i == "ns/op") wall = $(i-1) / 1e9 }
  if (!(step in seen)) { order[++k] = step; seen[step] = 1 }
  key = step SUBSEP n; c[key] = cpu; h[key] = heap; w[key] = wall; sizes[n] = 1
}
END {
  m = 0; for (s in sizes) ns[++m] = s + 0
  for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (ns[j] < ns[i]) { t = ns[i]; ns[i] = ns[j]; ns[j] = t }
  printf "%-15s %8s %9s %9s %12s %10s %s\n", "step", "runs", "wall s", "CPU s", "CPU/run ms", "heap MiB", "growth vs the size before (1.00 = linear)"
  for (s = 1; s <= k; s++) {
    prev = ""
    for (i = 1; i <= m; i++) {
      key = order[s] SUBSEP ns[i]
      if (!(key in c)) continue
      g = ""
      if (prev != "" && c[prev] > 0) g = sprintf("%.2f", (c[key] / c[prev]) / (ns[i] / pn))
      printf "%-15s %8d %9.2f %9.2f %12.3f %10.1f %s\n", order[s], ns[i], w[key], c[key], 1000 * c[key] / ns[i], h[key], g
      prev = key; pn = ns[i]
    }
  }
}' "$out"
