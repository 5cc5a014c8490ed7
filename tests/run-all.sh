#!/bin/bash
# tests/run-all.sh [UNIT-BIN…] — every suite this machine can run (what `make check` calls).
#
#   1. unit        the cmocka binaries given as arguments
#   2. integration bats --tap tests/integration   (needs $CODEMODE, default build/codemode)
#   3. security    bats --tap tests/security
#   4. extra       tests/<suite>/run.sh for docker, containerd, cri, mcp, image, egress, rootless, ci, vm, stress, valgrind when
#                  present: TAP on stdout, exit 77 = "cannot run here" (its last stderr line says
#                  why); stress runs small here (CM_STRESS_N=8 CM_STRESS_R=3; `make stress` is big)
#   5. leaks       no mount under the run's temp dir, no process carrying the run's token, no
#                  cgroup named after one of the run's containers (cm-test-<tag>-*), no loop
#                  device on an image in the run's temp dir: each leak is a failure
#   6. host        the host is never touched: the host's /dev nodes, /etc, the runtime binaries,
#                  busybox and the test tree's fixtures (owner, mode, ctime, content) are the same
#                  as before the suites (tests/lib/host_sentinel.sh says what may change); each
#                  changed file is a failure, named. CM_HOST_SENTINEL=off skips it outside CI
#
# Ends with exactly one line `N passed, N failed, N skipped` and exits 1 if anything failed.
# Under CI=true a suite that cannot run counts as failed.
# Knobs: CM_SUITES="unit integration security docker …" (default: all of them), CM_TEST_FILTER (a bats
# --filter regex), CM_TIMEOUT (seconds per codemode call in the bats suites, default 60),
# CM_BATS_SKIP="security/x.bats …" (bats files not to run; the oracle pass in CI uses it).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=tests/lib/suite.sh
. "$here/lib/suite.sh"

: "${CODEMODE:=$repo/build/codemode}"
case $CODEMODE in /*) ;; *) CODEMODE=$PWD/$CODEMODE ;; esac
export CODEMODE
suites=${CM_SUITES:-unit integration security docker containerd cri mcp image egress rootless ci vm stress valgrind}
export CM_STRESS_N=${CM_STRESS_N:-8} CM_STRESS_R=${CM_STRESS_R:-3}

if [ "$(id -u)" -ne 0 ]; then
  echo "tests/run-all.sh: the integration suites need root" >&2
fi

# One temp dir for the whole run: bats puts its per-test dirs under it (TMPDIR), so "nothing
# mounted under it" at the end covers every test.
# On a tmpfs when there is room: every test copies a busybox bundle (~400 symlinks), which costs
# seconds per test on a journaling disk and milliseconds on tmpfs.
base=${CM_TEST_TMPBASE:-}
if [ -z "$base" ]; then
  base=/tmp
  if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] &&
    [ "$(df -Pm /dev/shm | awk 'NR == 2 { print $4 }')" -gt 1024 ]; then
    base=/dev/shm
  fi
fi
WORK=$(mktemp -d "$base/cm-check.XXXXXX")
chmod 0755 "$WORK" # user-namespace tests need the mapped root to reach their bundles
export TMPDIR=$WORK
export CM_TEST_TOKEN=cm-check-$$-$RANDOM
CM_RUN_TAG=$(printf '%04x' $((RANDOM % 65536)))
export CM_RUN_TAG
# No BATS_TEST_TIMEOUT by default: bats 1.8's timeout trap breaks multi-line command
# substitutions in teardown. Every codemode call in the suites has its own timeout (CM_TIMEOUT).

want() { [[ " $suites " == *" $1 "* ]]; }

# --- helpers (C programs the bats suites use) -------------------------------------------------
build_helpers() {
  export CM_HELPER_DIR=$WORK/helpers
  mkdir -p "$CM_HELPER_DIR"
  local src
  for src in "$here"/helpers/*.c; do
    [ -e "$src" ] || continue
    cc -std=gnu11 -O2 -Wall -Wextra -o "$CM_HELPER_DIR/$(basename "$src" .c)" "$src" ||
      suite_note "FAILED: test helper $src does not compile"
  done
}

# --- bats suites ------------------------------------------------------------------------------
run_bats_suite() {
  local name=$1 dir=$here/$1 tap rc=0 files=()
  shopt -s nullglob
  local f
  for f in "$dir"/*.bats; do
    if [[ " ${CM_BATS_SKIP:-} " == *" $name/${f##*/} "* ]]; then
      echo "# $name/${f##*/} not run (CM_BATS_SKIP)"
      continue
    fi
    files+=("$f")
  done
  shopt -u nullglob
  echo "#"
  echo "# === $name ==="
  if [ "${#files[@]}" -eq 0 ]; then
    echo "# (no tests in tests/$name yet)"
    return
  fi
  if ! command -v bats >/dev/null; then
    suite_skip "$name" "bats is not installed (apt-get install bats)"
    return
  fi
  if ! command -v jq >/dev/null; then
    suite_skip "$name" "jq is not installed (apt-get install jq)"
    return
  fi
  if [ ! -x "$CODEMODE" ]; then
    SUITE_FAILED=$((SUITE_FAILED + 1))
    suite_note "FAILED: suite $name: $CODEMODE is not built (run make)"
    return
  fi
  tap=$WORK/$name.tap
  local args=(--tap)
  [ -n "${CM_TEST_FILTER:-}" ] && args+=(--filter "$CM_TEST_FILTER")
  bats "${args[@]}" "${files[@]}" </dev/null 2>&1 | tee "$tap"
  rc=${PIPESTATUS[0]}
  suite_tally_tap "$tap"
  if [ "$TAP_FAILED" -gt 0 ]; then
    suite_note "FAILED: suite $name: $TAP_FAILED test(s)"
  elif [ "$rc" -ne 0 ]; then
    # bats itself failed (syntax error in a file, setup_file crash) without a `not ok` line.
    SUITE_FAILED=$((SUITE_FAILED + 1))
    suite_note "FAILED: suite $name: bats exited with status $rc"
  fi
}

# --- extra suites with their own runner -------------------------------------------------------
run_extra_suite() {
  local name=$1 runner=$here/$1/run.sh tap rc=0 reason
  [ -x "$runner" ] || return 0
  echo "#"
  echo "# === $name ==="
  tap=$WORK/$name.tap
  "$runner" </dev/null 2>"$WORK/$name.err" | tee "$tap"
  rc=${PIPESTATUS[0]}
  cat "$WORK/$name.err" >&2
  if [ "$rc" -eq 77 ]; then
    reason=$(tail -n 1 "$WORK/$name.err")
    suite_skip "$name" "${reason:-its runner says it cannot run here}"
    return
  fi
  suite_tally_tap "$tap"
  if [ "$TAP_FAILED" -gt 0 ]; then
    suite_note "FAILED: suite $name: $TAP_FAILED test(s)"
  elif [ "$rc" -ne 0 ]; then
    SUITE_FAILED=$((SUITE_FAILED + 1))
    suite_note "FAILED: suite $name: $runner exited with status $rc"
  fi
}

# --- leak checks ------------------------------------------------------------------------------
leak() {
  SUITE_FAILED=$((SUITE_FAILED + 1))
  suite_note "FAILED (leak): $1"
}

# cgroups of this run's containers: ids are cm-test-<tag>-… (tests/lib/helpers.bash); other
# runs on the same machine use other tags.
# Processes started by this run: their environment carries CM_TEST_TOKEN (codemode, hooks,
# helpers) or CODEMODE_TEST_CONTAINER=<token>:<id> (container processes, set in config.json).
# Pure bash reads: a subprocess spawned here would carry the token itself.
token_pids() {
  local f p kv
  for f in /proc/[0-9]*; do
    p=${f#/proc/}
    [ "$p" = "$$" ] || [ "$p" = "$BASHPID" ] && continue
    {
      while IFS= read -r -d '' kv; do
        case $kv in
          "CM_TEST_TOKEN=$CM_TEST_TOKEN" | "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN"*)
            echo "$p"
            break
            ;;
        esac
      done <"$f/environ"
    } 2>/dev/null
  done
}

check_leaks() {
  local m p d found=0
  echo "#"
  echo "# === leak check ==="
  # Give exiting processes a moment to be reaped.
  sleep 0.5
  for p in $(token_pids); do
    leak "process $p still running: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
    found=1
  done
  # They carry this run's token, so they are ours to stop.
  for p in $(token_pids); do kill -9 "$p" 2>/dev/null; done
  while read -r m; do
    [ -n "$m" ] || continue
    leak "mount left behind: $m"
    found=1
    umount -l "$m" 2>/dev/null
  done < <(awk -v d="$WORK" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
  # Loop devices attached to an image in the run's temp dir (tests attach their own images).
  while IFS=: read -r d _; do
    [ -n "$d" ] || continue
    leak "loop device left attached: $d ($(losetup -n -O BACK-FILE "$d" 2>/dev/null))"
    found=1
    losetup -d "$d" 2>/dev/null
  done < <(losetup -a 2>/dev/null | awk -v w="($WORK/" 'index($0, w) > 0')
  while read -r d; do
    [ -n "$d" ] || continue
    leak "cgroup left behind: $d"
    found=1
    rmdir "$d" 2>/dev/null
  done < <(find /sys/fs/cgroup -mindepth 1 -maxdepth 6 -type d -name "*cm-test-$CM_RUN_TAG-*" 2>/dev/null | sort -r)
  # The egress suite's test internet (tests/egress/lab.bash names its namespaces cm-eg-<tag>…).
  while read -r d; do
    [ -n "$d" ] || continue
    leak "network namespace left behind: $d"
    found=1
    ip netns del "$d" 2>/dev/null
  done < <(ip netns list 2>/dev/null | awk -v t="cm-eg-$CM_RUN_TAG" 'index($1, t) == 1 { print $1 }')
  [ "$found" -eq 0 ] && echo "# nothing left behind"
}

cleanup() {
  # Never descend into a leftover mount while removing the temp dir.
  local m
  while read -r m; do
    umount -l "$m" 2>/dev/null
  done < <(awk -v d="$WORK" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
  rm -rf --one-file-system "$WORK" 2>/dev/null
}
trap cleanup EXIT

# --- the host sentinel -------------------------------------------------------------------------
sentinel_on() { [ "${CI:-}" = true ] || [ "${CM_HOST_SENTINEL:-on}" != off ]; }

check_host() {
  local line n=0
  echo "#"
  echo "# === host sentinel ==="
  while IFS= read -r line; do
    SUITE_FAILED=$((SUITE_FAILED + 1))
    suite_note "FAILED ($line)"
    n=$((n + 1))
  done < <("$here/lib/host_sentinel.sh" check "$WORK/host.sentinel" 2>&1)
  [ "$n" -eq 0 ] && echo "# the host's /dev, /etc, runtime binaries, busybox and fixtures are as they were"
}

# --- main -------------------------------------------------------------------------------------
echo "# codemode test run: CODEMODE=$CODEMODE CI=${CI:-} token=$CM_TEST_TOKEN"
build_helpers
if sentinel_on; then
  "$here/lib/host_sentinel.sh" record "$WORK/host.sentinel" || suite_note "FAILED: host sentinel could not record"
fi
if want unit; then
  echo "#"
  echo "# === unit ==="
  if [ $# -eq 0 ]; then
    echo "# (no unit test binaries given)"
  else
    suite_run_unit "$@"
  fi
fi
# Each suite's wall time, so that a slow CI run says where its minutes went.
timed() {
  local t0=$SECONDS
  "$@"
  echo "# ($2: $((SECONDS - t0)) s)"
}
want integration && timed run_bats_suite integration
want security && timed run_bats_suite security
for s in $suites; do
  case $s in unit | integration | security) ;; *) timed run_extra_suite "$s" ;; esac
done
check_leaks
sentinel_on && check_host
suite_summary
[ "$SUITE_FAILED" -eq 0 ]
