#!/usr/bin/env bats
# linux.seccomp by its effect inside the container: ERRNO returns the errno asked for,
# KILL_PROCESS kills (exit 159 = 128 + SIGSYS), LOG logs, NOTIFY reaches the listener.

load lib

# seccomp_rule ACTION [EXTRA-JQ]: allow everything but mkdir/mkdirat, which get ACTION.
seccomp_rule() {
  set_cfg '.linux.seccomp = {"defaultAction": "SCMP_ACT_ALLOW",
    "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
    "syscalls": [{"names": ["mkdir", "mkdirat"], "action": $a}]}' --arg a "$1"
  if [ -n "${2:-}" ]; then set_cfg "$2"; fi
}

@test "seccomp ERRNO: mkdir fails with errno 38 (Function not implemented), Seccomp: 2" {
  seccomp_rule SCMP_ACT_ERRNO '.linux.seccomp.syscalls[0].errnoRet = 38'
  set_args sh -c 'grep "^Seccomp:" /proc/self/status; mkdir /tmp/x; echo "rc=$?"'
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ $output == *"Seccomp:"*2* ]]
  [[ $output == *"Function not implemented"* ]]
  [[ $output == *rc=1* ]]
}

@test "seccomp ERRNO without errnoRet gives EPERM; errnoRet 95 gives 95" {
  seccomp_rule SCMP_ACT_ERRNO
  set_args /bin/hostile "$MARKER" mkdir /tmp/x
  run_cm run -b "$BUNDLE" "$CID"
  [[ $stdout == *"errno 1 "* ]]
  set_cfg '.linux.seccomp.syscalls[0].errnoRet = 95'
  run_cm run -b "$BUNDLE" "$CID-2"
  [[ $stdout == *"errno 95 "* ]]
}

@test "seccomp KILL_PROCESS: the process dies of SIGSYS (exit 159)" {
  seccomp_rule SCMP_ACT_KILL_PROCESS
  set_args mkdir /tmp/x
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 159 ]
}

@test "seccomp LOG: the syscall succeeds and the kernel logs it" {
  grep -qw log /proc/sys/kernel/seccomp/actions_logged || skip "the kernel does not log SECCOMP_RET_LOG (actions_logged)"
  dmesg >/dev/null 2>&1 || skip "dmesg is not readable here"
  seccomp_rule SCMP_ACT_LOG
  # A unique name for the payload, so its audit line is ours: comm is the file's basename.
  local probe=slog$RANDOM
  cp "$HOSTILE_BIN" "$BUNDLE/rootfs/bin/$probe"
  set_args "/bin/$probe" "$MARKER" mkdir /dev/shm/x
  run_cm run -b "$BUNDLE" "$CID"
  echo "# $status: $output" >&3
  [ "$status" -eq 0 ]
  [[ $stdout == *"mkdir: ok"* ]]
  # Best effort: the kernel rate-limits these lines; give it a moment to reach the ring buffer.
  local tries=20
  until dmesg | grep "comm=\"$probe\"" | grep -q 'syscall=\(83\|258\)'; do
    tries=$((tries - 1))
    [ "$tries" -gt 0 ] || {
      echo "no audit line for comm=$probe in dmesg" >&2
      return 1
    }
    sleep 0.1
  done
}

@test "seccomp NOTIFY: the notify fd and the container state reach listenerPath" {
  local sock=$TEST_DIR/listener.sock
  "$SECCOMP_LISTENER" "$sock" >"$TEST_DIR/listener.out" 2>&1 &
  bg_track $!
  wait_file "$sock" 5
  seccomp_rule SCMP_ACT_NOTIFY
  set_cfg '.linux.seccomp.listenerPath = $p' --arg p "$sock"
  set_args /bin/hostile "$MARKER" mkdir /tmp/x
  run_cm run -b "$BUNDLE" "$CID"
  cat "$TEST_DIR/listener.out" >&2
  grep -q '^state ' "$TEST_DIR/listener.out"
  grep -q '"seccompFd"' "$TEST_DIR/listener.out"
  # The listener answers mkdir with errno 77: seen inside, so the notification went through it.
  [[ $stdout == *"errno 77 "* ]]
}

# Issue 28: a NOTIFY rule for the chmod family (what an agent that audits permission changes
# asks for) must not meet the runtime's own calls: the container starts, and its chmod goes to the
# agent (errno 77), for init and for an exec'd process. runc 1.1.5 on this bundle: the same.
@test "seccomp NOTIFY for chmod, fchmod, fchmodat: the container starts and its chmod reaches the agent" {
  local sock=$TEST_DIR/listener.sock
  "$SECCOMP_LISTENER" "$sock" >"$TEST_DIR/listener.out" 2>&1 &
  bg_track $!
  wait_file "$sock" 5
  set_cfg '.linux.seccomp = {"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": $p,
    "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
    "syscalls": [{"names": ["chmod", "fchmod", "fchmodat"], "action": "SCMP_ACT_NOTIFY"}]}' --arg p "$sock"
  # An existing file (busybox chmod stats it first); the agent's errno 77 is "File descriptor in
  # bad state".
  set_args sh -c 'chmod 600 /etc/passwd; echo "chmod rc=$?"; exec sleep 30'
  run_cm run -d -b "$BUNDLE" "$CID"
  cat "$TEST_DIR/listener.out" >&2
  echo "$output"
  [ "$status" -eq 0 ]
  run_cm exec "$CID" sh -c 'chmod 600 /etc/passwd; echo "exec chmod rc=$?"'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"File descriptor in bad state"* ]]
  [[ $stdout == *"exec chmod rc=1"* ]]
}

# allowlist_profile ERRNO [NAME…]: what Docker's default profile allows (its unconditional list,
# plus arch_prctl and clone), minus every syscall newer than clone3's 435 and minus NAME…; every
# other syscall gets ERRNO. Architectures as Docker lists them on x86_64.
# With ALLOWLIST_KEEP_NEWER=1 the newer ones stay allowed (so close_range and openat2, when named
# in NAME…, get ERRNO and not ENOSYS).
allowlist_profile() {
  local errno=$1
  shift
  local newer='[]'
  [ -n "${ALLOWLIST_KEEP_NEWER:-}" ] || newer='["cachestat","close_range","epoll_pwait2","faccessat2","fchmodat2","futex_requeue",
    "futex_wait","futex_waitv","futex_wake","landlock_add_rule","landlock_create_ruleset",
    "landlock_restrict_self","map_shadow_stack","memfd_secret","openat2","process_mrelease"]'
  set_cfg '.linux.seccomp = {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": $e,
      "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
      "syscalls": [{"names": (($d[0].syscalls[0].names + ["arch_prctl", "clone"]) - $newer - $rm),
                    "action": "SCMP_ACT_ALLOW"}]}' \
    --argjson e "$errno" --argjson newer "$newer" --slurpfile d "$CM_REPO/seccomp-profiles/default.json" \
    --argjson rm "$(printf '%s\n' "$@" | jq -R . | jq -sc 'map(select(. != ""))')"
}

# runc 1.1.5 observed on this bundle: syscall(1000) and clone3 -> 38, mkdir (older, not
# allowed) -> the default errno.
@test "seccomp: syscalls newer than the profile's highest get ENOSYS, older ones the default errno" {
  allowlist_profile 1 mkdir
  set_args /bin/hostile "$MARKER" syscall 1000 435 83
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $stdout == *"syscall 1000: errno 38"* ]]
  [[ $stdout == *"syscall 435: errno 38"* ]]
  [[ $stdout == *"syscall 83: errno 1"* ]]
}
# runc 1.1.5 patches only the architectures the profile lists: with none, no ENOSYS stub.
@test "seccomp: a profile without architectures gives even unknown syscalls its default errno" {
  allowlist_profile 1 mkdir
  set_cfg '.linux.seccomp.architectures = []'
  set_args /bin/hostile "$MARKER" syscall 1000
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $stdout == *"syscall 1000: errno 1"* ]]
}

# runc 1.1.5 on this bundle: the program's output, status 0. Issue 14: every start died with 127
# ("close_range(3, ~0, CLOSE_RANGE_CLOEXEC): No such device or address"): nothing of the
# runtime's may run under the filter, whatever it denies and answers.
@test "seccomp: defaultErrnoRet ENXIO denying close_range, openat2 and getcwd: the program runs" {
  ALLOWLIST_KEEP_NEWER=1 allowlist_profile 6 close_range openat2 getcwd
  set_args sh -c 'echo started; /bin/hostile "$1" syscall 79' sh "$MARKER"
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $stdout == *started* ]]
  [[ $stdout == *"syscall 79: errno 6"* ]] # getcwd: the profile's ENXIO
}

# Without no_new_privileges too. runc 1.1.5 loads the filter before its user switch there and
# fails: "failed to verify if current working directory is safe: no such device or address".
@test "seccomp: defaultErrnoRet ENXIO without no_new_privileges: the program runs" {
  codemode_only seccomp-last-syscall
  ALLOWLIST_KEEP_NEWER=1 allowlist_profile 6 close_range openat2 getcwd
  set_cfg '.process.noNewPrivileges = false'
  set_args sh -c 'echo started; grep -E "^(NoNewPrivs|Seccomp|CapEff):" /proc/self/status'
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $stdout == *started* ]]
  [ "$(status_field NoNewPrivs)" = 0 ]
  [ "$(status_field Seccomp)" = 2 ]
  [ "$(status_field CapEff)" = "$(cap_mask CAP_AUDIT_WRITE CAP_KILL CAP_NET_BIND_SERVICE)" ]
}

# runc 1.1.5 makes syscalls of its own after loading the filter (its Go runtime, the exec fifo,
# the startContainer hooks), so it cannot start under such a profile; codemode's last syscall
# under it is the program's execve.
DENY_MOST='["execve", "arch_prctl", "brk", "exit_group", "getrandom", "mprotect", "newfstatat",
  "prlimit64", "readlink", "rseq", "set_robust_list", "set_tid_address", "write"]'

@test "seccomp: a deny-most profile (kill, allowing only the program's own syscalls and execve) runs the program" {
  codemode_only seccomp-last-syscall
  set_cfg '.linux.seccomp = {"defaultAction": "SCMP_ACT_KILL_PROCESS",
      "architectures": ["SCMP_ARCH_X86_64"], "syscalls": [{"names": $n, "action": "SCMP_ACT_ALLOW"}]}' \
    --argjson n "$DENY_MOST"
  set_args /bin/hostile "$MARKER" syscall 1000
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $stdout == *"syscall 1000: errno 38"* ]]
}

# Without no_new_privileges, seccomp(2) needs CAP_SYS_ADMIN: kept until the filter is loaded, then
# dropped by one capset, the only syscall between the filter and execve.
@test "seccomp: a deny-most profile without no_new_privileges needs only capset besides the program's" {
  codemode_only seccomp-last-syscall
  set_cfg '.process.noNewPrivileges = false | .linux.seccomp = {"defaultAction": "SCMP_ACT_KILL_PROCESS",
      "architectures": ["SCMP_ARCH_X86_64"], "syscalls": [{"names": ($n + ["capset"]), "action": "SCMP_ACT_ALLOW"}]}' \
    --argjson n "$DENY_MOST"
  set_args /bin/hostile "$MARKER" syscall 1000
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $stdout == *"syscall 1000: errno 38"* ]]
}

# runc 1.1.5 on this bundle: two connections reach the listener, init's ("creating") and the
# exec'd process's ("running", its own pid), and the exec'd mkdir gets the agent's errno 77.
@test "seccomp NOTIFY: an exec'd process's notifications reach the listener too" {
  local sock=$TEST_DIR/listener.sock
  "$SECCOMP_LISTENER" "$sock" >"$TEST_DIR/listener.out" 2>&1 &
  bg_track $!
  wait_file "$sock" 5
  seccomp_rule SCMP_ACT_NOTIFY
  set_cfg '.linux.seccomp.listenerPath = $p' --arg p "$sock"
  set_args sleep 30
  run_cm run -d -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  run_cm exec "$CID" /bin/hostile "$MARKER" mkdir /tmp/x
  cat "$TEST_DIR/listener.out" >&2
  [[ $stdout == *"errno 77 "* ]]
  [ "$(grep -c '^state ' "$TEST_DIR/listener.out")" -eq 2 ]
  grep '^state ' "$TEST_DIR/listener.out" | tail -1 | grep -q '"status":"running"'
  grep -q '^notif 83 ' "$TEST_DIR/listener.out"
}
