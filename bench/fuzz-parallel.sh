#!/usr/bin/env bash
# Runs every fuzz target of prebuilt fuzzing test binaries at the same time,
# for machines without Go (a GPU box) or with many cores: bench/fuzz.sh runs
# the targets one after the other through `go test`.
#
#   # here: one instrumented test binary per package with fuzz targets
#   bench/fuzz-parallel.sh build bin/fuzz
#   # there (from the repository root, so each target finds its seed corpus):
#   bench/fuzz-parallel.sh run bin/fuzz 7m [OUT]
#   ONLY='^(FuzzReadParquet|FuzzLineScanner)$' bench/fuzz-parallel.sh run ...   # some targets
#
# `run` starts one process per target (one worker each), waits, and prints a
# line per target (status, executions, new corpus entries) and a summary. A
# crasher is written, as by go test, to the package's testdata/fuzz/<Target>/;
# with OUT they are also copied to OUT/crashers.tar, the logs to
# OUT/logs.tar.gz and the generated corpus to OUT/cache.tar.gz (few files, as
# a device machine returns only a handful).
#
# FUZZ_CACHE=DIR keeps the generated corpus (go's fuzz cache, one folder per
# target) in DIR instead of a temporary folder, so that a later run, here or
# on another machine after unpacking cache.tar.gz into DIR, goes on from
# where this one stopped rather than from the seeds.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
build)
  dir=${2:?usage: fuzz-parallel.sh build DIR}
  mkdir -p "$dir"
  grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(' . | grep -v '/testdata/' |
    xargs -n1 dirname | sort -u | while read -r pkg; do
      name=$(echo "${pkg#./}" | tr / _)
      # -fuzz with -c builds the coverage instrumentation fuzzing needs.
      CGO_ENABLED=0 go test -c -fuzz=. -ldflags="-s -w" -o "$dir/$name.test" "$pkg"
      echo "built $dir/$name.test"
    done
  ;;
run)
  dir=${2:?usage: fuzz-parallel.sh run DIR TIME [OUT]}
  fuzztime=${3:?usage: fuzz-parallel.sh run DIR TIME [OUT]}
  out=${4:-}
  if [ -n "$out" ]; then out=$(realpath -m "$out"); fi
  logs=$(mktemp -d)
  trap 'rm -rf "$logs"' EXIT
  cache=${FUZZ_CACHE:-$logs/cache}
  mkdir -p "$cache"
  cache=$(realpath "$cache")
  echo "# fuzzing in parallel for $fuzztime each, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs"
  for bin in "$dir"/*.test; do
    pkg=$(basename "$bin" .test | tr _ /)
    for target in $("$bin" -test.list '^Fuzz' | grep '^Fuzz' | grep -E "${ONLY:-.}"); do
      ls "$pkg/testdata/fuzz/$target" 2>/dev/null | sort >"$logs/$target.before" || true
      abs=$(realpath "$bin")
      (cd "$pkg" && "$abs" -test.run='^$' -test.fuzz="^$target\$" \
        -test.fuzztime="$fuzztime" -test.parallel=1 -test.fuzzminimizetime=10s \
        -test.fuzzcachedir="$cache/$target" >"$logs/$target.log" 2>&1; echo $? >"$logs/$target.rc") &
      echo "$pkg $target" >>"$logs/targets"
    done
  done
  wait # every target's process (a list of PIDs can return before the last ends)
  failed=0
  : >"$logs/crashers"
  while read -r pkg target; do
    rc=$(cat "$logs/$target.rc" 2>/dev/null || echo "no exit status")
    execs=$(grep -Eo 'execs: [0-9]+' "$logs/$target.log" | tail -1 | cut -d' ' -f2 || true)
    corpus=$(grep -Eo 'total: [0-9]+' "$logs/$target.log" | tail -1 | cut -d' ' -f2 || true)
    comm -13 "$logs/$target.before" <(ls "$pkg/testdata/fuzz/$target" 2>/dev/null | sort) |
      sed "s|^|$pkg/testdata/fuzz/$target/|" >>"$logs/crashers"
    new=$(comm -13 "$logs/$target.before" <(ls "$pkg/testdata/fuzz/$target" 2>/dev/null | sort) | wc -l)
    status=ok
    if [ "$rc" != 0 ]; then
      # go.dev/issue/75804 (fixed in Go 1.27): the deadline can end a run
      # with "context deadline exceeded" and no failing input.
      if grep -q 'context deadline exceeded' "$logs/$target.log" && [ "$new" = 0 ]; then status='ok*'; else status=FAIL; failed=$((failed + 1)); fi
    fi
    printf '%-4s %-28s %-24s %10s execs  corpus %5s  crashers %s\n' "$status" "$target" "$pkg" "${execs:-?}" "${corpus:-?}" "$new"
  done <"$logs/targets"
  if [ -n "$out" ]; then
    mkdir -p "$out"
    (cd "$logs" && tar -czf "$out/logs.tar.gz" ./*.log)
    tar -czf "$out/cache.tar.gz" -C "$cache" .
    if [ -s "$logs/crashers" ]; then tar -cf "$out/crashers.tar" -T "$logs/crashers"; fi
  fi
  echo "# $(wc -l <"$logs/targets") targets, $failed failed"
  [ "$failed" = 0 ]
  ;;
*)
  echo "usage: fuzz-parallel.sh build DIR | run DIR TIME [OUT]" >&2
  exit 2
  ;;
esac
