# shellcheck shell=bash
# Shared by tests/bench/run.sh and tests/bench/profile.sh: the bundles, the cgroup2 environment,
# the runtime command lines and the cleanup. Source it from a bash script with `set -euo pipefail`.

bench_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench_top=$(cd "$bench_here/../.." && pwd)
# shellcheck source=rootfs-tools/lib.sh
. "$bench_top/rootfs-tools/lib.sh"

bench_log() { echo "bench: $*" >&2; }
bench_die() {
  echo "bench: $*" >&2
  exit 1
}

# True when /sys/fs/cgroup is a cgroup2 mount (a native v2 host, or our private namespace).
bench_is_cgroup2() {
  [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]
}

# bench_enter_cgroup2 SCRIPT ARGS...: re-run SCRIPT inside a private mount namespace; on a
# hybrid/v1 host cgroup2 is mounted at /sys/fs/cgroup there (DESIGN.md §5), so runc, crun and
# codemode all see the same unified view, and bench_state_tmpfs can give the runtimes a tmpfs for
# their state roots. The namespace (and every mount made in it) goes away when the script exits.
bench_enter_cgroup2() {
  local script=$1
  shift
  if [ -n "${BENCH_IN_NS:-}" ]; then
    # Inside the namespace: never let our mounts propagate back to the host.
    mount --make-rprivate /
    if ! bench_is_cgroup2; then
      umount -l /sys/fs/cgroup
      mount -t cgroup2 none /sys/fs/cgroup
    fi
    bench_is_cgroup2 || bench_die "could not mount cgroup2 at /sys/fs/cgroup"
    return 0
  fi
  command -v unshare >/dev/null || bench_die "no unshare(1)"
  if bench_is_cgroup2; then export BENCH_HOST_CGROUPS=v2; else export BENCH_HOST_CGROUPS=hybrid; fi
  # BENCH_WANT_HOLDER=1: a second private namespace made from the host's view (its cgroups as
  # they are), for measurements that need them; its process reads a pipe the bench holds open
  # (fd 9), so it ends with the bench whatever happens. Its pid: BENCH_HOLDER.
  if [ -n "${BENCH_WANT_HOLDER:-}" ]; then
    exec 9> >(exec unshare -m --propagation private -- cat >/dev/null)
    export BENCH_HOLDER=$!
  fi
  BENCH_IN_NS=1 exec unshare -m --propagation private bash "$script" "$@"
}

# bench_state_tmpfs DIR: a tmpfs at DIR for the runtimes' --root state dirs, as /run is a tmpfs
# on a normal system. Here /tmp and /run are a journal-less ext4, where creating a file in a
# directory that saw many recent deletions scans every inode freed in the last five minutes
# (ext4's recently_deleted): after a few hundred runs each new state file cost about 1 ms, for
# every runtime, and the benchmark measured the disk instead of the runtimes. Undo it with
# bench_state_tmpfs_release before removing DIR.
bench_state_tmpfs() {
  mkdir -p "$1"
  mount -t tmpfs -o mode=0700,size=64m bench-state "$1" || bench_die "could not mount a tmpfs at $1"
}
bench_state_tmpfs_release() { umount -l "$1" 2>/dev/null || true; }

# bench_make_bundles DIR: DIR/true (args /bin/true) and DIR/sleep (args sleep 1000, same rootfs
# through an absolute root.path). Both configs are identical otherwise and used by all runtimes:
# terminal false; no linux.resources.devices (crun would try to raise RLIMIT_MEMLOCK for its
# device eBPF program, which this host forbids); ociVersion 1.0.2 (crun 1.8.1 rejects 1.2.0).
bench_make_bundles() {
  local dir=$1
  rt_need_jq
  # Always the embedded default config: the same bytes whatever state codemode is in.
  CODEMODE='' "$bench_top/rootfs-tools/make-busybox-bundle.sh" "$dir/true" 2>/dev/null
  bundle_jq "$dir/true" '.ociVersion = "1.0.2" | .process.terminal = false | .process.args = ["/bin/true"]
    | del(.linux.resources.devices)'
  mkdir -p "$dir/sleep"
  jq --arg root "$dir/true/rootfs" '.process.args = ["sleep", "1000"] | .root.path = $root' \
    "$dir/true/config.json" >"$dir/sleep/config.json"
}

# bench_runtime_argv NAME STATEDIR: sets the array RT to the runtime's binary plus --root.
# NAME is crun, runc or codemode (CODEMODE names its binary).
bench_runtime_argv() {
  local name=$1 state=$2 bin
  case $name in
    codemode) bin=${CODEMODE:-$bench_top/build/codemode} ;;
    *) bin=$(command -v "$name") || return 1 ;;
  esac
  [ -x "$bin" ] || return 1
  RT=("$bin" --root "$state")
}

# bench_cleanup_runtime NAME STATEDIR: delete --force every container the runtime lists in
# STATEDIR (or has a directory for there), then remove STATEDIR.
bench_cleanup_runtime() {
  local name=$1 state=$2 id
  if [ -d "$state" ] && bench_runtime_argv "$name" "$state"; then
    # `list -q` is runc/crun's ids-only format; fall back to the first column of the table.
    {
      timeout -k 2 10 "${RT[@]}" list -q 2>/dev/null ||
        timeout -k 2 10 "${RT[@]}" list 2>/dev/null | awk 'NR > 1 { print $1 }'
      ls "$state" 2>/dev/null
    } 2>/dev/null | sort -u | while IFS= read -r id; do
      [ -n "$id" ] || continue
      timeout -k 2 20 "${RT[@]}" delete --force "$id" </dev/null >/dev/null 2>&1 ||
        bench_log "warning: $name delete --force $id failed"
    done || true
  fi
  rm -rf "$state"
}

# bench_sweep_cgroups PREFIX: remove cgroups a runtime failed to remove (once their processes are
# gone), so nothing is left. Call it after every runtime's containers are deleted. Runtimes name
# them after the container id, at the top (runc, crun) or under their own parent (codemode/).
bench_sweep_cgroups() {
  local prefix=$1 cg i
  for cg in $(bench_cgroups "$prefix"); do
    # A SIGKILLed container may take a moment to leave its cgroup.
    for ((i = 0; i < 20; i++)); do
      grep -qx 'populated 1' "$cg/cgroup.events" 2>/dev/null || break
      sleep 0.1
    done
    if grep -qx 'populated 1' "$cg/cgroup.events" 2>/dev/null; then
      # shellcheck disable=SC2046 # one file name per cgroup, no spaces in our ids
      bench_log "warning: $cg still has processes: $(cat $(find "$cg" -name cgroup.procs) | tr '\n' ' ')"
      continue
    fi
    if find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null; then
      bench_log "note: removed $cg, which its runtime left behind"
    else
      bench_log "warning: could not remove $cg"
    fi
  done
}

# bench_cgroups PREFIX: cgroup directories named after our container ids.
bench_cgroups() {
  find /sys/fs/cgroup -maxdepth 3 -type d -name "$1*" -prune 2>/dev/null
}

# bench_kill_strays DIR: SIGKILL runtime processes still running with DIR (our unique temp dir)
# in their command line — a hung runtime outliving its timeout. Prints what it killed.
bench_kill_strays() {
  local dir=$1 pid
  for pid in $(pgrep -f -- "$dir" 2>/dev/null); do
    [ "$pid" = "$$" ] && continue
    echo "process $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-150)"
    kill -KILL "$pid" 2>/dev/null || true
  done
}

# bench_leftovers PREFIX: print the cgroups our containers left behind; empty when clean.
bench_leftovers() {
  local cg
  for cg in $(bench_cgroups "$1"); do echo "cgroup $cg"; done
}
