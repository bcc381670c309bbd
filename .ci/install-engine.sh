#!/usr/bin/env bash
# Installs what headroom's test engine (test/engine) needs: Node.js >= 20 with npm (from Debian apt
# when node is missing; when that node is older than 20, as Debian 12's 18 is, Node.js 20 from the
# npm registry's `node` package into .ci/.node, which .ci/run puts first on PATH) and the pinned
# node-llama-cpp from test/engine/package-lock.json, CPU binary only. Idempotent: a second run with
# an unchanged lockfile does nothing and takes ~0.1 s; a clean clone on a machine that installed the
# same lockfile before copies the tree from ~/.cache/headroom-ci (HEADROOM_CI_CACHE) instead of
# running npm.
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
if ! command -v npm >/dev/null; then
  echo "install-engine: npm not found next to node $(node --version): install npm" >&2
  exit 1
fi
node_dir=$(cd ../.. && pwd)/.ci/.node
if [ -x "$node_dir/node_modules/node/bin/node" ]; then
  export PATH="$node_dir/node_modules/node/bin:$PATH"
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  # node-llama-cpp 3.21.1 needs Node.js >= 20. The npm registry (reachable wherever npm is) serves
  # Node.js itself as the `node` package: a prebuilt binary, nothing compiled.
  echo "install-engine: node $(node --version) is older than 20: installing Node.js 20 from the npm registry into .ci/.node" >&2
  npm install --prefix "$node_dir" node@20 --no-audit --no-fund --loglevel=error
  export PATH="$node_dir/node_modules/node/bin:$PATH"
  echo "install-engine: using node $(node --version) from $node_dir" >&2
fi

# The stamp records what was installed: the lockfile and the node version.
stamp=node_modules/.headroom-install-stamp
want="$(sha256sum package-lock.json | cut -d' ' -f1) node-$(node --version)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f node_modules/node-llama-cpp/package.json ]; then
  exit 0
fi
# A clean clone takes the tree a previous install on this machine left in the cache, keyed by the
# stamp (lockfile and node version): npm ci took 15 s on a quiet machine and 5 minutes at load 50,
# a hard-linked copy of the same 3,100 files takes about 1 s.
cache="${HEADROOM_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/headroom-ci}/engine-$(sha256sum <<<"$want" | cut -c1-16)"
if [ -f "$cache/node_modules/.headroom-install-stamp" ] && [ "$(cat "$cache/node_modules/.headroom-install-stamp")" = "$want" ]; then
  rm -rf node_modules
  cp -al "$cache/node_modules" node_modules 2>/dev/null || { rm -rf node_modules; cp -a "$cache/node_modules" node_modules; }
  exit 0
fi
# --omit=optional keeps only the linux-x64 CPU binaries (a direct dependency): the CUDA and Vulkan
# builds are optional dependencies (~650 MB). --ignore-scripts skips node-llama-cpp's postinstall,
# which probes GPUs and may try to build llama.cpp; the prebuilt CPU binary needs none of it.
npm ci --omit=optional --ignore-scripts --no-audit --no-fund --loglevel=error
echo "$want" > "$stamp"
# Kept for the next clean clone (a copy, not links: npm may later change this tree in place).
mkdir -p "$(dirname "$cache")"
tmp="$cache.tmp.$$"
rm -rf "$tmp" && mkdir -p "$tmp" && cp -a node_modules "$tmp/" && rm -rf "$cache" && mv "$tmp" "$cache" || rm -rf "$tmp"
