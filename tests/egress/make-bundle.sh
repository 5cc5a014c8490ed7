#!/bin/bash
# tests/egress/make-bundle.sh DIR CA [NODE_MODULES] — the egress suite's bundle: this machine's
# node, curl and python3 with their shared-library closures (rootfs-tools/make-closure-bundle.sh),
# Python's standard library, the clients in tests/egress/clients at /clients, the test CA as the
# image's trust store (/etc/ssl/certs/ca-certificates.crt), and NODE_MODULES at /app/node_modules.
set -euo pipefail
dir=$1 ca=$2 modules=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${CODEMODE:=$repo/build/codemode}"
export CODEMODE
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
adds=(--add "$here/clients:/clients")
[ -n "$modules" ] && adds+=(--add "$modules:/app/node_modules")
"$repo/rootfs-tools/make-closure-bundle.sh" "${adds[@]}" "$(command -v node)" "$dir" >/dev/null
for bin in "$(command -v curl)" /usr/bin/python3.11; do
  "$repo/rootfs-tools/make-closure-bundle.sh" "$bin" "$tmp/b" >/dev/null
  cp -a "$tmp/b/rootfs/." "$dir/rootfs/"
  rm -rf "$tmp/b"
done
mkdir -p "$dir/rootfs/usr/lib"
tar -C /usr/lib --exclude='python3.11/test' --exclude='__pycache__' --exclude='python3.11/idlelib' \
  --exclude='python3.11/tkinter' -c python3.11 | tar -C "$dir/rootfs/usr/lib" -x
ln -sf python3.11 "$dir/rootfs/usr/bin/python3"
mkdir -p "$dir/rootfs/etc/ssl/certs"
cp "$ca" "$dir/rootfs/etc/ssl/certs/ca-certificates.crt"
jq --arg t "${CM_TEST_TOKEN:-}" '.process.env += ["CODEMODE_TEST_CONTAINER=" + $t,
    "NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"]' "$dir/config.json" >"$dir/config.json.new"
mv "$dir/config.json.new" "$dir/config.json"
