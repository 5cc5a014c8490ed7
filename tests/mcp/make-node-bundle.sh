#!/bin/bash
# make-node-bundle.sh BUNDLE NODE_MODULES_DIR — a bundle whose rootfs is this machine's node, its
# shared-library closure and the given node_modules under /app (rootfs-tools/make-closure-bundle.sh);
# process.args is the filesystem MCP server serving /data, and the environment carries the test
# token the leak checks look for.
set -euo pipefail
bundle=$1 modules=$2
repo=$(cd "$(dirname "$0")/../.." && pwd)
: "${CODEMODE:=$repo/build/codemode}"
export CODEMODE
server=/app/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
mkdir -p "$bundle"
"$repo/rootfs-tools/make-closure-bundle.sh" --add "$modules:/app/node_modules" node "$bundle" -- "$server" /data
mkdir -p "$bundle/rootfs/data"
jq '.process.env += ["CODEMODE_TEST_CONTAINER=" + env.CM_TEST_TOKEN]' "$bundle/config.json" >"$bundle/config.json.new"
mv "$bundle/config.json.new" "$bundle/config.json"
