#!/bin/bash
# tests/rootless/deps.sh — what tests/rootless needs on a fresh machine (called by .ci/run):
# newuidmap/newgidmap (uidmap) and the user tools (passwd: useradd, userdel; util-linux: setpriv),
# and for pass 4 (egress as the user) the egress suite's test internet and its clients: iproute2,
# dnsmasq, openssl, python3 (tests/egress/lab.bash), curl and busybox (the bundle).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=rootfs-tools/lib.sh
. "$here/../../rootfs-tools/lib.sh"
rt_ensure_packages uidmap passwd util-linux iproute2 dnsmasq-base openssl python3 curl busybox-static
echo "tests/rootless: $(command -v newuidmap), $(command -v useradd), $(command -v setpriv), $(command -v dnsmasq)"
