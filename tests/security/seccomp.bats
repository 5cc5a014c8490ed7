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

# allowlist_profile ERRNO [NAME…]: what Docker's default profile allows (its unconditional list,
# plus arch_prctl and clone), minus every syscall newer than clone3's 435 and minus NAME…; every
# other syscall gets ERRNO. Architectures as Docker lists them on x86_64.
allowlist_profile() {
  local errno=$1
  shift
  local newer='["cachestat","close_range","epoll_pwait2","faccessat2","fchmodat2","futex_requeue",
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
