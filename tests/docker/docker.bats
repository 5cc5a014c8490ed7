#!/usr/bin/env bats
# Docker drives codemode for real: a private dockerd (tests/docker/dockerd.bash) with codemode
# registered twice in daemon.json ("codemode" plainly, "codemode-args" with runtimeArgs). Every
# case is a function of the runtime name that prints what it observed (output, exit codes,
# states); it runs under runc first, then under codemode, and the two transcripts must match.

CM_REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
export CM_REPO
: "${CODEMODE:=$CM_REPO/build/codemode}"
export CODEMODE
# shellcheck source=tests/docker/dockerd.bash
. "$BATS_TEST_DIRNAME/dockerd.bash"

bats_require_minimum_version 1.5.0

IMG=cm-busybox

setup_file() { dockerd_setup_file cm-dk; }

teardown_file() { dockerd_teardown_file; }

setup() {
  CASE_TAG=cm$(printf '%s' "$BATS_TEST_NAME" | md5sum | cut -c1-8)
  dockerd_case_setup
}

teardown() { dockerd_case_teardown --filter "name=$CASE_TAG"; }

# A container name unique to this case and runtime.
cname() { echo "$CASE_TAG-$1-$2"; }

# docker run --rm under runtime $1, network none unless the args say otherwise; prints stdout
# and then "exit=N".
drun() {
  local rt=$1 out st=0
  shift
  out=$(dk run --rm --runtime="$rt" "$@" 2>"$HOST_DIR/stderr.$rt") || st=$?
  printf '%s\nexit=%s\n' "$out" "$st"
}

wait_state() { # NAME GO-TEMPLATE VALUE [SECONDS]
  local tries=$((${4:-20} * 10)) got
  while [ $tries -gt 0 ]; do
    got=$(docker inspect -f "$2" "$1" 2>/dev/null)
    [ "$got" = "$3" ] && return 0
    sleep 0.1
    tries=$((tries - 1))
  done
  echo "$1: $2 is '$got', expected '$3'" >&2
  return 1
}

# same_as_runc CASE [RUNTIMES…]: run the case function under runc and under each runtime
# (default: codemode) and compare the transcripts.
same_as_runc() {
  local fn=$1 rt ref out
  shift
  ref=$(set +e; "$fn" runc 2>&1)
  for rt in "${@:-codemode}"; do
    out=$(set +e; "$fn" "$rt" 2>&1)
    if [ "$out" != "$ref" ]; then
      echo "--- runc" >&2
      echo "$ref" >&2
      echo "--- $rt" >&2
      echo "$out" >&2
      echo "--- $rt stderr" >&2
      cat "$HOST_DIR"/stderr."$rt" 2>/dev/null >&2 || true
      return 1
    fi
  done
  echo "$ref"
}

# --- run ------------------------------------------------------------------------------------

case_exit_codes() {
  drun "$1" --network none $IMG sh -c 'echo out; echo err >&2; exit 42'
  drun "$1" --network none $IMG true
  drun "$1" --network none $IMG sh -c 'kill -9 $$'
  drun "$1" --network none $IMG nosuchcommand | tail -1
  drun "$1" --network none $IMG /etc/passwd | tail -1
}
@test "run --rm: stdout and exit codes (42, 0, 137, 127, 126)" {
  same_as_runc case_exit_codes codemode codemode-args
}

case_stdin() {
  printf 'line1\nline2\n' | dk run --rm -i --network none --runtime="$1" $IMG sh -c 'cat; echo done'
  echo "exit=$?"
}
@test "run -i: stdin reaches the container" {
  same_as_runc case_stdin
}

case_tty() {
  dk run --rm -t --network none --runtime="$1" $IMG sh -c 'tty; [ -t 0 ] && echo stdin-is-tty; exit 3' | tr -d '\r'
  echo "exit=${PIPESTATUS[0]}"
}
@test "run -t: a pty" {
  same_as_runc case_tty
}

case_detach_logs() {
  local n
  n=$(cname logs "$1")
  dk run -d --name "$n" --network none --runtime="$1" $IMG sh -c 'echo to-out; echo to-err >&2; exit 4' >/dev/null
  wait_state "$n" '{{.State.Status}}' exited
  docker inspect -f '{{.State.ExitCode}}' "$n"
  dk logs "$n" 2>&1 | sort
  dk rm "$n" >/dev/null
}
@test "run -d + logs" {
  same_as_runc case_detach_logs
}

# --- exec -----------------------------------------------------------------------------------

case_exec() {
  local n
  n=$(cname exec "$1")
  dk run -d --name "$n" --network none --runtime="$1" $IMG sleep 1000 >/dev/null
  dk exec "$n" sh -c 'echo plain; id; pwd'
  dk exec -u 1000:1000 -w /tmp -e FOO=bar "$n" sh -c 'id; pwd; echo $FOO'
  dk exec -u nobody "$n" id
  dk exec "$n" sh -c 'exit 5'
  echo "exit=$?"
  dk exec "$n" nosuchcommand >/dev/null 2>&1
  echo "exit=$?"
  echo hi | dk exec -i "$n" cat
  script -qec "docker exec -it $n sh -c 'tty; [ -t 0 ] && echo tty-in'" /dev/null </dev/null | tr -d '\r\0' | sed 's/\^@//g'
  dk exec -d "$n" sh -c 'echo detached > /tmp/d'
  sleep 0.3
  dk exec "$n" cat /tmp/d
  dk exec "$n" sh -c 'grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status; cat /proc/self/cgroup | grep -c docker'
  # Fails under runc 1.1 too (the bounding set is the container's): same status is enough.
  dk exec --privileged "$n" sh -c 'grep -E "^CapEff" /proc/self/status' >/dev/null 2>&1
  echo "exit=$?"
  dk rm -f "$n" >/dev/null
}
@test "exec: plain, -u, -w, -e, exit status, missing command, -i, -it, -d, caps/seccomp/cgroup, --privileged" {
  same_as_runc case_exec codemode codemode-args
}

# --- lifecycle ------------------------------------------------------------------------------

case_stop() {
  local n
  n=$(cname stop "$1")
  dk run -d --name "$n" --network none --runtime="$1" $IMG sh -c 'trap "echo got-term; exit 0" TERM; while :; do sleep 0.1; done' >/dev/null
  sleep 0.5
  dk stop -t 10 "$n" >/dev/null
  docker inspect -f '{{.State.ExitCode}}' "$n"
  dk logs "$n"
  dk rm "$n" >/dev/null
  # pid 1 ignores TERM without a handler: KILL after the timeout.
  dk run -d --name "$n" --network none --runtime="$1" $IMG sleep 1000 >/dev/null
  dk stop -t 1 "$n" >/dev/null
  docker inspect -f '{{.State.ExitCode}}' "$n"
  dk rm "$n" >/dev/null
}
@test "stop: TERM, then KILL after the timeout" {
  same_as_runc case_stop
}

case_kill() {
  local n
  n=$(cname kill "$1")
  dk run -d --name "$n" --network none --runtime="$1" $IMG sh -c 'trap "echo got-usr1; exit 7" USR1; while :; do sleep 0.1; done' >/dev/null
  sleep 0.5
  dk kill -s USR1 "$n" >/dev/null
  wait_state "$n" '{{.State.Status}}' exited
  docker inspect -f '{{.State.ExitCode}}' "$n"
  dk logs "$n"
  dk rm "$n" >/dev/null
  dk run -d --name "$n" --network none --runtime="$1" $IMG sleep 1000 >/dev/null
  dk kill "$n" >/dev/null
  wait_state "$n" '{{.State.Status}}' exited
  docker inspect -f '{{.State.ExitCode}}' "$n"
  dk rm "$n" >/dev/null
}
@test "kill -s USR1, kill (KILL)" {
  same_as_runc case_kill
}

case_restart() {
  local n
  n=$(cname restart "$1")
  dk run -d --name "$n" --restart on-failure:2 --network none --runtime="$1" $IMG sh -c 'echo run; exit 1' >/dev/null
  wait_state "$n" '{{.RestartCount}} {{.State.Status}}' "2 exited" 60
  dk logs "$n"
  dk rm -f "$n" >/dev/null
}
@test "restart policy on-failure:2" {
  same_as_runc case_restart
}

case_pause() {
  local n
  n=$(cname pause "$1")
  dk run -d --name "$n" --network none --runtime="$1" $IMG sleep 1000 >/dev/null
  dk pause "$n" >/dev/null
  docker inspect -f '{{.State.Status}}' "$n"
  dk exec "$n" true 2>/dev/null
  echo "exec-while-paused=$?"
  dk unpause "$n" >/dev/null
  docker inspect -f '{{.State.Status}}' "$n"
  dk exec "$n" echo alive
  dk rm -f "$n" >/dev/null
}
@test "pause / unpause" {
  same_as_runc case_pause
}

case_update() {
  local n
  n=$(cname update "$1")
  dk run -d --name "$n" --memory 64m --network none --runtime="$1" $IMG sleep 1000 >/dev/null
  dk exec "$n" cat /sys/fs/cgroup/memory/memory.limit_in_bytes
  dk update --memory 96m --memory-swap 192m --pids-limit 33 --cpu-shares 512 "$n" >/dev/null
  dk exec "$n" cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/pids/pids.max \
    /sys/fs/cgroup/cpu/cpu.shares
  dk rm -f "$n" >/dev/null
}
@test "update --memory --pids-limit --cpu-shares" {
  same_as_runc case_update
}

case_stats_top() {
  local n
  n=$(cname stats "$1")
  dk run -d --name "$n" --network none --runtime="$1" $IMG sh -c 'sleep 1000 & sleep 1000' >/dev/null
  sleep 0.5
  # Memory usage is a number > 0 (its exact value differs run to run); pids = 3 (sh, 2 sleeps).
  dk stats --no-stream --format '{{.MemUsage}} {{.PIDs}}' "$n" | awk '{print ($1+0 > 0) ? "mem>0" : "mem=0", $NF}'
  dk top "$n" -o comm | sort
  dk rm -f "$n" >/dev/null
}
@test "stats (memory, pids) and top" {
  same_as_runc case_stats_top
}

# --- options --------------------------------------------------------------------------------

# --tmpfs mounts reach the runtime in Go map order, which differs from run to run: sorted.
case_readonly_tmpfs() {
  drun "$1" --network none --read-only $IMG sh -c 'touch /x 2>/dev/null || echo ro; touch /dev/shm/ok && echo shm-rw'
  drun "$1" --network none --read-only --tmpfs /run:size=1m --tmpfs /scratch:mode=1777 $IMG sh -c \
    'touch /run/ok && echo run-rw; grep -E " /(run|scratch) " /proc/mounts | cut -d" " -f1-3 | sort; stat -c %a /scratch'
}
@test "--read-only and --tmpfs" {
  same_as_runc case_readonly_tmpfs
}

case_binds() {
  echo content >"$HOST_DIR/f"
  drun "$1" --network none -v "$HOST_DIR:/data" $IMG sh -c "cat /data/f; echo written > /data/new && echo rw"
  cat "$HOST_DIR/new"
  drun "$1" --network none -v "$HOST_DIR:/data:ro" $IMG sh -c 'cat /data/f; touch /data/x 2>/dev/null || echo ro'
  rm -f "$HOST_DIR/new"
}
@test "-v binds, rw and :ro" {
  same_as_runc case_binds
}

case_caps() {
  drun "$1" --network none --cap-drop ALL $IMG grep -E '^Cap(Eff|Prm|Bnd|Inh|Amb)' /proc/self/status
  drun "$1" --network none --cap-drop ALL --cap-add NET_ADMIN --cap-add CHOWN $IMG grep -E '^Cap(Eff|Bnd)' /proc/self/status
  drun "$1" --network none --cap-drop ALL --user 1000 $IMG sh -c 'chown 0 /tmp 2>/dev/null || echo denied'
  drun "$1" --network none --security-opt no-new-privileges $IMG grep NoNewPrivs /proc/self/status
}
@test "--cap-drop ALL, --cap-add, no-new-privileges" {
  same_as_runc case_caps
}

case_seccomp() {
  cat >"$HOST_DIR/profile.json" <<'EOF'
{"defaultAction": "SCMP_ACT_ALLOW",
 "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}
EOF
  drun "$1" --network none --security-opt seccomp=unconfined $IMG grep '^Seccomp:' /proc/self/status
  drun "$1" --network none --security-opt seccomp="$HOST_DIR/profile.json" $IMG sh -c 'mkdir /tmp/x 2>&1; grep "^Seccomp:" /proc/self/status'
  # Docker's default profile: unshare is refused without CAP_SYS_ADMIN.
  drun "$1" --network none $IMG sh -c 'unshare -U true 2>/dev/null || echo refused'
}
@test "seccomp: unconfined, a custom profile, the default profile" {
  same_as_runc case_seccomp
}

case_limits() {
  drun "$1" --network none --memory 32m $IMG cat /sys/fs/cgroup/memory/memory.limit_in_bytes
  drun "$1" --network none --pids-limit 10 $IMG cat /sys/fs/cgroup/pids/pids.max
  drun "$1" --network none --cpus 0.5 $IMG cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us
  drun "$1" --network none --pids-limit 5 $IMG sh -c 'for i in 1 2 3 4 5 6 7; do sleep 2 & done 2>/dev/null; wait; echo done'
}
@test "--memory, --pids-limit, --cpus" {
  same_as_runc case_limits
}

case_network() {
  drun "$1" --network none $IMG sh -c 'ls /sys/class/net | sort'
  drun "$1" --network host $IMG sh -c 'ls /sys/class/net | sort; hostname'
}
@test "--network none and host" {
  same_as_runc case_network
}

case_user_workdir_init() {
  drun "$1" --network none --user 1000:1000 $IMG id
  drun "$1" --network none --user nobody $IMG id
  drun "$1" --network none --workdir /var/newdir $IMG pwd
  drun "$1" --network none --init $IMG ps -o comm
}
@test "--user, --workdir, --init" {
  same_as_runc case_user_workdir_init
}

case_ulimit_sysctl() {
  drun "$1" --network none --ulimit nofile=1024:2048 --ulimit nproc=100 $IMG sh -c 'ulimit -n; ulimit -Hn; ulimit -u'
  drun "$1" --network none --sysctl net.ipv4.ip_forward=1 --sysctl kernel.shm_rmid_forced=1 $IMG \
    cat /proc/sys/net/ipv4/ip_forward /proc/sys/kernel/shm_rmid_forced
}
@test "--ulimit and --sysctl" {
  same_as_runc case_ulimit_sysctl
}

case_device_shm() {
  drun "$1" --network none --device /dev/zero:/dev/myzero $IMG sh -c 'head -c 4 /dev/myzero | od -An -tx1; ls -l /dev/myzero | cut -c1'
  drun "$1" --network none $IMG sh -c 'head -c 1 /dev/myzero 2>/dev/null || echo no-device'
  drun "$1" --network none --shm-size 16m $IMG sh -c "df -k /dev/shm | awk 'NR==2{print \$2}'"
}
@test "--device and --shm-size" {
  same_as_runc case_device_shm
}

case_ipc_pid() {
  local n
  n=$(cname share "$1")
  dk run -d --name "$n" --network none --runtime="$1" $IMG sleep 1000 >/dev/null
  local ipc
  ipc=$(dk exec "$n" readlink /proc/self/ns/ipc)
  drun "$1" --network none --ipc "container:$n" $IMG sh -c "[ \$(readlink /proc/self/ns/ipc) = '$ipc' ] && echo same-ipc"
  drun "$1" --network none --ipc host $IMG sh -c "[ \$(readlink /proc/self/ns/ipc) = '$(readlink /proc/self/ns/ipc)' ] && echo host-ipc"
  drun "$1" --network none --pid "container:$n" $IMG cat /proc/1/comm
  drun "$1" --network none --pid host $IMG cat /proc/1/comm
  dk rm -f "$n" >/dev/null
}
@test "--ipc container: and host, --pid container: and host" {
  same_as_runc case_ipc_pid
}

case_hostname_health() {
  drun "$1" --network none --hostname cm-host $IMG hostname
  local n
  n=$(cname health "$1")
  dk run -d --name "$n" --network none --health-cmd 'test -e /tmp/ok' --health-interval 1s --health-retries 1 \
    --runtime="$1" $IMG sh -c 'sleep 3; touch /tmp/ok; sleep 1000' >/dev/null
  wait_state "$n" '{{.State.Health.Status}}' unhealthy 30
  docker inspect -f '{{.State.Health.Status}}' "$n"
  wait_state "$n" '{{.State.Health.Status}}' healthy 30
  docker inspect -f '{{.State.Health.Status}}' "$n"
  dk rm -f "$n" >/dev/null
}
@test "--hostname and healthchecks (unhealthy, then healthy)" {
  same_as_runc case_hostname_health
}

case_docker_defaults() {
  # What dockerd itself sends: masked and read-only paths, /etc/hosts & co, /dev/shm, the
  # cgroup mount showing the container's own cgroup, default devices.
  drun "$1" --network none $IMG sh -c '
    cat /proc/kcore 2>&1 | head -c 0; ls -l /proc/kcore | cut -c1; cat /proc/sys/kernel/hostname >/dev/null
    echo 1 > /proc/sys/kernel/domainname 2>/dev/null || echo proc-sys-ro
    grep -E " /(etc/hosts|etc/resolv.conf|etc/hostname|dev/shm|sys/fs/cgroup/memory) " /proc/mounts | cut -d" " -f2,3 | sort
    cat /proc/self/cgroup | cut -d: -f2- | grep -E "^(memory|pids):" | sed "s/[0-9a-f]\{64\}/ID/"
    ls /dev | sort | tr "\n" " "; echo'
}
@test "Docker's defaults: masked/readonly paths, mounts, cgroup view, devices" {
  same_as_runc case_docker_defaults
}
