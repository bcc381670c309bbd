#!/usr/bin/env bash
# Installs what headroom's test engine (test/engine) needs: Node.js >= 20 with npm (from Debian apt
# when node is missing) and the pinned node-llama-cpp from test/engine/package-lock.json, CPU
# binary only. Idempotent: a second run with an unchanged lockfile does nothing and takes ~0.1 s.
set -euo pipefail

cd "$(dirname "$0")/../test/engine"

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "install-engine: need root to run: $*" >&2; exit 1; fi
}

if ! command -v node >/dev/null; then
  echo "install-engine: node not found, installing nodejs and npm from apt" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "install-engine: node $(node --version) is too old: node-llama-cpp 3.21.1 needs Node.js >= 20" \
    "(Debian 12's nodejs is 18; use Debian 13 or NodeSource's nodejs 20+)" >&2
  exit 1
fi
if ! command -v npm >/dev/null; then
  echo "install-engine: npm not found next to node $(node --version): install npm" >&2
  exit 1
fi

# The stamp records what was installed: the lockfile and the node version.
stamp=node_modules/.headroom-install-stamp
want="$(sha256sum package-lock.json | cut -d' ' -f1) node-$(node --version)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f node_modules/node-llama-cpp/package.json ]; then
  exit 0
fi
# --omit=optional keeps only the linux-x64 CPU binaries (a direct dependency): the CUDA and Vulkan
# builds are optional dependencies (~650 MB). --ignore-scripts skips node-llama-cpp's postinstall,
# which probes GPUs and may try to build llama.cpp; the prebuilt CPU binary needs none of it.
npm ci --omit=optional --ignore-scripts --no-audit --no-fund --loglevel=error
echo "$want" > "$stamp"
