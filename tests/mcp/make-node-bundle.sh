#!/bin/bash
# make-node-bundle.sh BUNDLE NODE_MODULES_DIR — a bundle whose rootfs is this machine's node, its
# shared-library closure (ldd) and the given node_modules under /app. config.json comes from
# `codemode spec`; process.args is the filesystem MCP server serving /data.
set -euo pipefail
bundle=$1 modules=$2
: "${CODEMODE:=$(cd "$(dirname "$0")/../.." && pwd)/build/codemode}"
node=$(readlink -f "$(command -v node)")
root=$bundle/rootfs
mkdir -p "$root"/{usr/bin,proc,sys,dev,tmp,etc,data,app}
cp "$node" "$root/usr/bin/node"
# Merged-/usr hosts: keep /lib and /lib64 the same symlinks, so the loader paths match.
for d in lib lib64; do if [ -L "/$d" ]; then ln -sfn "$(readlink "/$d")" "$root/$d"; fi; done
mkdir -p "$root/usr/lib" "$root/usr/lib64"
# Every library node loads, at the path the dynamic loader looks for it, plus the loader itself.
ldd "$node" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }' | while read -r lib; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"
cp -a "$modules" "$root/app/node_modules"
(cd "$bundle" && "$CODEMODE" spec)
server=/app/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
jq --arg s "$server" '.process.terminal = false | .process.args = ["/usr/bin/node", $s, "/data"] |
  .process.env += ["CODEMODE_TEST_CONTAINER=" + env.CM_TEST_TOKEN]' \
  "$bundle/config.json" >"$bundle/config.json.new"
mv "$bundle/config.json.new" "$bundle/config.json"
