# shellcheck shell=bash
# Helpers for the in-VM tests (guest-*.sh): TAP output, bundles sharing the host-built busybox
# rootfs, codemode with a private state dir, cgroup file checks.
set -u
CG=/sys/fs/cgroup
STATE=/run/cmvm-state
BUNDLES=/run/cmvm-bundles
TEMPLATE=$CMVM_WORK/bundle
mkdir -p "$STATE" "$BUNDLES"
T=0
FAILED=0
# cmvm.only=REGEX (CM_VM_ONLY): run only the tests whose description matches.
ONLY=$(sed -n 's/.*\bcmvm.only=\([^ ]*\).*/\1/p' /proc/cmdline)
# cmvm.trace=1 on the kernel command line (CM_VM_TRACE=1 tests/vm/run.sh): every command on the
# serial console, for a test that hangs.
if grep -qw cmvm.trace=1 /proc/cmdline; then
  exec 5>/dev/ttyS0
  BASH_XTRACEFD=5
  set -x
fi

# t DESCRIPTION FUNCTION [ARGS…]: one TAP line; the function's output is shown only on failure.
t() {
  local desc=$1 out rc
  shift
  T=$((T + 1))
  if [ -n "$ONLY" ] && ! [[ $desc =~ $ONLY ]]; then
    echo "ok $T - $desc # skip not selected (cmvm.only)"
    return
  fi
  echo "# $T: $desc"
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "ok $T - $desc"
  else
    FAILED=$((FAILED + 1))
    echo "not ok $T - $desc"
    printf '%s\n' "$out" | tail -n 20 | sed 's/^/#   /'
  fi
}

cm() { timeout 60 "$CODEMODE" --root "$STATE" "$@"; }

# bundle NAME ARGS…: $BUNDLES/NAME/config.json on the shared read-only rootfs, in cgroup
# /cmvm/NAME, running ARGS. Prints the bundle dir.
bundle() {
  local name=$1 dir=$BUNDLES/$1
  shift
  mkdir -p "$dir"
  # The args as a JSON array, one per line (none has a newline): given to jq as positional
  # arguments, a "-c" would be taken as jq's own option.
  local args
  args=$(printf '%s\n' "$@" | jq -R . | jq -sc .)
  jq --arg root "$TEMPLATE/rootfs" --arg cg "/cmvm/$name" --argjson args "$args" \
    '.root.path = $root | .linux.cgroupsPath = $cg | .process.args = $args | .process.terminal = false' \
    "$TEMPLATE/config.json" >"$dir/config.json"
  echo "$dir"
}

# cfg NAME JQ-EXPRESSION: edit a bundle's config.
cfg() {
  local f=$BUNDLES/$1/config.json
  jq "$2" "$f" >"$f.new" && mv "$f.new" "$f"
}

# expect FILE WANT: the first line of a cgroup file.
expect() {
  local got
  got=$(head -n 1 "$1" 2>&1)
  [ "$got" = "$2" ] || { echo "$1: got '$got', want '$2'"; return 1; }
}

# key FILE KEY: the value of "KEY value" in a flat-keyed cgroup file.
key() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

state_of() { cm state "$1" 2>/dev/null | jq -r .status; }
pid_of() { cm state "$1" 2>/dev/null | jq -r .pid; }

# wait_for SECONDS COMMAND…: poll until COMMAND succeeds.
wait_for() {
  local tries=$(($1 * 10))
  shift
  while [ "$tries" -gt 0 ]; do
    "$@" && return 0
    sleep 0.1
    tries=$((tries - 1))
  done
  echo "timed out: $*"
  return 1
}

# The container must not inherit t's capture pipe (it would wait for the container to exit).
run_detached() {
  cm run --detach -b "$BUNDLES/$1" "$1" </dev/null >/run/cmvm-detach.log 2>&1 || {
    cat /run/cmvm-detach.log
    return 1
  }
}
cleanup_container() { cm delete --force "$1" >/dev/null 2>&1; }

# The last test of a variant: no cgroup under cmvm and no state dir is left.
nothing_left() {
  local left
  left=$(find $CG/cmvm -mindepth 1 -type d 2>/dev/null)
  [ -z "$left" ] || { echo "left behind: $left"; return 1; }
  [ -z "$(ls "$STATE")" ] || { echo "state left: $(ls "$STATE")"; return 1; }
}
