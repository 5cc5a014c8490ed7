#!/bin/bash
# tests/egress/npm-install.sh — the MCP client and server of the egress suite into
# tests/egress/.work/node_modules (once; again only when package.json changes).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=$here/.work
if ! cmp -s "$here/package.json" "$cache/package.json" || [ ! -d "$cache/node_modules/@modelcontextprotocol/server-gitlab" ]; then
  mkdir -p "$cache"
  cp "$here/package.json" "$cache/package.json"
  (cd "$cache" && timeout 600 npm install --no-audit --no-fund --cache "$cache/npm-cache" >&2)
fi
