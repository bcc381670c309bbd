#!/usr/bin/env bash
# Smoke test of the GPU engine on the H200 box (bench/gpu-engine/server.py over transformers' continuous
# batching). Prints the installed transformers' continuous-batching knobs, then:
#   1. 1B shape with a small KV cache (64 blocks x 32 tokens): health/version/models, /tokenize, a streaming
#      completion and chat with include_usage, a non-streaming call, 8 concurrent requests (must batch:
#      running > 1 in /metrics), then 12 longer ones that overfill the cache (waiting, KV usage, preemptions);
#   then (SMOKE_ENGINE_ONLY=1, the default) the same engine driven directly, without the HTTP server;
#   2. (SMOKE_8B=1, the default) 8B shape with the engine's own KV sizing: 8 concurrent 1000-token prompts.
# Each server is stopped with SIGTERM; the first lines of its log are printed.
#
# Usage on the box:  bash bench/gpu-engine/smoke.sh          (files go to $OUT, or /tmp/gpu-engine-smoke)
# Environment: PY (default /opt/torch/.venv/bin/python), OUT, SMOKE_8B, SMOKE_ENGINE_ONLY (1 or 0),
# SMOKE_WALL_N (requests of the KV-wall step, default 12).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-/opt/torch/.venv/bin/python}
OUT=${OUT:-/tmp/gpu-engine-smoke}
SMOKE_8B=${SMOKE_8B:-1}
mkdir -p "$OUT"
export TIKTOKEN_CACHE_DIR=${TIKTOKEN_CACHE_DIR:-/opt/tiktoken_cache}
export PYTHONUNBUFFERED=1
SERVER_PID=

stop_server() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID"
        for _ in $(seq 60); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.5; done
        kill -0 "$SERVER_PID" 2>/dev/null && { echo "server did not stop in 30 s: SIGKILL"; kill -KILL "$SERVER_PID"; }
        wait "$SERVER_PID" 2>/dev/null
        echo "server exit status: $?"
    fi
    SERVER_PID=
}
trap stop_server EXIT

# start_server NAME ARGS...: starts server.py, waits for its `listening port=N` line, sets PORT.
start_server() {
    local name=$1; shift
    local t0=$SECONDS
    "$PY" "$HERE/server.py" --port 0 "$@" >"$OUT/server-$name.out" 2>"$OUT/server-$name.log" &
    SERVER_PID=$!
    PORT=
    while [ $((SECONDS - t0)) -lt 300 ]; do
        PORT=$(sed -n 's/^listening port=\([0-9]*\).*/\1/p' "$OUT/server-$name.out")
        [ -n "$PORT" ] && break
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            echo "server $name exited during start-up; its log:"; tail -n 40 "$OUT/server-$name.log"; SERVER_PID=; return 1
        fi
        sleep 0.5
    done
    [ -n "$PORT" ] || { echo "server $name not listening after 300 s"; tail -n 40 "$OUT/server-$name.log"; return 1; }
    echo "server $name listening on port $PORT after $((SECONDS - t0)) s"
}

show_log() {
    local log="$OUT/server-$1.log"
    echo "--- first 25 lines of server-$1.log"
    head -n 25 "$log"
    echo "--- WARN/ERROR lines (first 15 of $(grep -c -E '^[^ ]+ (WARN|ERROR) ' "$log"))"
    grep -E '^[^ ]+ (WARN|ERROR) ' "$log" | head -n 15
    echo "--- event counts"
    awk '{print $3}' "$log" | sort | uniq -c | sort -rn
    echo "--- last 5 lines"
    tail -n 5 "$log"
}

RC=0
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader
"$PY" "$HERE/smoke_client.py" knobs >"$OUT/knobs.txt" 2>&1 &
KNOBS_PID=$!

echo "=== 1B shape, small KV cache"
if start_server 1b --model-shape 1b --kv-blocks 64 --block-size 32 --write-config "$OUT/config-1b.json"; then
    "$PY" "$HERE/smoke_client.py" check --base "http://127.0.0.1:$PORT" --n 8 --prompt-tokens 200 \
        --max-tokens 64 --wall-n ${SMOKE_WALL_N:-12} --wall-prompt-tokens 300 --wall-max-tokens 160 || RC=1
    stop_server
    show_log 1b
else
    RC=1
fi

if [ "${SMOKE_ENGINE_ONLY:-1}" = 1 ]; then
    echo "=== 1B engine alone (no HTTP server), same KV settings"
    "$PY" "$HERE/smoke_client.py" engine --model-shape 1b --kv-blocks 64 --block-size 32 || RC=1
fi

wait "$KNOBS_PID"
echo "=== transformers continuous-batching knobs"
cat "$OUT/knobs.txt"

if [ "$SMOKE_8B" = 1 ]; then
    echo "=== 8B shape, KV cache sized by the engine"
    if start_server 8b --model-shape 8b; then
        "$PY" "$HERE/smoke_client.py" check --base "http://127.0.0.1:$PORT" --n 8 --prompt-tokens 1000 \
            --max-tokens 64 || RC=1
        stop_server
        show_log 8b
    else
        RC=1
    fi
fi
echo "smoke.sh exit status: $RC"
exit $RC
