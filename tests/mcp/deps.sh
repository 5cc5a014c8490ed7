#!/bin/bash
# tests/mcp/deps.sh — what tests/mcp needs on a fresh machine (called by .ci/run): node and npm
# (preinstalled on the CI machines; Debian's nodejs/npm otherwise), then the npm packages, cached
# in tests/mcp/.work so the suite itself does not need the registry again.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends nodejs npm </dev/null
fi
echo "tests/mcp: node $(node --version), npm $(npm --version)"
cache=$here/.work
if ! cmp -s "$here/package.json" "$cache/package.json" || [ ! -d "$cache/node_modules/@modelcontextprotocol/sdk" ]; then
  mkdir -p "$cache"
  cp "$here/package.json" "$cache/package.json"
  (cd "$cache" && npm install --no-audit --no-fund --cache "$cache/npm-cache")
fi
