#!/usr/bin/env bash
# Issue 20 (energy): does the GPU's NVML total-energy counter (nvmlDeviceGetTotalEnergyConsumption,
# recorded since this change as gpu_telemetry.energy_mj) agree with NVML's power samples integrated
# over time (what headroom falls back to, and what every run recorded before the counter has)?
#
# Two `headroom probe`s on the H200 (the default bf16 one, then `--dtype bf16,fp8`, longer: the GEMM
# and bandwidth sweeps swing the GPU between ~130 W idle and its 700 W limit, and the probe records
# gpu_telemetry every 50 ms), then bench/energycheck on each, per GPU, over the whole probe and
# over consecutive 2 s slices: the counter's difference between the first and last sample against
# trapezoids over power_w, and their ratio; also with every 20th sample only (1 s apart, nearer a
# sweep's 0.5 s interval).
#
#   prepare (here, in the tree that carries it):  bash bench/h200/energy-check.sh prepare
#     → builds .device/energy/headroom.gz and energycheck.gz (CGO_ENABLED=0, ~10 MB together) and
#       copies this script next to them
#   call (device kind nvidia-h200, carry [".device/energy"], ~2 min):
#        bash .device/energy/energy-check.sh run
#     → prints the comparison; $OUT/energy-check.tar.gz holds the probe run and the printout
#
# Needs on the box: the NVIDIA driver (NVML) and CUDA's cuBLAS (both there,
# /work/shared/notes/gpu-box.md). Nothing is installed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
case ${1:-} in
prepare)
  cd "$HERE/../.."
  DEST=${DEST:-.device/energy}
  mkdir -p "$DEST"
  CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$DEST/headroom" ./cmd/headroom &&
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$DEST/energycheck" ./bench/energycheck &&
    gzip -6 -f "$DEST/headroom" "$DEST/energycheck" &&
    cp bench/h200/energy-check.sh "$DEST/" &&
    ls -la "$DEST"
  exit $?
  ;;
run) ;;
*)
  echo "usage: $0 prepare|run" >&2
  exit 2
  ;;
esac

OUT=${OUT:-/tmp/energy-check-out}
W=${W:-/tmp/energy-check}
mkdir -p "$OUT" "$W"
pack() { tar -czf "$OUT/energy-check.tar.gz" --exclude=./headroom --exclude=./energycheck -C "$W" . 2>/dev/null; ls -la "$OUT"; }
trap pack EXIT
gunzip -c "$HERE/headroom.gz" > "$W/headroom" && chmod +x "$W/headroom" || exit 1
nvidia-smi --query-gpu=name,driver_version,power.draw,power.limit,enforced.power.limit --format=csv > "$W/nvidia-smi.csv" 2>&1
cat "$W/nvidia-smi.csv"
"$W/headroom" version
gunzip -c "$HERE/energycheck.gz" > "$W/energycheck" && chmod +x "$W/energycheck" || exit 1
echo "== headroom probe, twice (telemetry every 50 ms, the energy counter with each sample)"
timeout -s INT 200 "$W/headroom" probe -o "$W/probe" > "$W/probe.out" 2>&1
echo "probe exit $?"
tail -3 "$W/probe.out"
timeout -s INT 200 "$W/headroom" probe --dtype bf16,fp8 -o "$W/probe-fp8" > "$W/probe-fp8.out" 2>&1
echo "probe --dtype bf16,fp8 exit $?"
tail -3 "$W/probe-fp8.out"
for run in probe probe-fp8; do
  [ -d "$W/$run/gpu_telemetry" ] || continue
  echo "== $run"
  "$W/energycheck" "$W/$run"
done 2>&1 | tee "$W/energy-check.txt"
