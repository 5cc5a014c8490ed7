#!/bin/bash
# scripts/quickstart.sh — from a fresh Debian 12 machine (as root) to a running container and an
# MCP server answering a real MCP client: installs what is missing (apt-get), builds, makes a
# busybox bundle in a temp dir, runs it with codemode and prints the isolation the container
# got; then installs the filesystem MCP server and the MCP SDK with npm (into the temp dir) and
# has the SDK's client talk to the server under `codemode-run --host` (profile mcp). Leaves
# nothing behind but the build and the installed packages.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD

[ "$(id -u)" -eq 0 ] || { echo "quickstart: run as root (containers need it)" >&2; exit 1; }

echo "== 1/5 dependencies (apt-get, only what is missing)"
scripts/install-deps.sh all </dev/null

echo "== 2/5 build"
make -j"$(nproc)" >/dev/null
codemode=$repo/build/codemode
"$codemode" --version

work=$(mktemp -d /tmp/codemode-quickstart.XXXXXX)
id=quickstart-$$
cleanup() {
  "$codemode" --root "$work/state" delete --force "$id" >/dev/null 2>&1 || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

echo "== 3/5 bundle: busybox rootfs + \`codemode spec\` config in $work/bundle"
CODEMODE=$codemode rootfs-tools/make-busybox-bundle.sh "$work/bundle"
# shellcheck source=rootfs-tools/lib.sh
. rootfs-tools/lib.sh
bundle_set_terminal "$work/bundle" false
bundle_set_hostname "$work/bundle" quickstart
# What the container sees of itself, printed from inside.
# shellcheck disable=SC2016 # expanded by the shell inside the container
bundle_set_args "$work/bundle" sh -c '
echo "pid:         $$ (1 = its own pid namespace)"
echo "hostname:    $(hostname)"
echo "interfaces:  $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | tr "\n" " ")"
echo "user:        uid $(id -u) gid $(id -g)"
echo "uid_map:     $(awk "{ print \$1, \$2, \$3 }" /proc/self/uid_map)"
echo "gid_map:     $(awk "{ print \$1, \$2, \$3 }" /proc/self/gid_map)"
echo "root dir:    $(ls / | tr "\n" " ")"
touch /probe 2>/dev/null && echo "root fs:     writable" || echo "root fs:     read-only"
echo "processes:   $(ls -d /proc/[0-9]* | wc -l) visible"
echo "mounts:"
while read -r src dst type opts rest; do
  printf "  %-16s %-8s %s\n" "$dst" "$type" "$(echo "$opts" | cut -c1-60)"
done </proc/self/mounts
echo "security (/proc/self/status):"
grep -E "^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp|Seccomp_filters):" /proc/self/status | sed "s/^/  /"
'

echo "== 4/5 codemode run"
"$codemode" --root "$work/state" run -b "$work/bundle" "$id" </dev/null

echo "== 5/5 an MCP server under codemode-run, answering the MCP SDK's client"
if ! command -v npm >/dev/null; then
  echo "(skipped: no node/npm; apt-get install nodejs npm)"
else
  mkdir -p "$work/mcp" "$work/data"
  echo "hello from the host" >"$work/data/hello.txt"
  (cd "$work/mcp" && npm install --silent --no-audit --no-fund @modelcontextprotocol/sdk \
    @modelcontextprotocol/server-filesystem >/dev/null)
  cp scripts/mcp-hello.mjs "$work/mcp/"
  # The mcpServers entry this is: {"command": "codemode-run", "args": ["--host", "--mount", …]}
  (cd "$work/mcp" && node mcp-hello.mjs "$repo/build/codemode-run" --root "$work/state" --host \
    --mount "$work/mcp/node_modules:/app/node_modules:ro" --mount "$work/data:/data:ro" -- \
    node /app/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js /data) 2>/dev/null
fi
echo
echo "Done. Next: make install; make check (every test suite); man man/codemode-run.1; README.md."
