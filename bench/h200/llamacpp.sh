#!/usr/bin/env bash
# llama.cpp's own llama-server, built with CUDA on the H200 box, serving 8B-shaped random-weight
# models at f16, q8_0 and q4_0; headroom's probe (bf16, FP8 and the model's own decode GEMMs); the
# seed's script 02 against the same server; and the verdict scenarios of /work/coord/gpu-scenarios.md
# (issue 14), three recordings each. docs/gpu-engine.md has the exact flags and what came out.
#
# The plan runs as a daemon (daemon.sh, beside this script): `start` launches it working in
# $W=/tmp/hr and waits; `collect` waits for more of it. Both end by packing every step finished
# since the last pack into $OUT (tar.gz, split below 16 MiB) and printing a status.
#
#   call 1:  bash .device/gpu/llamacpp.sh start 560
#   call 2:  bash .device/gpu/llamacpp.sh collect 570
#
# A fresh machine on call 2 (the first one was taken back) has no /tmp/hr: `collect` then starts
# the plan again, skipping the steps named in SKIP (those that call 1 shipped).
#
# Needs, next to this script (put there by bench/h200/prepare-device.sh): daemon.sh, headroom.gz and
# write-llama (CGO_ENABLED=0 builds), llama-src.tar.xz (the llama.cpp snapshot), config-8b.json.
# Dry run of the plan on a machine without a GPU: DRY=1 W=/tmp/hr-dry bash bench/h200/llamacpp.sh plan
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(pwd)
W=${W:-/tmp/hr}
PY=${PY:-/opt/torch/.venv/bin/python}
SNAPSHOT=80fb11ac73e66d89eae2c6a91d8a77428fa733ed   # node-llama-cpp 3.21.1's gitRelease.bundle (llama.cpp 0.4.0)
export PATH=/usr/local/cuda/bin:/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
H=$W/bin/headroom
B=$W/llama/build/bin
LLAMA_LIB=$B:/usr/local/cuda/targets/x86_64-linux/lib
LEVELS=1,2,4,8,16,32,64,128
# The card the runs are on, as nvidia-smi names it without the vendor ("H200", "H100 80GB HBM3"):
# a call may be given an H100 where no H200 comes, and the runs must say which.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1 | sed 's/^NVIDIA //')
GPU=${GPU:-unknown GPU}
GPU_TAG=$(echo "$GPU" | cut -d' ' -f1 | tr 'A-Z' 'a-z')

. "$HERE/daemon.sh" # log, done_step, skipped; pack, start and collect (daemon_main)

build_llama() {
  # The documented build (/work/shared/notes/gpu-box.md), at the lowest CPU priority so that the
  # probe running meanwhile keeps its core; the snapshot's commit is passed in because the archive
  # has no .git to read it from.
  mkdir -p "$W/llama" && tar -xJf "$HERE/llama-src.tar.xz" -C "$W/llama" || return 1
  cd "$W/llama" || return 1
  nice -n 19 cmake -B build -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_BUILD_COMMIT=${SNAPSHOT:0:7} -DLLAMA_BUILD_NUMBER=1 &&
    nice -n 19 cmake --build build -j16 --target llama-server
}

# server CMD: the llama-server command line (run with LD_LIBRARY_PATH=$LLAMA_LIB in the environment,
# not in the command, so that the manifest's engine flags are llama-server's alone) for a model and its context/slot flags. --cache-ram 0
# turns off the host-RAM prompt cache: with its default (8 GiB) every finished 1,088-token request
# evicts a 136 MiB entry once the cache is full, which stalled the server from c=4 on in the
# 2026-12-01 recording (docs/gpu-engine.md); the sweeps' prompts share no prefix to cache.
server() { # model port flags...
  local model=$1 port=$2
  shift 2
  echo "$B/llama-server -m $model -ngl 99 --host 127.0.0.1 --port $port --metrics --no-webui ${CACHE_RAM_FLAG---cache-ram 0} $*"
}

quant_sweep() { # type port seconds
  local q=$1 port=$2 dur=$3 name=sweep-$1
  skipped "$name" && return 0
  local m=$W/models/8b-$q.gguf
  local flags="-c 163840 -np 128 --alias llama-3.1-8b-shape-random-$q"
  log "sweep $name: $flags"
  LD_LIBRARY_PATH=$LLAMA_LIB timeout -s INT -k 30 420 "$H" sweep --server-cmd "$(server "$m" "$port" "$flags")" --base-url "http://127.0.0.1:$port" \
    --concurrency "$LEVELS" --prompt-tokens 1024 --output-tokens 64 --duration-per-level "$dur" --server-timeout 300s \
    --label "llama.cpp CUDA, 8B shape $q" --tag engine=llama.cpp --tag quant="$q" --tag gpu="$GPU_TAG" \
    --description "llama.cpp $SNAPSHOT (0.4.0) llama-server built with CUDA 13.0 for sm_90 on the $GPU, all layers on the GPU (-ngl 99), -c 163840 -np 128 (1280 tokens per slot), flash attention auto, CUDA graphs on; serving a random-weight Llama-3.1-8B-shaped GGUF at $q written by headroom's internal/gguf (the text is meaningless; the weights' bytes, shapes and the KV cache are the real shape's). Client and server on the same box." \
    -o "$W/runs/$name" > "$W/runs/$name.out" 2>&1
  log "sweep $name exit $?"
  done_step "$name"
}

scenario() { # scen n port
  local scen=$1 n=$2 port=$3 name=$1-$2 ctx slots levels
  skipped "$name" && return 0
  case $scen in
  gpu-kv-small) ctx=6144 slots=32 levels=2,4,8,16,32 ;;
  gpu-kv-large) ctx=131072 slots=8 levels=2,4,8,16,32 ;;
  gpu-membound) ctx=131072 slots=64 levels=2,4,8 ;;
  esac
  local flags="-c $ctx -np $slots --kv-unified -b 2048 -ub 512 --alias llama8b-random"
  log "scenario $name: $flags, levels $levels"
  LD_LIBRARY_PATH=$LLAMA_LIB timeout -s INT -k 30 240 "$H" sweep --server-cmd "$(server "$W/models/8b-f16.gguf" "$port" "$flags")" \
    --base-url "http://127.0.0.1:$port" --endpoint completions --concurrency "$levels" \
    --prompt-tokens 512 --output-tokens 32 --requests-per-level 100 --server-timeout 300s \
    --label "$scen $n" --tag verdicts --tag "$scen" --tag gpu="$GPU_TAG" \
    --description "llama.cpp llama-server (CUDA, $GPU), random-weight Llama-3.1-8B shape f16, -c $ctx -np $slots --kv-unified" \
    -o "$W/runs/$name" > "$W/runs/$name.out" 2>&1
  log "scenario $name exit $?"
  done_step "$name"
}

script02() { # port
  local port=$1 name=script02-f16
  skipped "$name" && return 0
  mkdir -p "$W/runs/$name"
  log "script 02 against f16"
  LD_LIBRARY_PATH=$LLAMA_LIB $(server "$W/models/8b-f16.gguf" "$port" "-c 163840 -np 128 --alias llama-3.1-8b-shape-random-f16") \
    > "$W/runs/$name/server.out" 2> "$W/runs/$name/server.log" &
  local spid=$!
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$port/health" > /dev/null 2>&1 && break; sleep 1; done
  # Script 02 sizes prompts at 1.3 tokens per word; give it the word count that makes 1024 tokens
  # with this server's tokenizer (measured through /tokenize on its own word list).
  local arg
  arg=$("$PY" "$REPO/bench/h200/script02_words.py" "http://127.0.0.1:$port" 1024 content)
  log "script 02: --prompt-tokens $arg (= 1024 tokens with this tokenizer)"
  echo "$arg" > "$W/runs/$name/prompt-tokens-arg.txt"
  (cd "$REPO" && timeout -s INT 240 "$PY" bench/seed/02_serving_sweep.py --base-url "http://127.0.0.1:$port" \
    --model llama-3.1-8b-shape-random-f16 --prompt-tokens "$arg" --output-tokens 64 --levels "$LEVELS" \
    --out "$W/runs/$name/serving_sweep_llamacpp_f16.json") > "$W/runs/$name/script02.out" 2>&1
  log "script 02 exit $?"
  kill -TERM "$spid" 2> /dev/null
  for _ in $(seq 40); do kill -0 "$spid" 2> /dev/null || break; sleep 0.5; done
  kill -KILL "$spid" 2> /dev/null
  done_step "$name"
}

plan() {
  mkdir -p "$W/done" "$W/runs" "$W/bin" "$W/models"
  echo $$ > "$W/plan.pid"
  log "plan start (skip: ${SKIP:-none})"
  if [ -n "${DRY:-}" ]; then # the orchestration only: two fake steps, the second slow
    mkdir -p "$W/runs/dry-a" && echo a > "$W/runs/dry-a/x" && done_step dry-a
    sleep "${DRY_SLEEP:-3}"
    mkdir -p "$W/runs/dry-b" && echo b > "$W/runs/dry-b/x" && done_step dry-b
    return 0
  fi
  gunzip -c "$HERE/headroom.gz" > "$H" && chmod +x "$H"
  nvidia-smi > "$W/runs/nvidia-smi.txt" 2>&1
  "$H" version > "$W/runs/headroom-version.txt" 2>&1
  (build_llama > "$W/build.log" 2>&1; echo "build exit $?" >> "$W/build.log") &
  local build=$!
  if ! skipped probe; then
    log "probe"
    { time "$H" probe --dtype bf16,fp8 --model-config "$HERE/config-8b.json" -o "$W/runs/probe"; } > "$W/runs/probe.out" 2>&1
    log "probe exit $? ($(grep real "$W/runs/probe.out"))"
    done_step probe
  fi
  for q in f16 q4_0 q8_0; do
    log "writing the 8B $q model"
    "$HERE/write-llama" -preset 8b -type "$q" -name "llama-3.1-8b-shape-random-$q" -o "$W/models/8b-$q.gguf" >> "$W/plan.log" 2>&1
  done
  log "waiting for the llama.cpp build"
  wait "$build"
  tail -3 "$W/build.log" | tee -a "$W/plan.log"
  if [ ! -x "$B/llama-server" ]; then log "no llama-server: build failed"; return 1; fi
  quant_sweep f16 8101 5s
  quant_sweep q4_0 8102 5s
  quant_sweep q8_0 8103 5s
  for n in 1 2 3; do
    scenario gpu-kv-small "$n" $((8110 + n))
    scenario gpu-kv-large "$n" $((8120 + n))
    scenario gpu-membound "$n" $((8130 + n))
    [ "$n" = 1 ] && script02 8140
  done
  log "plan finished"
}

# What a finished step ships, and what every pack ships (see daemon.sh).
step_files() { echo "runs/$1 runs/$1.out"; }
extra_files() { echo runs/nvidia-smi.txt runs/headroom-version.txt; }

show_status() {
  echo "=== status at +${SECONDS}s"
  ls "$W/done" 2> /dev/null | tr '\n' ' '
  echo
  tail -n 25 "$W/plan.log" 2> /dev/null
  grep -h "peak observed\|FP8 peak\|bandwidth  \|B=1    \|real" "$W/runs/probe.out" 2> /dev/null | head -12
}

daemon_main "$HERE/llamacpp.sh" "$@"
