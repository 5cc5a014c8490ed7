#!/bin/bash
# tests/docker/run.sh — the docker suite for tests/run-all.sh: TAP on stdout; exit 77 (its last stderr
# line says why) when this machine cannot run it. Under CI=true, missing packages are installed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${CODEMODE:=$repo/build/codemode}"
export CODEMODE
cannot() {
  echo "docker suite: $1" >&2
  exit 77
}
[ "$(id -u)" -eq 0 ] || cannot "needs root"
[ -x "$CODEMODE" ] || cannot "no codemode binary at $CODEMODE (make first)"
command -v bats >/dev/null || cannot "bats is not installed"
if ! command -v dockerd >/dev/null; then
  [ "${CI:-}" = true ] || cannot "dockerd is not installed (apt-get install docker.io)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker.io containerd >&2 ||
    cannot "docker.io cannot be installed"
fi
command -v docker >/dev/null || cannot "no docker CLI"
exec bats --tap "$here"/*.bats
