#!/bin/bash
# tests/egress/deps.sh — what the egress suite needs on a fresh machine (called by .ci/run):
# dnsmasq (the test internet's DNS server), openssl (its CA), curl, python3, node and npm (the
# clients), docker (the runtimeArgs cases, tests/docker/deps.sh installs it), then the npm
# packages of the MCP case, cached in tests/egress/.work.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=rootfs-tools/lib.sh
. "$here/../../rootfs-tools/lib.sh"
rt_ensure_packages dnsmasq-base openssl curl python3 iproute2 util-linux
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  rt_ensure_packages nodejs npm
fi
"$here/npm-install.sh"
