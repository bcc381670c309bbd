#!/usr/bin/env bash
# Puts what bench/h200/llamacpp.sh needs on the device into DEST (default /work/main/.device/gpu, the
# git-ignored folder the device tool carries): static headroom (gzipped) and write-llama builds, the
# llama.cpp snapshot of node-llama-cpp's gitRelease.bundle as a source archive of the directories the
# llama-server build reads (7 MB instead of the 34 MB bundle: the carry limit is 64 MiB), the 8B
# shape's config.json, and the script itself with daemon.sh, which it sources.
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST=${DEST:-/work/main/.device/gpu}
BUNDLE=${BUNDLE:-test/engine/node_modules/node-llama-cpp/llama/gitRelease.bundle}
mkdir -p "$DEST"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$tmp/headroom" ./cmd/headroom
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$DEST/write-llama" ./internal/gguf/cmd/write-llama
gzip -6 -c "$tmp/headroom" > "$DEST/headroom.gz"
git clone -q "$BUNDLE" "$tmp/llama"
git -C "$tmp/llama" rev-parse HEAD > "$DEST/llama-snapshot.txt"
git -C "$tmp/llama" archive --format=tar HEAD CMakeLists.txt cmake scripts ggml src include common vendor tools app licenses LICENSE |
  xz -T0 -6 > "$DEST/llama-src.tar.xz"
cp bench/h200/llamacpp-configs/config-8b-f16.json "$DEST/config-8b.json"
cp bench/h200/llamacpp.sh bench/h200/daemon.sh "$DEST/"
du -ch "$DEST"/* | tail -1
ls -la "$DEST"
