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
# A warm npx cache for the --host cases: what `npx -y PACKAGE` leaves in ~/.npm after one online
# run, so the suite runs the servers offline (--mount CACHE:/root/.npm:cow). stdin closed: the
# servers start and exit.
npx_home=$cache/npx-home
for pkg in @modelcontextprotocol/server-filesystem @modelcontextprotocol/server-memory; do
  if [ ! -d "$npx_home/.npm/_npx" ] || ! grep -rqs "\"name\": \"$pkg\"" "$npx_home/.npm/_npx"/*/node_modules/"$pkg"/package.json; then
    mkdir -p "$npx_home"
    (cd /tmp && HOME=$npx_home npm_config_update_notifier=false timeout 300 npx -y "$pkg" /tmp </dev/null >/dev/null 2>&1) || true
  fi
done
