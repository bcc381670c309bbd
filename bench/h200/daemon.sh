# Sourced by bench/h200/llamacpp.sh and bench/h200/tp-vs-replicas.sh: how a plan runs as a daemon on
# the device. The device tool runs one command for at most 10 minutes, and a warm machine keeps /tmp
# between calls, so `start` launches the plan in its own process session (which outlives the call)
# working in $W, and waits; `collect` waits for more of it. Both end by packing every step finished
# since the last pack into $OUT (tar.gz, split below 16 MiB) and printing a status.
#
# The sourcing script sets W, and defines plan (the steps, each ending with done_step NAME),
# step_files NAME (the files under $W a finished step ships), extra_files NAMES... (files shipped
# with any pack whatever finished) and show_status; then it ends with `daemon_main "$HERE/<itself>" "$@"`.

log() { echo "[$(date -u +%H:%M:%S) +$((SECONDS))s] $*" | tee -a "$W/plan.log"; }
done_step() { touch "$W/done/$1"; log "done $1"; }
skipped() { case " ${SKIP:-} " in *" $1 "*) return 0 ;; esac; [ -e "$W/done/$1" ]; }

pack() { # label
  local label=$1 new=() files=() s d f
  mkdir -p "$W/shipped"
  for d in "$W"/done/*; do
    [ -e "$d" ] || continue
    s=$(basename "$d")
    [ -e "$W/shipped/$s" ] || new+=("$s")
  done
  for f in $(for s in "${new[@]}"; do step_files "$s"; done; extra_files "${new[@]}"); do
    [ -e "$W/$f" ] && files+=("$f")
  done
  cp "$W/plan.log" "$OUT/plan-$label.log" 2> /dev/null
  tail -c 200000 "$W/build.log" > "$OUT/build-$label.log" 2> /dev/null
  if [ ${#files[@]} -gt 0 ]; then
    tar -czf "$W/pack-$label.tar.gz" -C "$W" "${files[@]}" &&
      split -b 15m -d "$W/pack-$label.tar.gz" "$OUT/runs-$label.tar.gz." &&
      for s in "${new[@]}"; do touch "$W/shipped/$s"; done
  fi
  echo "packed: ${new[*]:-nothing}"
  ls -la "$OUT"
}

wait_plan() { # deadline_s
  while [ $SECONDS -lt "$1" ]; do
    [ -e "$W/plan.pid" ] && kill -0 "$(cat "$W/plan.pid")" 2> /dev/null || break
    sleep 5
  done
}

start_plan() { # script
  mkdir -p "$W"
  setsid nohup bash "$1" plan > "$W/plan.out" 2>&1 < /dev/null &
  echo $! > "$W/plan.pid"
}

daemon_main() { # script start|collect [deadline_s] | plan
  local script=$1
  shift
  case ${1:-} in
  plan) plan ;;
  start)
    start_plan "$script"
    wait_plan "${2:-560}"
    pack 1
    show_status
    ;;
  collect)
    [ -d "$W/done" ] || { echo "fresh machine: starting the plan again (skip: ${SKIP:-none})"; start_plan "$script"; }
    wait_plan "${2:-570}"
    pack "${LABEL:-2}"
    show_status
    ;;
  *) echo "usage: $script start|collect [deadline_s] | plan" >&2; exit 2 ;;
  esac
}
