#!/usr/bin/env bash
# How long headroom takes from Ctrl-C to its exit with thousands of streams
# open (issue 21's goal: one second). The test TestCtrlCWithThousandsOfStreams
# holds headroom to one second of CPU after the signal, which load does not
# inflate; the wall time is only meaningful on a quiet machine, so it is
# measured here, not asserted in CI.
#
#   bench/ctrlc.sh          # 2,000 streams
#   bench/ctrlc.sh 10000    # 10,000 (needs an open-files limit above that)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000}
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $N streams, goal 1 s"
HEADROOM_CTRLC_STREAMS=$N go test ./cmd/headroom -run '^TestCtrlCWithThousandsOfStreams$' -count 1 -v |
  grep -E 'Ctrl-C with|^(ok|FAIL|--- )'
