# shellcheck shell=bash
# shellcheck disable=SC2034 # status, output, lines, stdout, stderr are read by the bats tests
# Shared helpers for the bats suites (tests/integration, tests/security).
#
#   load ../lib/helpers
#
# gives every test file:
#   setup_file     builds one busybox bundle template per file ($CM_TEMPLATE)
#   setup          a fresh temp dir $TEST_DIR with its own state dir $ROOT, a copy of the template
#                  in $BUNDLE (args ["true"], terminal false), and a unique container id $CID
#   teardown       `delete --force` of every container in $ROOT, kills survivors, unmounts and
#                  fails on anything left mounted under $TEST_DIR, removes $TEST_DIR
#   cm ARGS…       "$CODEMODE" --root "$ROOT" ARGS…
#   run_cm ARGS…   like bats `run cm ARGS…`, but with stdio on files, so a container that outlives
#                  the command (create, run --detach) never holds bats' pipes; sets $status,
#                  $output (stdout+stderr), $stdout, $stderr, $lines
#   set_args CMD…, set_cfg 'jq-expression' [jq options], set_env NAME=VALUE…
#   wait_status ID STATUS, state_field ID FIELD, host_pid_alive PID
#   codemode_only ID, codemode_part ID, oracle_pending ID: the oracle markers (oracle.bash)
# A file that defines its own setup/teardown calls cm_setup / cm_teardown from them.

CM_REPO=$(cd "${BASH_SOURCE[0]%/*}/../.." && pwd)
# shellcheck source=rootfs-tools/lib.sh
. "$CM_REPO/rootfs-tools/lib.sh"

: "${CODEMODE:=$CM_REPO/build/codemode}"
export CODEMODE
# A token in every test container's environment: teardown and tests/run-all.sh find leaked
# container processes by it (and only kill processes that carry it).
: "${CM_TEST_TOKEN:=cm-adhoc-$$}"
export CM_TEST_TOKEN
# In every container id (cm-test-<tag>-…), so a run's leak check finds its own cgroups and not
# those of another run on the same machine.
: "${CM_RUN_TAG:=$(printf '%04x' $((RANDOM % 65536)))}"
export CM_RUN_TAG
CM_TIMEOUT=${CM_TIMEOUT:-60}
# shellcheck source=tests/lib/oracle.bash
. "$CM_REPO/tests/lib/oracle.bash"

bats_require_minimum_version 1.5.0

# ---------------------------------------------------------------------------------------------
# Building blocks

# cm_build_helpers: compile tests/helpers/*.c once (tests/run-all.sh does it up front and sets
# CM_HELPER_DIR); prints nothing, fails the test if a helper does not compile.
cm_build_helpers() {
  if [ -z "${CM_HELPER_DIR:-}" ]; then
    CM_HELPER_DIR=$BATS_FILE_TMPDIR/helpers
  fi
  mkdir -p "$CM_HELPER_DIR"
  local src bin
  for src in "$CM_REPO"/tests/helpers/*.c; do
    [ -e "$src" ] || continue
    bin=$CM_HELPER_DIR/$(basename "$src" .c)
    [ -x "$bin" ] && [ "$bin" -nt "$src" ] && continue
    cc -std=gnu11 -O2 -Wall -Wextra -o "$bin" "$src" || return 1
  done
  export CM_HELPER_DIR
}

# cm_make_template DIR: a busybox bundle ready for non-interactive tests.
cm_make_template() {
  local dir=$1
  # The embedded default config, not `codemode spec`: the suite should not depend on `spec` to
  # test everything else (spec.bats tests `spec` itself).
  env -u CODEMODE "$CM_REPO/rootfs-tools/make-busybox-bundle.sh" "$dir" 2>/dev/null || return 1
  bundle_set_terminal "$dir" false || return 1
  bundle_set_args "$dir" true || return 1
  bundle_set_hostname "$dir" cm-test || return 1
  cm_oracle_adapt_template "$dir"
}

cm() {
  timeout --kill-after=5 "$CM_TIMEOUT" "$CODEMODE" --root "$ROOT" "$@"
}

# run_cm ARGS…: see the header. Output goes to files, never to a pipe a container could keep.
# stdin is an empty file of the test's own, not the host's /dev/null: a runtime under test may
# chown its stdio to the container's user (crun does), and /dev/null is the whole machine's.
CM_RUN_SEQ=0
run_cm() {
  CM_RUN_SEQ=$((CM_RUN_SEQ + 1))
  local out=$TEST_DIR/.run_cm.$CM_RUN_SEQ.out err=$TEST_DIR/.run_cm.$CM_RUN_SEQ.err
  status=0
  : >"$TEST_DIR/.stdin-empty"
  cm "$@" <"$TEST_DIR/.stdin-empty" >"$out" 2>"$err" 3>&- || status=$?
  stdout=$(cat "$out")
  stderr=$(cat "$err")
  output=$(cat "$out" "$err")
  mapfile -t lines <<<"$output"
  if [ -n "${BATS_TRACE:-}" ]; then echo "# run_cm $* -> $status: $output" >&3; fi
  return 0
}

set_args() { bundle_set_args "$BUNDLE" "$@"; }
set_cfg() {
  local expr=$1
  shift
  bundle_jq "$BUNDLE" "$expr" "$@"
}
set_env() { bundle_set_env "$BUNDLE" "$@"; }

# state_field ID FIELD: one field of `codemode state ID` (empty when the command fails).
state_field() {
  cm state "$1" 2>/dev/null | jq -r ".$2 // empty"
}

# wait_status ID STATUS [SECONDS]: poll `state` until it reports STATUS.
wait_status() {
  local id=$1 want=$2 tries=$((${3:-10} * 10)) got=
  while [ "$tries" -gt 0 ]; do
    got=$(state_field "$id" status)
    [ "$got" = "$want" ] && return 0
    sleep 0.1
    tries=$((tries - 1))
  done
  echo "container $id: status '$got', expected '$want'" >&2
  return 1
}

# wait_file PATH [SECONDS]
wait_file() {
  local tries=$((${2:-10} * 10))
  while [ "$tries" -gt 0 ]; do
    [ -e "$1" ] && return 0
    sleep 0.1
    tries=$((tries - 1))
  done
  echo "timed out waiting for $1" >&2
  return 1
}

# Process scans use one grep over /proc/*/{environ,cmdline}: bats traces every shell command, so
# a bash loop over /proc takes tens of seconds inside a test.

# is_test_process PID [TOKEN]: does PID carry TOKEN (default: this run's test token), i.e. is it a
# container process we started?
is_test_process() {
  grep -qzF -- "CODEMODE_TEST_CONTAINER=${2:-$CM_TEST_TOKEN}" "/proc/$1/environ" 2>/dev/null
}

# test_processes [TOKEN]: pids of every live process carrying TOKEN (default: this run's).
test_processes() {
  { grep -slzF -- "CODEMODE_TEST_CONTAINER=${1:-$CM_TEST_TOKEN}" /proc/[0-9]*/environ || true; } |
    cut -d/ -f3
}

# root_processes DIR: processes with DIR as one of their arguments (codemode still working on
# the state dir DIR given as --root). The pattern starts with "[/]" so it never matches the grep
# that searches with it.
root_processes() {
  local re
  re="[/]$(printf '%s' "${1#/}" | sed 's/[].[\*^$]/\\&/g')"
  { grep -slzx -- "$re" /proc/[0-9]*/cmdline || true; } | cut -d/ -f3
}

# bg_track PID: a background helper (recvtty, a namespace holder) teardown must stop.
bg_track() { CM_BG_PIDS+=("$1"); }

# mount_track PATH: a mount the test made on purpose (e.g. a netns file); teardown unmounts it
# before looking for leaks.
mount_track() { CM_MOUNTS+=("$1"); }

# mounts_under DIR: mount points in this mount namespace at or below DIR, deepest first.
# An empty or "/" DIR (a variable a failed setup never set) lists nothing: callers unmount what it
# prints, and "everything under /" is the host's /sys, /proc and /dev (issue 14: a teardown whose
# setup had failed lazily unmounted all of them).
mounts_under() {
  case ${1%/} in
    "") echo "mounts_under: refusing \"$1\" (empty or /)" >&2; return 0 ;;
  esac
  awk -v d="${1%/}" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

skip_unless_file() {
  [ -e "$1" ] || skip "${2:-$1 is missing}"
}

# ---------------------------------------------------------------------------------------------
# setup / teardown

cm_setup_file() {
  export CM_TEMPLATE=$BATS_FILE_TMPDIR/template
  [ -d "$CM_TEMPLATE" ] || cm_make_template "$CM_TEMPLATE"
  cm_build_helpers
}

cm_setup() {
  [ -z "${CM_FILE_ONLY:-}" ] || codemode_only "$CM_FILE_ONLY"
  [ -x "$CODEMODE" ] || {
    echo "CODEMODE=$CODEMODE is not built (run make)" >&2
    return 1
  }
  TEST_DIR=$BATS_TEST_TMPDIR
  ROOT=$TEST_DIR/state
  BUNDLE=$TEST_DIR/bundle
  CID=cm-test-$CM_RUN_TAG-$BATS_TEST_NUMBER-$RANDOM
  CM_BG_PIDS=()
  CM_MOUNTS=()
  mkdir -p "$ROOT"
  cp -a "$CM_TEMPLATE" "$BUNDLE"
  # Per-test token value: the run-wide token plus the id, so teardown finds exactly this test's.
  set_env "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN:$CID"
}

cm_teardown() {
  local problems=() id ids pid m
  [ -n "${TEST_DIR:-}" ] || return 0
  # 1. Every container in this test's state dir, by `list` and by directory name (in case list is
  #    the broken part).
  ids=$(CM_TIMEOUT=15 cm list -q 2>/dev/null </dev/null)
  ids+=" $(ls -1 "$ROOT" 2>/dev/null)"
  for id in $(printf '%s\n' $ids | sort -u); do
    CM_TIMEOUT=15 cm delete --force "$id" >/dev/null 2>&1 </dev/null || true
  done
  # 2. Background helpers the test started.
  for pid in "${CM_BG_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  # 3. Container processes that survived delete --force: a leak. Kill them by pid (they carry
  #    this test's token, so they are ours). codemode's delete --force returns once they are
  #    gone; runc's and crun's return once SIGKILL is sent, so against them a process still
  #    dying (an OOM-killed cgroup's, freeing its memory) gets two seconds first.
  if [ "${CM_RUNTIME:-codemode}" != codemode ]; then
    for _ in $(seq 20); do
      [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ] && break
      sleep 0.1
    done
  fi
  for pid in $(test_processes "$CM_TEST_TOKEN:$CID") $(root_processes "$ROOT"); do
    problems+=("process $pid survived delete --force: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)")
    kill -9 "$pid" 2>/dev/null || true
  done
  # 4. Mounts: the ones the test asked for go quietly; anything else under TEST_DIR is a leak.
  for m in "${CM_MOUNTS[@]}"; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  for m in $(mounts_under "$TEST_DIR"); do
    problems+=("mount left behind: $m")
    umount -l "$m" 2>/dev/null || true
  done
  # 5. Remove the directory; --one-file-system so a mount we failed to remove is never descended.
  chattr -R -i "$TEST_DIR" 2>/dev/null || true
  rm -rf --one-file-system "$TEST_DIR" 2>/dev/null || true
  if [ "${#problems[@]}" -gt 0 ]; then
    printf 'teardown: %s\n' "${problems[@]}" >&2
    return 1
  fi
}

setup_file() { cm_setup_file; }
setup() { cm_setup; }
teardown() { cm_teardown; }
