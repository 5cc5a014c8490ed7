#!/bin/bash
# tests/docker/run.sh — the docker suite for tests/run-all.sh: TAP on stdout; exit 77 (its last stderr
# line says why) when this machine cannot run it. Under CI=true, missing packages are installed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/bats_suite.sh
. "$here/../lib/bats_suite.sh"
bats_suite_init docker
bats_suite_need docker.io containerd -- dockerd
command -v docker >/dev/null || bats_suite_cannot "no docker CLI"
exec bats --tap "$here"/*.bats
