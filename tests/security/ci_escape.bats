#!/usr/bin/env bats
# The attacker programs of mcp_escape.bats (mcp_escape/payload.c) under `codemode-run --profile
# ci`: a CI job is root with a build's capabilities inside its own user namespace, so some of
# mcp's refusals are allowed by design (each test named "allowed by design" says why), and every
# attempt that faces the host stays blocked: the host's kernel settings (each host-facing file of
# /proc and /sys, also through a fresh procfs of a nested namespace), its processes, its files,
# its network, and anything left after the job. The payload refuses to run outside its bundle.

load ../lib/helpers
load mcp_escape/escape
codemode_only_file mcp-profile

setup_file() { escape_setup_file; }
setup() { escape_setup cm-ci-host; }
teardown() { escape_teardown; }

# esc [codemode-run options…] -- ATTEMPT [ARG]: run the payload as the job under --profile ci.
esc() { escape_run 90 ci "$@"; }

# run_cm_cmd CMD…: $status, $stdout, $output of any command, stdio on files.
run_cm_cmd() {
  status=0
  "$@" </dev/null >"$TEST_DIR/.o" 2>"$TEST_DIR/.e" 3>&- || status=$?
  stdout=$(cat "$TEST_DIR/.o")
  output=$(cat "$TEST_DIR/.o" "$TEST_DIR/.e")
  echo "# status $status: $output" >&3
}

# allowed ATTEMPT…: what the profile gives a job by design (the payload calls it an escape).
allowed() {
  esc "$@"
  [ "$status" -eq 1 ]
  [[ "$output" == *ESCAPED* ]]
}

# --- host-facing: blocked -------------------------------------------------------------------

@test "ci: the job's root is not host root: a user namespace with its own 1048576-id host range" {
  set_args sh -c 'cat /proc/self/uid_map /proc/self/gid_map; id -u'
  run_cm_cmd "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile ci "$BUNDLE"
  [ "$status" -eq 0 ]
  # "0 HOSTID 1048576" twice, HOSTID never 0.
  [ "$(grep -cE '^ +0 +[1-9][0-9]* +1048576$' <<<"$stdout")" -eq 2 ]
  [ "$(tail -1 <<<"$stdout")" = 0 ]
}

@test "ci: host kernel settings cannot be opened for writing (/proc/sys, sysrq-trigger, core_pattern)" {
  local f
  for f in /proc/sys/kernel/core_pattern /proc/sysrq-trigger /proc/sys/kernel/modprobe /proc/sys/vm/drop_caches \
    /proc/sys/kernel/panic /proc/sys/fs/file-max /proc/sys/kernel/randomize_va_space \
    /proc/sys/kernel/unprivileged_bpf_disabled /proc/sys/user/max_user_namespaces; do
    contained -- open_write "$f"
  done
}

@test "ci: host-facing /sys files are read-only (sysfs, the cgroup tree)" {
  local f
  for f in /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/uevent_helper /sys/power/state \
    /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/cgroup.subtree_control; do
    contained -- open_write "$f"
  done
}

@test "ci: a nested mount+pid namespace with a fresh procfs (a nested container's) still cannot reach the host's settings" {
  contained -- nested_proc
  [[ "$output" == *"nested procfs mounted"* ]]
}

@test "ci: in a nested user namespace the kernel refuses a fresh procfs (the job's /proc keeps its masks)" {
  # The masked and read-only /proc paths are locked in a nested user namespace and hide parts
  # of /proc, so the kernel's "fully visible" rule refuses the mount: the price of keeping
  # mcp's masks (codemode-profiles(5), ci: nested user namespaces).
  contained -- nested_proc user
  [[ "$output" == *"contained: nested procfs (Operation not permitted)"* ]]
}

@test "ci: the masked /proc files stay masked (kcore, keys, timer_list)" {
  local f
  for f in /proc/kcore /proc/keys /proc/timer_list; do
    contained -- read "$f"
  done
}

@test "ci: host secrets are out of reach under --host (shadow, ssh host keys, root's home)" {
  local f
  for f in /etc/shadow /etc/gshadow /etc/ssh/ssh_host_ed25519_key /etc/sudoers /root/.bash_history; do
    status=0
    timeout 60 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile ci --host -- sh -c "cat $f" \
      </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
    [ "$status" -ne 0 ]
  done
  [ -z "$(ls -A "$ROOT")" ]
}

@test "ci: host processes are invisible (its own pid namespace: nothing to see or signal)" {
  local token=cm-ci-host-$$-$RANDOM
  (exec -a "$token" sleep 60) &
  bg_track $!
  sleep 0.2
  grep -q "$token" /proc/$!/cmdline
  contained -- host_procs "$token"
}

@test "ci: kernel attack surface and whole-machine calls are refused" {
  local a
  for a in module bpf perf io_uring userfaultfd vsock alg mknod; do
    contained -- "$a"
  done
  # The keyring is not namespaced: ENOSYS, as a kernel without it (runtimes skip it).
  contained -- keyctl
  [[ "$output" == *"Function not implemented"* ]]
}

@test "ci: TIOCSTI is refused; /proc/self/exe cannot be written; core dumps stay off" {
  contained -- tiocsti
  contained -- self_exe
  contained -- core
}

@test "ci: the network is loopback only: a host listener is unreachable" {
  local ip port=$((20000 + RANDOM % 20000))
  ip=$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "src") print $(i + 1)}')
  [ -n "$ip" ] || ip=$(hostname -I | awk '{print $1}')
  timeout 30 busybox nc -l -p "$port" -e /bin/echo CONNECTED >"$TEST_DIR/listener" 2>&1 </dev/null &
  bg_track $!
  sleep 0.3
  contained -- connect "$ip:$port"
  esc -- loopback
  [ "$status" -eq 0 ]
  [[ "$output" == *"loopback works"* ]]
  ! grep -q CONNECTED "$TEST_DIR/listener"
}

@test "ci: the writable root is thrown away: the bundle's rootfs on disk is unchanged" {
  allowed -- write_root
  [ ! -e "$BUNDLE/rootfs/escape-was-here" ]
  [ -z "$(ls -A "$ROOT")" ]
}

@test "ci: a writable bind of a directory owned by host root is refused (its setuid files would be root's)" {
  esc --mount "$HOST_DIR:/ws:rw" -- caps
  [ "$status" -eq 125 ]
  [[ "$output" == *"owned by host root"* ]]
  [ -z "$(ls -A "$ROOT")" ]
}

@test "ci: a writable bind of a file owned by host root is bound read-only (an engine's /etc/hosts)" {
  echo original >"$HOST_DIR/hosts"
  esc --mount "$HOST_DIR/hosts:/etc/hosts:rw" -- open_write /etc/hosts
  [ "$status" -eq 0 ]
  [[ "$output" == *"contained: /etc/hosts (Read-only file system)"* ]]
  [ "$(cat "$HOST_DIR/hosts")" = original ]
  [ "$(stat -c %a "$HOST_DIR/hosts")" = 644 ]
}

@test "ci: in a writable bind the job writes as the directory's owner: a planted setuid file is not root's" {
  chown 65534:65534 "$HOST_DIR"
  set_args sh -c 'cp /bin/busybox /ws/suid && chmod 4755 /ws/suid && ls -ln /ws/suid && id -u'
  run_cm_cmd "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile ci --mount "$HOST_DIR:/ws:rw" "$BUNDLE"
  [ "$status" -eq 0 ]
  # Inside: the job's root owns it; on the host: uid 65534, never 0.
  [[ "$stdout" == *" 0 "*suid* ]]
  [ "$(stat -c %u:%g "$HOST_DIR/suid")" = 65534:65534 ]
}

@test "ci: limits: --pids stops a fork bomb, --memory OOM-kills a hog inside its cgroup" {
  esc --pids 128 -- forkbomb
  [ "$status" -eq 0 ]
  [[ "$output" == *"contained: fork bomb"* ]]
  esc --memory 64m -- memhog
  [ "$status" -eq 137 ]
  [[ "$output" != *ESCAPED* ]]
}

@test "ci: outliving --timeout (SIGTERM ignored) ends in SIGKILL, exit 124, nothing left" {
  esc --timeout 1 --grace 1 -- ignore_term
  [ "$status" -eq 124 ]
  [ -z "$(ls -A "$ROOT")" ]
}

@test "ci: a double-forked daemon does not survive the job" {
  esc -- double_fork
  [ "$status" -eq 0 ]
  sleep 0.5
  [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ]
  [ -z "$(ls -A "$ROOT")" ]
}

@test "ci: joining the host's network or pid namespace is refused, naming the profile" {
  esc --net host -- caps
  [ "$status" -eq 125 ]
  [[ "$output" == *"profile ci"* ]]
}

@test "ci: --seccomp is refused (the filter is ci.json)" {
  esc --seccomp default -- caps
  [ "$status" -eq 125 ]
  [[ "$output" == *"ci.json"* ]]
}

# --- allowed by design (the job's own namespaces) -------------------------------------------

@test "ci: allowed by design: capabilities in the user namespace, setuid helpers work (no no_new_privs)" {
  # CAP_SYS_ADMIN and Docker's set, for nested containers and sudo: held in the job's user
  # namespace only, which owns nothing of the host's.
  allowed -- caps
}

@test "ci: allowed by design: mount, the new mount API, chroot (its own mount namespace)" {
  allowed -- mount
  allowed -- fsopen
  allowed -- chroot
}

@test "ci: allowed by design: unshare, setns, clone(CLONE_NEWUSER), clone3 (nested containers)" {
  allowed -- unshare
  allowed -- setns # /proc/1/ns/mnt is the job's own init
  allowed -- clone_newuser
  allowed -- clone3
}

@test "ci: allowed by design: ptrace and process_vm_readv of its own processes (gdb, strace, LeakSanitizer)" {
  allowed -- ptrace
  allowed -- process_vm
}

@test "ci: allowed by design: packet and raw sockets (its own network namespace, lo only)" {
  allowed -- packet
  allowed -- raw
  # NETLINK_AUDIT opens; the kernel refuses audit requests from outside the host's user namespace.
  allowed -- netlink_audit
}

@test "ci: allowed by design: 32-bit syscalls (multilib builds run their tests; the filter covers them)" {
  escape_need_ia32
  allowed -- 32bit
}
