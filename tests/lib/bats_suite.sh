# shellcheck shell=bash
# The preamble of a bats suite run by tests/run-all.sh (docker, containerd): TAP on stdout, exit 77
# with the reason as the last stderr line when this machine cannot run it.
#   bats_suite_init NAME       needs root, the codemode binary (exported as CODEMODE) and bats
#   bats_suite_need PKG… -- CMD…
#                              when a CMD is missing: install the PKGs under CI=true, else exit 77
bats_suite_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

bats_suite_init() {
  BATS_SUITE_NAME=$1
  : "${CODEMODE:=$bats_suite_repo/build/codemode}"
  export CODEMODE
  [ "$(id -u)" -eq 0 ] || bats_suite_cannot "needs root"
  [ -x "$CODEMODE" ] || bats_suite_cannot "no codemode binary at $CODEMODE (make first)"
  command -v bats >/dev/null || bats_suite_cannot "bats is not installed"
}

bats_suite_cannot() {
  echo "$BATS_SUITE_NAME suite: $1" >&2
  exit 77
}

bats_suite_need() {
  local pkgs=() cmd missing=
  while [ $# -gt 0 ] && [ "$1" != -- ]; do pkgs+=("$1"); shift; done
  shift
  for cmd in "$@"; do command -v "$cmd" >/dev/null || missing=$cmd; done
  [ -z "$missing" ] && return 0
  [ "${CI:-}" = true ] || bats_suite_cannot "$missing is not installed (apt-get install ${pkgs[*]})"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${pkgs[@]}" >&2 ||
    bats_suite_cannot "${pkgs[0]} cannot be installed"
}
