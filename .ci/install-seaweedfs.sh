#!/usr/bin/env bash
# Builds SeaweedFS's `weed` (a real S3-compatible server; the object-storage
# tests start it on loopback) from its Go module, pinned by
# .ci/seaweedfs/go.mod and go.sum, and caches the binary outside the clone
# so that only the first run on a machine pays for the build (about 15
# CPU-minutes: SeaweedFS is a large module). Prints the binary's path.
#
#   HEADROOM_CI_CACHE  where built tools are kept (default ~/.cache/headroom-ci)
#
# The tests find the binary through HEADROOM_WEED (set by .ci/run from this
# script's output); without it they look in the cache, and skip saying how
# to build it when it is missing (CI sets HEADROOM_REQUIRE_WEED=1 so that a
# missing server fails instead).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mod="$here/seaweedfs"
version="$(awk '$1 == "github.com/seaweedfs/seaweedfs" {print $2}' "$mod/go.mod")"
[ -n "$version" ] || { echo "install-seaweedfs: no seaweedfs version in $mod/go.mod" >&2; exit 1; }
cache="${HEADROOM_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/headroom-ci}/seaweedfs-$version"
bin="$cache/weed"
if [ -x "$bin" ] && "$bin" version >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi
mkdir -p "$cache"
echo "install-seaweedfs: building weed $version (first run on this machine; cached in $cache)" >&2
start=$(date +%s)
# -mod=readonly: the pinned go.sum must cover the build; nothing is resolved anew.
(cd "$mod" && GOFLAGS=-mod=readonly go build -trimpath -ldflags='-s -w' -o "$bin.tmp" github.com/seaweedfs/seaweedfs/weed)
mv "$bin.tmp" "$bin"
echo "install-seaweedfs: built in $(( $(date +%s) - start )) s" >&2
echo "$bin"
