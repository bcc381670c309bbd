#!/usr/bin/env bash
# Issue 24 on the nvidia-h200-x2 device kind: one model tensor-parallel over both H200s against two
# independent replicas (one llama-server per GPU) behind headroom's own balancer, swept at the same
# levels, then reported and compared. Three layouts of the same 8B-shaped f16 model, the same total
# slots (128) and the same context per slot (1280 tokens) on the box:
#   tp-row      one llama-server, both GPUs, --split-mode row   (tensor-parallel-like: each matmul split)
#   tp-layer    one llama-server, both GPUs, --split-mode layer (pipeline-like: layers split)
#   replicas    two llama-servers, CUDA_VISIBLE_DEVICES=0 and =1, -np 64 each;
#               headroom sweep --base-url A,B --server-log A.log --server-log B.log (least-outstanding)
# The interconnect is recorded twice: `nvidia-smi topo -m` (runs/topo.txt) and NVML in each run's
# manifest (gpu_links, "GPU interconnect" in the report context).
#
# Same orchestration as bench/h200/llamacpp.sh (daemon.sh): `start` launches the plan as a daemon in
# $W=/tmp/hr2 and waits; `collect` waits for more. Both pack what finished into $OUT and print a status.
#
#   prepare (here): bash bench/h200/prepare-device.sh; cp bench/h200/tp-vs-replicas.sh /work/main/.device/gpu/
#   call 1 (kind nvidia-h200-x2):  bash .device/gpu/tp-vs-replicas.sh start 560
#   call 2 (kind nvidia-h200-x2):  bash .device/gpu/tp-vs-replicas.sh collect 570
#
# Needs, next to this script (bench/h200/prepare-device.sh puts them there): daemon.sh, headroom.gz and
# write-llama (with -preset 8b: branch gpu), llama-src.tar.xz.
# Dry run of the plan without a GPU (prints every command, runs none):
#   DRY=1 W=/tmp/hr2-dry bash bench/h200/tp-vs-replicas.sh plan
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
W=${W:-/tmp/hr2}
SNAPSHOT=80fb11ac73e66d89eae2c6a91d8a77428fa733ed # node-llama-cpp 3.21.1's llama.cpp (0.4.0)
export PATH=/usr/local/cuda/bin:/opt/torch/.venv/bin:$PATH
H=$W/bin/headroom
B=$W/llama/build/bin
LLAMA_LIB=$B:/usr/local/cuda/targets/x86_64-linux/lib
LEVELS=${LEVELS:-1,2,4,8,16,32,64,128}
DUR=${DUR:-5s}
MODEL=$W/models/8b-f16.gguf
ALIAS=llama-3.1-8b-shape-random-f16
DESC="llama.cpp $SNAPSHOT (0.4.0) llama-server built with CUDA for sm_90, random-weight Llama-3.1-8B-shaped f16 GGUF (meaningless text, real shapes and KV cache), 1280 tokens per slot, --cache-ram 0; client and servers on the same box"

. "$HERE/daemon.sh" # log, done_step, skipped; pack, start and collect (daemon_main)
run() { if [ -n "${DRY:-}" ]; then echo "DRY: $*" | tee -a "$W/plan.log"; else "$@"; fi; }

# server PORT FLAGS...: a llama-server command line (LD_LIBRARY_PATH stays out of it, so the
# manifest's engine flags are llama-server's alone). --cache-ram 0: the host-RAM prompt cache
# thrashed from c=4 on in the first H200 recording (docs/gpu-engine.md on branch gpu).
server() {
  local port=$1
  shift
  echo "$B/llama-server -m $MODEL -ngl 99 --host 127.0.0.1 --port $port --metrics --no-webui --cache-ram 0 --alias $ALIAS $*"
}

sweep_flags() { # label layout: sets SWEEP, the flags every layout's sweep shares
  SWEEP=(--concurrency "$LEVELS" --prompt-tokens 1024 --output-tokens 64 --duration-per-level "$DUR"
    --label "$1" --tag engine=llama.cpp --tag gpu=h200x2 --tag layout="$2")
}

tp() { # name split-mode port
  local name=$1 mode=$2 port=$3
  skipped "$name" && return 0
  log "sweep $name: one server over both GPUs, --split-mode $mode"
  sweep_flags "tensor split ($mode), 2x H200" "tp-$mode"
  LD_LIBRARY_PATH=$LLAMA_LIB run timeout -s INT -k 30 480 "$H" sweep \
    --server-cmd "$(server "$port" -c 163840 -np 128 --split-mode "$mode" --tensor-split 1,1)" --server-timeout 300s \
    --base-url "http://127.0.0.1:$port" "${SWEEP[@]}" \
    --description "$DESC; one server, --split-mode $mode --tensor-split 1,1 over GPUs 0 and 1" \
    -o "$W/runs/$name" > "$W/runs/$name.out" 2>&1
  log "sweep $name exit $?"
  done_step "$name"
}

wait_health() { # port
  [ -n "${DRY:-}" ] && return 0
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$1/health" > /dev/null 2>&1 && return 0; sleep 1; done
  return 1
}

replicas() { # name port0 port1
  local name=$1 p0=$2 p1=$3 pids=() i
  skipped "$name" && return 0
  mkdir -p "$W/runs/$name-servers"
  log "sweep $name: one server per GPU, the load spread by headroom (least-outstanding)"
  for i in 0 1; do
    local port=$p0
    [ "$i" = 1 ] && port=$p1
    if [ -n "${DRY:-}" ]; then
      run env CUDA_VISIBLE_DEVICES=$i $(server "$port" -c 81920 -np 64)
      continue
    fi
    # shellcheck disable=SC2046
    CUDA_VISIBLE_DEVICES=$i LD_LIBRARY_PATH=$LLAMA_LIB setsid $(server "$port" -c 81920 -np 64) \
      > "$W/runs/$name-servers/replica-$i.out" 2> "$W/runs/$name-servers/replica-$i.log" < /dev/null &
    pids+=($!)
  done
  if wait_health "$p0" && wait_health "$p1"; then
    sweep_flags "2 replicas, 1 per H200" replicas
    run timeout -s INT -k 30 480 "$H" sweep --base-url "http://127.0.0.1:$p0,http://127.0.0.1:$p1" \
      --server-log "$W/runs/$name-servers/replica-0.log" --server-log "$W/runs/$name-servers/replica-1.log" \
      "${SWEEP[@]}" \
      --description "$DESC; two servers, CUDA_VISIBLE_DEVICES=0 and =1, -c 81920 -np 64 each" \
      -o "$W/runs/$name" > "$W/runs/$name.out" 2>&1
    log "sweep $name exit $?"
  else
    log "sweep $name: a replica did not answer /health in 300 s"
  fi
  for p in "${pids[@]}"; do kill -TERM "$p" 2> /dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 40); do kill -0 "$p" 2> /dev/null || break; sleep 0.5; done
    kill -KILL "$p" 2> /dev/null
  done
  done_step "$name"
}

plan() {
  mkdir -p "$W/done" "$W/runs" "$W/bin" "$W/models"
  echo $$ > "$W/plan.pid"
  log "plan start (skip: ${SKIP:-none})"
  if [ -z "${DRY:-}" ]; then
    gunzip -c "$HERE/headroom.gz" > "$H" && chmod +x "$H"
    nvidia-smi > "$W/runs/nvidia-smi.txt" 2>&1
    nvidia-smi topo -m > "$W/runs/topo.txt" 2>&1
    nvidia-smi nvlink -s >> "$W/runs/topo.txt" 2>&1
    "$H" version > "$W/runs/headroom-version.txt" 2>&1
    (
      mkdir -p "$W/llama" && tar -xJf "$HERE/llama-src.tar.xz" -C "$W/llama" && cd "$W/llama" &&
        nice -n 19 cmake -B build -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_BUILD_TESTS=OFF \
          -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF -DCMAKE_BUILD_TYPE=Release \
          -DLLAMA_BUILD_COMMIT=${SNAPSHOT:0:7} -DLLAMA_BUILD_NUMBER=1 &&
        nice -n 19 cmake --build build -j32 --target llama-server
      echo "build exit $?"
    ) > "$W/build.log" 2>&1 &
    local build=$!
  fi
  if ! skipped probe; then
    log "probe (both GPUs, alone and at once)"
    run "$H" probe --dtype bf16 --devices all -o "$W/runs/probe" > "$W/runs/probe.out" 2>&1
    done_step probe
  fi
  run "$HERE/write-llama" -preset 8b -type f16 -name "$ALIAS" -o "$MODEL" >> "$W/plan.log" 2>&1
  if [ -z "${DRY:-}" ]; then
    log "waiting for the llama.cpp build"
    wait "$build"
    tail -3 "$W/build.log" | tee -a "$W/plan.log"
    if [ ! -x "$B/llama-server" ]; then log "no llama-server: build failed"; return 1; fi
  fi
  replicas replicas 8201 8202
  tp tp-row row 8203
  tp tp-layer layer 8204
  if ! skipped report; then
    # One report of the three (page one: the set of runs; details per layout), and the comparison
    # grouped by layout label: throughput, TPOT, TTFT, operating point under the SLO, $/Mtok.
    run "$H" report "$W/runs/replicas" "$W/runs/tp-row" "$W/runs/tp-layer" "$W/runs/probe" \
      --gpu-hour-usd 3.50 -o "$W/runs/report" > "$W/runs/report.out" 2>&1
    run "$H" compare "$W/runs/tp-row" "$W/runs/tp-layer" "$W/runs/replicas" --group-by label \
      -o "$W/runs/compare" > "$W/runs/compare.out" 2>&1
    done_step report
  fi
  log "plan finished"
}

# What a finished step ships, and what every pack ships (see daemon.sh): the report step brings
# the comparison and the report.
step_files() { echo "runs/$1 runs/$1.out runs/$1-servers"; }
extra_files() {
  case " $* " in *" report "*) echo runs/compare runs/report ;; esac
  echo runs/nvidia-smi.txt runs/topo.txt runs/headroom-version.txt
}
show_status() { tail -n 25 "$W/plan.log"; }

daemon_main "$HERE/tp-vs-replicas.sh" "$@"
