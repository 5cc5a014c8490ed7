#!/bin/bash
# tests/cri/deps.sh — what tests/cri needs on a fresh machine (called by .ci/run, and by
# tests/cri/run.sh under CI=true): containerd 1.6 (its CRI plugin is built in), the CNI plugins
# (bridge, host-local), runc (the reference handler), a C compiler with a static libc (the pause
# program), node and npm, then the npm packages, cached in tests/cri/.work so that the suite
# itself does not need the registry again.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export DEBIAN_FRONTEND=noninteractive
need=()
command -v containerd >/dev/null || need+=(containerd)
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] || need+=(containernetworking-plugins)
command -v runc >/dev/null || need+=(runc)
command -v jq >/dev/null || need+=(jq)
[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || [ -n "$(cc -print-file-name=libc.a 2>/dev/null | grep /)" ] || need+=(libc6-dev)
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then need+=(nodejs npm); fi
if [ ${#need[@]} -gt 0 ]; then
  apt-get install -y -qq --no-install-recommends "${need[@]}" </dev/null ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" </dev/null; }
fi
echo "tests/cri: $(containerd --version | awk '{print $3}'), node $(node --version), npm $(npm --version)"
cache=$here/.work
if ! cmp -s "$here/package.json" "$cache/package.json" || [ ! -d "$cache/node_modules/@grpc/grpc-js" ] ||
  [ ! -d "$cache/node_modules/@grpc/proto-loader" ] || [ ! -d "$cache/node_modules/ws" ]; then
  mkdir -p "$cache"
  cp "$here/package.json" "$cache/package.json"
  (cd "$cache" && timeout 600 npm install --no-audit --no-fund --cache "$cache/npm-cache")
fi
