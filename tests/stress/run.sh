#!/bin/bash
# tests/stress/run.sh [N [R]] — N containers in parallel × R rounds of
# create / start / exec / pause / resume / kill / delete, then concurrent operations on one id,
# then nothing may be left: no state dir, process, cgroup, mount, or runtime fd leaked into a
# container. TAP on stdout; figures on stderr. Exit 77 (reason on the last stderr line) when it
# cannot run here.
#
#   N, R         default CM_STRESS_N / CM_STRESS_R, else 50 and 20 (`make stress`); tests/run-all.sh
#                runs it with N=8 R=3.
#   CODEMODE     the binary (default build/codemode)
#
#   1 every lifecycle step of every round succeeded
#   2 no runtime fd reached a container: init and an exec'd process hold only 0, 1, 2
#   3 two `delete --force` at once: exactly one succeeds, the other says the id does not exist
#   4 `start` during `delete --force`: delete succeeds; start succeeds or says why not
#   5 `kill` during `create`: create succeeds; kill succeeds or says why not
#   6 two `create` of one id at once: exactly one succeeds, the other says the id exists
#   7-10 no leaked state dirs, processes, cgroups, mounts
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${CODEMODE:=$repo/build/codemode}"
: "${CM_TEST_TOKEN:=cm-stress-$$}"
: "${CM_RUN_TAG:=$(printf '%04x' $((RANDOM % 65536)))}"
export CODEMODE CM_TEST_TOKEN CM_RUN_TAG
N=${1:-${CM_STRESS_N:-50}}
R=${2:-${CM_STRESS_R:-20}}
STEP_TIMEOUT=${CM_TIMEOUT:-60}

[ "$(id -u)" -eq 0 ] || { echo "tests/stress: needs root" >&2; exit 77; }
command -v jq >/dev/null || { echo "tests/stress: jq is not installed" >&2; exit 77; }
[ -x "$CODEMODE" ] || { echo "tests/stress: $CODEMODE is not built (run make)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/cm-stress.XXXXXX")
chmod 0755 "$work"
ROOT=$work/state
BUNDLE=$work/bundle
# Every id starts with this: the cgroup leak check (ours and tests/run-all.sh's) finds them by it.
PREFIX=cm-test-$CM_RUN_TAG-stress-$$
TOKEN=$CM_TEST_TOKEN:stress-$$

cleanup() {
  local d m
  for d in "$ROOT"/*/; do
    [ -d "$d" ] && timeout 30 "$CODEMODE" --root "$ROOT" delete --force "$(basename "$d")" >/dev/null 2>&1 </dev/null
  done
  while read -r m; do umount -l "$m" 2>/dev/null; done < <(awk -v d="$work" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

# shellcheck source=tests/lib/tap.sh
. "$repo/tests/lib/tap.sh"
check() { # check NAME FILE: pass when FILE is empty, else fail with its first lines
  if [ -s "$2" ]; then fail "$1" "$(head -n 20 "$2")"; else pass "$1"; fi
}

echo "1..10"
mkdir -p "$ROOT"
env -u CODEMODE "$repo/rootfs-tools/make-busybox-bundle.sh" "$BUNDLE" >/dev/null 2>&1 ||
  { echo "Bail out! busybox bundle build failed"; exit 1; }
# shellcheck source=rootfs-tools/lib.sh
. "$repo/rootfs-tools/lib.sh"
bundle_set_terminal "$BUNDLE" false
bundle_set_args "$BUNDLE" sleep 1000
bundle_set_env "$BUNDLE" "CODEMODE_TEST_CONTAINER=$TOKEN"

# cm LOG ARGS…: one runtime call with its output in LOG (a file, never a pipe: a container's
# stdio would hold a pipe open). Fails with the output on stdout.
cm() {
  local log=$1
  shift
  if ! timeout --kill-after=5 "$STEP_TIMEOUT" "$CODEMODE" --root "$ROOT" "$@" </dev/null >"$log" 2>&1; then
    echo "codemode $*: $(tr '\n' ' ' <"$log")"
    return 1
  fi
}

status_of() { timeout 30 "$CODEMODE" --root "$ROOT" state "$1" 2>/dev/null </dev/null | jq -r '.status // empty'; }

wait_status() { # wait_status ID STATUS: poll up to 10 s
  local i got=
  for ((i = 0; i < 100; i++)); do
    got=$(status_of "$1")
    [ "$got" = "$2" ] && return 0
    sleep 0.1
  done
  echo "container $1: status '$got', expected '$2'"
  return 1
}

# fds_of PID: its open fd numbers, space-separated.
fds_of() { find "/proc/$1/fd" -mindepth 1 -printf '%f\n' 2>/dev/null | sort -n | tr '\n' ' '; }

# One worker: R rounds on its own ids. Failures go to $work/fail.W, fd leaks to $work/fd.W.
worker() {
  local w=$1
  local r id log=$work/log.$w fails=$work/fail.$w fdl=$work/fd.$w pid fds
  for ((r = 1; r <= R; r++)); do
    id=$PREFIX-$w-$r
    {
      cm "$log" create --bundle "$BUNDLE" "$id" &&
        cm "$log" start "$id" &&
        wait_status "$id" running &&
        cm "$log" exec "$id" ls /proc/self/fd &&
        { fds=$(tr '\n' ' ' <"$log"); [ "$fds" = "0 1 2 3 " ] || echo "$id: exec'd process holds fds: $fds" >>"$fdl"; } &&
        pid=$(timeout 30 "$CODEMODE" --root "$ROOT" state "$id" </dev/null | jq -r .pid) &&
        { fds=$(fds_of "$pid"); [ "$fds" = "0 1 2 " ] || echo "$id: init $pid holds fds: $fds" >>"$fdl"; } &&
        cm "$log" pause "$id" &&
        wait_status "$id" paused &&
        cm "$log" resume "$id" &&
        wait_status "$id" running &&
        cm "$log" kill "$id" KILL &&
        wait_status "$id" stopped &&
        cm "$log" delete "$id"
    } >>"$fails" 2>&1 || {
      echo "$id (round $r) failed" >>"$fails"
      timeout 30 "$CODEMODE" --root "$ROOT" delete --force "$id" </dev/null >/dev/null 2>&1
    }
  done
  rm -f "$log"
}

# --- 1-2: parallel rounds ----------------------------------------------------------------------
echo "# stress: $N containers in parallel x $R rounds ($((N * R)) lifecycles) with $CODEMODE" >&2
t0=$(date +%s.%N)
pids=()
for ((w = 1; w <= N; w++)); do
  worker "$w" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
t1=$(date +%s.%N)
cat "$work"/fail.* >"$work/fails" 2>/dev/null
cat "$work"/fd.* >"$work/fdleaks" 2>/dev/null
nfail=$(grep -c 'failed$' "$work/fails")
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
echo "# stress: $((N * R)) lifecycles ($((N * R * 7)) runtime calls + state polls) in ${secs}s, $nfail failed" >&2
echo "# stress: $((N * R)) lifecycles in ${secs}s, $nfail failed"
check "$N containers x $R rounds of create/start/exec/pause/resume/kill/delete" "$work/fails"
check "no runtime fd reaches a container's init or exec'd process" "$work/fdleaks"

# --- 3-6: concurrent operations on one id --------------------------------------------------------
# Clear errors only: each failing call must say one of these.
clear_error='does not exist|not running|stopped|still being created|is busy|already exists|already running'

# outcome RC LOG: "ok", or the error line, or "UNCLEAR: …"
judge() {
  if [ "$1" -eq 0 ]; then echo ok; return; fi
  if grep -qE "$clear_error" "$2"; then echo "error: $(head -n 1 "$2")"; else echo "UNCLEAR (rc $1): $(tr '\n' ' ' <"$2")"; fi
}

problems=$work/p3
: >"$problems"
for i in 1 2 3 4 5; do
  id=$PREFIX-dd-$i
  cm "$work/c" create --bundle "$BUNDLE" "$id" >>"$problems" || continue
  timeout 60 "$CODEMODE" --root "$ROOT" delete --force "$id" </dev/null >"$work/d1" 2>&1 &
  a=$!
  timeout 60 "$CODEMODE" --root "$ROOT" delete --force "$id" </dev/null >"$work/d2" 2>&1 &
  b=$!
  ra=0 rb=0
  wait "$a" || ra=$?
  wait "$b" || rb=$?
  # delete --force of a container that is gone exits 0, as runc's and crun's (containerd relies
  # on it): both succeed, and neither may say anything but that the container does not exist.
  if [ "$ra" -ne 0 ] || [ "$rb" -ne 0 ] || grep -qv "does not exist" "$work/d1" "$work/d2"; then
    echo "$id: delete $ra: $(cat "$work/d1") / delete $rb: $(cat "$work/d2")" >>"$problems"
  fi
done
check "two delete --force at once: both succeed (the second finds nothing to delete)" "$problems"

problems=$work/p4
: >"$problems"
for i in 1 2 3 4 5; do
  id=$PREFIX-sd-$i
  cm "$work/c" create --bundle "$BUNDLE" "$id" >>"$problems" || continue
  timeout 60 "$CODEMODE" --root "$ROOT" start "$id" </dev/null >"$work/s" 2>&1 &
  a=$!
  timeout 60 "$CODEMODE" --root "$ROOT" delete --force "$id" </dev/null >"$work/d" 2>&1 &
  b=$!
  ra=0 rb=0
  wait "$a" || ra=$?
  wait "$b" || rb=$?
  out=$(judge "$ra" "$work/s")
  [ "$rb" -eq 0 ] || echo "$id: delete --force during start failed ($rb): $(cat "$work/d")" >>"$problems"
  case $out in UNCLEAR*) echo "$id: start during delete: $out" >>"$problems" ;; esac
  [ ! -e "$ROOT/$id" ] || echo "$id: state dir left after delete --force" >>"$problems"
done
check "start during delete --force: delete succeeds, start succeeds or gives a clear error" "$problems"

problems=$work/p5
: >"$problems"
for i in 1 2 3; do
  id=$PREFIX-kc-$i
  timeout 60 "$CODEMODE" --root "$ROOT" create --bundle "$BUNDLE" "$id" </dev/null >"$work/c" 2>&1 &
  a=$!
  kills=0
  while kill -0 "$a" 2>/dev/null && [ "$kills" -lt 200 ]; do
    rk=0
    timeout 60 "$CODEMODE" --root "$ROOT" kill "$id" KILL </dev/null >"$work/k" 2>&1 || rk=$?
    out=$(judge "$rk" "$work/k")
    case $out in UNCLEAR*) echo "$id: kill during create: $out" >>"$problems" ;; esac
    kills=$((kills + 1))
  done
  ra=0
  wait "$a" || ra=$?
  [ "$ra" -eq 0 ] || echo "$id: create with concurrent kills failed ($ra): $(cat "$work/c")" >>"$problems"
  cm "$work/d" delete --force "$id" >>"$problems"
done
check "kill during create: create succeeds, every kill succeeds or gives a clear error" "$problems"

problems=$work/p6
: >"$problems"
for i in 1 2 3; do
  id=$PREFIX-cc-$i
  timeout 60 "$CODEMODE" --root "$ROOT" create --bundle "$BUNDLE" "$id" </dev/null >"$work/c1" 2>&1 &
  a=$!
  timeout 60 "$CODEMODE" --root "$ROOT" create --bundle "$BUNDLE" "$id" </dev/null >"$work/c2" 2>&1 &
  b=$!
  ra=0 rb=0
  wait "$a" || ra=$?
  wait "$b" || rb=$?
  if ! { [ "$ra" -eq 0 ] && [ "$rb" -eq 1 ] && grep -q "exists" "$work/c2"; } &&
    ! { [ "$rb" -eq 0 ] && [ "$ra" -eq 1 ] && grep -q "exists" "$work/c1"; }; then
    echo "$id: create $ra: $(cat "$work/c1") / create $rb: $(cat "$work/c2")" >>"$problems"
  fi
  cm "$work/d" delete --force "$id" >>"$problems"
done
check "two creates of one id at once: one succeeds, the other says the id exists" "$problems"

# --- 7-10: nothing left behind ------------------------------------------------------------------
sleep 0.5
ls -A "$ROOT" >"$work/l7"
check "no state dir left behind" "$work/l7"
: >"$work/l8"
for f in /proc/[0-9]*/environ; do
  grep -qzF -- "CODEMODE_TEST_CONTAINER=$TOKEN" "$f" 2>/dev/null && echo "process ${f:6:-8}: $(tr '\0' ' ' <"${f%environ}cmdline" 2>/dev/null)" >>"$work/l8"
done
# A runtime (or a not-yet-exec'd clone of it) still working on our --root; "[/]" keeps grep from
# matching its own command line.
{ grep -slzx -- "[/]${ROOT#/}" /proc/[0-9]*/cmdline 2>/dev/null | sed 's/^/runtime still running: /'; } >>"$work/l8"
check "no process left behind" "$work/l8"
find /sys/fs/cgroup -mindepth 1 -maxdepth 6 -type d -name "$PREFIX-*" 2>/dev/null >"$work/l9"
check "no cgroup left behind" "$work/l9"
awk -v d="$work" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo >"$work/l10"
check "no mount left behind" "$work/l10"

[ "$failed" -eq 0 ]
