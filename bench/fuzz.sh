#!/usr/bin/env bash
# Runs every native Go fuzz target of headroom (func Fuzz... in any
# package) with `go test -fuzz`, one after the other, for a given time each.
#
#   bench/fuzz.sh            # 10 minutes per target (the issue's figure)
#   bench/fuzz.sh --light 1s # CI: a short run of the targets that build fast
#   ONLY=FuzzReadParquet bench/fuzz.sh 2m    # targets whose name matches a regexp
#
# --light skips the targets whose test binary links arrow-go (the run
# directory's Parquet code, which brings Flight, gRPC and protobuf): a fuzz
# build instruments every package it links, and that tree alone costs
# about 300 s of CPU on a 2-core machine with a fresh build cache, against
# about 40 s for the standard library. The skipped targets still run their
# seed corpus in every `go test`; the long run fuzzes them all.
#
# A crasher fails the run: Go writes the input to the package's
# testdata/fuzz/<Target>/ and prints how to re-run it; commit it, and it
# becomes a regression test that every `go test` runs. The script prints
# one line per target (name, time, executions) and a summary at the end.
#
# Go 1.26's fuzz coordinator can end a run with "context deadline exceeded"
# and no failing input when -fuzztime expires while a worker is busy
# (go.dev/issue/75804, fixed in Go 1.27): such a run counts as passed, and
# is marked "ok*", only when no new input was written.
#
# Environment: FUZZ_PARALLEL (workers per target; default 1, as the
# machine is shared), FUZZ_JOBS (targets fuzzed at the same time, default
# 1; CI uses one per CPU: a target with one worker keeps about one core
# busy, so on an idle machine each target gets the executions it would get
# alone, in a fraction of the wall time), FUZZ_MINIMIZE (time to minimize a new input; default
# 10s, so that a slow target does not spend its budget minimizing), ONLY.
set -euo pipefail
cd "$(dirname "$0")/.."

LIGHT=0
if [ "${1:-}" = --light ]; then
  LIGHT=1
  shift
fi
FUZZTIME=${1:-10m}
PARALLEL=${FUZZ_PARALLEL:-1}
JOBS=${FUZZ_JOBS:-1}
MINIMIZE=${FUZZ_MINIMIZE:-10s}
ONLY=${ONLY:-.}

# package<TAB>target for every fuzz target, from the test sources.
targets=$(grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(' . |
  grep -v '/testdata/' |
  sed -E 's|^\./(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+)\(|./\1\t\2|' |
  sort -u | awk -F'\t' -v only="$ONLY" '$2 ~ only')
if [ -z "$targets" ]; then
  echo "fuzz.sh: no fuzz target matches ONLY=$ONLY" >&2
  exit 2
fi

if ((LIGHT)); then
  light=""
  skipped=""
  declare -A heavy=() # package -> 1 if its test binary links arrow-go
  while IFS=$'\t' read -r pkg target; do
    if [ -z "${heavy[$pkg]:-}" ]; then
      # The list first, then grep: grep -q stopping early would fail go list under pipefail.
      deps=$(go list -deps -test "$pkg" </dev/null)
      heavy[$pkg]=0
      if grep -q '^github.com/apache/arrow-go/' <<<"$deps"; then heavy[$pkg]=1; fi
    fi
    if ((heavy[$pkg])); then
      skipped+="$target "
    else
      light+="$pkg"$'\t'"$target"$'\n'
    fi
  done <<<"$targets"
  targets=${light%$'\n'}
  echo "# --light: not fuzzing (they link arrow-go; their seeds run in go test): ${skipped:-none}"
  if [ -z "$targets" ]; then
    echo "fuzz.sh: no target left with --light" >&2
    exit 2
  fi
fi

n=$(printf '%s\n' "$targets" | wc -l)
echo "# fuzzing $n targets for $FUZZTIME each, $JOBS at a time ($PARALLEL worker(s) each, minimize $MINIMIZE), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# go $(go env GOVERSION), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
# One target: its result line (and, when it failed, its log's tail) on stdout.
fuzz_one() {
  local pkg=$1 target=$2 t0 log corpus before status execs
  t0=$(date +%s)
  log=$(mktemp)
  corpus="$pkg/testdata/fuzz/$target"
  before=$(ls "$corpus" 2>/dev/null | sort || true)
  if go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$MINIMIZE" \
      -parallel "$PARALLEL" </dev/null >"$log" 2>&1; then
    status=ok
  elif grep -q 'context deadline exceeded' "$log" && [ "$(ls "$corpus" 2>/dev/null | sort || true)" = "$before" ]; then
    status='ok*' # go.dev/issue/75804: the deadline, no failing input
  else
    status=FAIL
  fi
  execs=$(grep -Eo 'execs: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
  printf '%-4s %-44s %-34s %4ss  %s execs\n' "$status" "$target" "$pkg" "$(( $(date +%s) - t0 ))" "${execs:-?}"
  if [ "$status" = FAIL ]; then
    sed 's/^/     /' "$log" | tail -40
  fi
  rm -f "$log"
}

# FUZZ_JOBS targets at a time, each printing its lines when it ends.
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
start=$(date +%s)
i=0
while IFS=$'\t' read -r pkg target; do
  while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n || true; done
  i=$((i + 1))
  ( fuzz_one "$pkg" "$target" >"$results/$i"; cat "$results/$i" ) &
done <<<"$targets"
wait
failed=()
for f in "$results"/*; do
  if read -r status target pkg _ <"$f" && [ "$status" = FAIL ]; then failed+=("$pkg $target"); fi
done

echo "# $n targets in $(( $(date +%s) - start ))s; ${#failed[@]} failed"
if ((${#failed[@]})); then
  printf '#   %s\n' "${failed[@]}"
  echo "# the failing inputs are under each package's testdata/fuzz/: commit them as regression tests"
  exit 1
fi
