#!/bin/bash
# tests/bench/profile.sh [codemode|crun|runc] — where one `run` of /bin/true spends its time.
#
# Same bundle, config and cgroup2 environment as `make bench` (tests/bench/run.sh). Prints:
#   1. strace -f -c: syscall counts and time over the runtime and everything it forks;
#   2. strace -f -T timeline: wall time of the run, the slowest single syscalls, syscalls per pid
#      (the full trace is kept with PROFILE_KEEP=DIR);
#   3. perf stat over PROFILE_RUNS runs (default 20): task-clock, context switches, page faults,
#      CPU migrations (hardware counters when the VM exposes them), when perf is installed.
# Run it for crun too and compare: the difference is the list of things to cut.
#
# Environment: CODEMODE (default build/codemode), PROFILE_RUNS, PROFILE_KEEP (a directory that
# receives strace-c.txt, strace-timeline.txt, perf-stat.txt).
set -euo pipefail

self=$(readlink -f "${BASH_SOURCE[0]}")
# shellcheck source=tests/bench/lib.sh
. "$(dirname "$self")/lib.sh"

name=${1:-codemode}
case $name in
  codemode | crun | runc) ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$self" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
  *) bench_die "usage: ${0##*/} [codemode|crun|runc]" ;;
esac

if [ -z "${BENCH_IN_NS:-}" ]; then
  [ "$(id -u)" -eq 0 ] || bench_die "run as root (containers need it)"
  rt_ensure_packages strace jq busybox-static
fi
bench_enter_cgroup2 "$self" "$@"

export CODEMODE=${CODEMODE:-$bench_top/build/codemode}
runs=${PROFILE_RUNS:-20}
work=$(mktemp -d /tmp/codemode-profile.XXXXXX)
prefix="cmprof$$-"
id=${prefix}run
state=$work/state/$name
bench_state_tmpfs "$work/state"

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  set +e
  bench_kill_strays "$work" >&2
  bench_cleanup_runtime "$name" "$state"
  bench_sweep_cgroups "$prefix"
  [ -n "${PROFILE_KEEP:-}" ] && mkdir -p "$PROFILE_KEEP" && cp "$work"/*.txt "$PROFILE_KEEP/" 2>/dev/null
  bench_state_tmpfs_release "$work/state"
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_runtime_argv "$name" "$state" || bench_die "$name: not installed / not built"
bench_make_bundles "$work"
run=("${RT[@]}" run --bundle "$work/true" "$id")

# One untimed run first: page cache and dentries warm, as in the benchmark's warm-up.
timeout -k 5 30 "${run[@]}" </dev/null >/dev/null || bench_die "$name run failed (see above)"

echo "### $name: $("${RT[@]}" --version 2>/dev/null | head -1); $(nproc) CPUs, kernel $(uname -r)"
echo
echo "### 1. strace -f -c (all processes; time is system time inside syscalls, sorted by it)"
timeout -k 5 60 strace -f -c -S time -o "$work/strace-c.txt" "${run[@]}" </dev/null >/dev/null
cat "$work/strace-c.txt"
echo

echo "### 2. strace -f -T timeline (strace itself slows every syscall; compare shapes, not totals)"
timeout -k 5 60 strace -f -ttt -T -o "$work/strace-timeline.txt" "${run[@]}" </dev/null >/dev/null
awk '
  { t = $2 + 0; if (!first) first = t; last = t; n[$1]++ }
  END { printf "wall time first → last syscall: %.2f ms over %d processes/threads\n", (last - first) * 1000, length(n) }
' "$work/strace-timeline.txt"
echo "syscalls per pid:"
awk '{ n[$1]++ } END { for (p in n) printf "  pid %s: %d\n", p, n[p] }' "$work/strace-timeline.txt" | sort -t: -k2 -rn
echo "slowest 20 single syscalls (pid, start, call, seconds; waits such as wait4/read on the sync"
echo "socket show where one process waits for another):"
awk 'match($0, /<[0-9.]+>$/) {
    d = substr($0, RSTART + 1, RLENGTH - 2); c = ($3 == "<...") ? $4 : $3; sub(/\(.*/, "", c)
    printf "%s\t%s\t%s\t%s\n", d, $1, $2, c
  }' \
  "$work/strace-timeline.txt" | sort -rn | head -20 | awk -F'\t' '{ printf "  %-8s %s  %-18s %.3f ms\n", $2, $3, $4, $1 * 1000 }'
echo

echo "### 3. perf stat, $runs runs of \`$name run\`"
if command -v perf >/dev/null && perf stat -e task-clock true >/dev/null 2>&1; then
  timeout -k 5 $((runs * 20 + 30)) perf stat -r "$runs" -o "$work/perf-stat.txt" -- "${run[@]}" </dev/null >/dev/null
  grep -v '^\s*$' "$work/perf-stat.txt" | grep -v '^#'
else
  echo "perf not available (apt-get install linux-perf); skipped"
fi
