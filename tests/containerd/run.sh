#!/bin/bash
# tests/containerd/run.sh — the containerd suite for tests/run-all.sh: TAP on stdout; exit 77 (its last stderr
# line says why) when this machine cannot run it. Under CI=true, missing packages are installed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${CODEMODE:=$repo/build/codemode}"
export CODEMODE
cannot() {
  echo "containerd suite: $1" >&2
  exit 77
}
[ "$(id -u)" -eq 0 ] || cannot "needs root"
[ -x "$CODEMODE" ] || cannot "no codemode binary at $CODEMODE (make first)"
command -v bats >/dev/null || cannot "bats is not installed"
if ! command -v containerd >/dev/null || ! command -v ctr >/dev/null; then
  [ "${CI:-}" = true ] || cannot "containerd is not installed (apt-get install containerd)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends containerd >&2 ||
    cannot "containerd cannot be installed"
fi
exec bats --tap "$here"/*.bats
