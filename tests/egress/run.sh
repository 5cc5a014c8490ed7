#!/bin/bash
# tests/egress/run.sh — the egress suite for tests/run-all.sh (issue 16): TAP on stdout; exit 77
# (its last stderr line says why) when this machine cannot run it. Everything runs inside
# network namespaces the suite makes itself (lab.bash).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/bats_suite.sh
. "$here/../lib/bats_suite.sh"
bats_suite_init egress
bats_suite_need dnsmasq-base -- dnsmasq
bats_suite_need openssl curl python3 -- openssl curl python3.11
command -v node >/dev/null || bats_suite_cannot "node is not installed"
command -v nsenter >/dev/null || bats_suite_cannot "nsenter is not installed (util-linux)"
[ -x "$(dirname "$CODEMODE")/codemode-broker" ] || bats_suite_cannot "codemode-broker is not built (make)"
"$here/npm-install.sh" || bats_suite_cannot "npm install of the MCP packages failed (is the npm registry reachable?)"
exec bats --tap "$here"/*.bats
