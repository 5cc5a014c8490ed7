# shellcheck shell=bash
# Helpers for tests/security/*.bats, on top of tests/lib/helpers.bash.
#
#   setup_file   as helpers.bash, plus: CODEMODE becomes a COPY of the binary under test in the
#                file's temp dir (a CVE-2019-5736 regression must never be able to hurt the real
#                build/codemode or /usr/local/bin/codemode); $CM_EXE_SHA is its sha256; the
#                static payload helper is built ($HOSTILE_BIN).
#   setup        as helpers.bash, plus: $SENTINEL (a host dir in the test's temp dir with one
#                file; its owner, mode and ctime in $SENTINEL.stat), a random marker /$MARKER in the rootfs and /bin/hostile (the payload)
#   hostile KIND…            make $BUNDLE's rootfs hostile (fixtures/make-hostile-bundle.sh)
#   assert_host_untouched    sentinel untouched, nothing mounted under $TEST_DIR, runtime copy
#                            unchanged
#   status_field NAME        from $output (a /proc/self/status dump): the field's value

load ../lib/helpers

SEC_DIR=$CM_REPO/tests/security

sec_setup_file() {
  cm_setup_file
  local real=${CODEMODE:-$CM_REPO/build/codemode}
  [ -x "$real" ] || {
    echo "CODEMODE=$real is not built (run make)" >&2
    return 1
  }
  cp "$real" "$BATS_FILE_TMPDIR/codemode-under-test"
  export CODEMODE=$BATS_FILE_TMPDIR/codemode-under-test
  CM_EXE_SHA=$(sha256sum <"$CODEMODE")
  export CM_EXE_SHA
  export HOSTILE_BIN=$BATS_FILE_TMPDIR/hostile
  cc -static -O2 -Wall -Wextra -Werror -o "$HOSTILE_BIN" "$SEC_DIR/helpers/hostile.c"
  export SECCOMP_LISTENER=$BATS_FILE_TMPDIR/seccomp-listener
  cc -O2 -Wall -Wextra -Werror -o "$SECCOMP_LISTENER" "$SEC_DIR/helpers/seccomp-listener.c"
}

sec_setup() {
  cm_setup
  SENTINEL=$TEST_DIR/sentinel
  mkdir -p "$SENTINEL"
  printf 'host-sentinel' >"$SENTINEL/sentinel"
  stat -c '%n %a %u:%g %z' "$SENTINEL" "$SENTINEL/sentinel" >"$SENTINEL.stat"
  MARKER=.codemode-hostile-test-$RANDOM$RANDOM$RANDOM
  : >"$BUNDLE/rootfs/$MARKER"
  cp "$HOSTILE_BIN" "$BUNDLE/rootfs/bin/hostile"
}

setup_file() { sec_setup_file; }
setup() { sec_setup; }

hostile() {
  HOSTILE_MARKER=$MARKER "$SEC_DIR/fixtures/make-hostile-bundle.sh" "$BUNDLE" "$SENTINEL" "$@" 2>/dev/null
}

assert_host_untouched() {
  "$SEC_DIR/fixtures/check-sentinel.sh" "$SENTINEL"
  local m
  m=$(mounts_under "$TEST_DIR")
  if [ -n "$m" ]; then
    echo "mounted on host paths: $m" >&2
    return 1
  fi
  if [ "$(sha256sum <"$CODEMODE")" != "$CM_EXE_SHA" ]; then
    echo "the runtime binary $CODEMODE changed" >&2
    return 1
  fi
}

# A refusal must be a clear error: one codemode: line that names what it refused. (Every runtime
# must say something; the wording is codemode's.)
assert_clear_refusal() { # assert_clear_refusal WORD
  [ -n "$stderr" ] || {
    echo "a refusal without any error message: $output" >&2
    return 1
  }
  codemode_part error-wording || return 0
  [[ $stderr == *"codemode: "* ]] || {
    echo "no codemode error on stderr: $output" >&2
    return 1
  }
  [[ $stderr == *"$1"* ]] || {
    echo "the error does not name '$1': $stderr" >&2
    return 1
  }
}

status_field() {
  awk -v f="$1:" '$1 == f { print $2 }' <<<"$output"
}

# cap_mask NAME…: the /proc/self/status hex mask of a capability list.
cap_mask() {
  local n mask=0 bit
  for n in "$@"; do
    bit=$(cap_bit "$n") || return 1
    mask=$((mask | (1 << bit)))
  done
  printf '%016x\n' "$mask"
}

cap_bit() {
  local names=(CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP
    LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE
    SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME
    SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG
    WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF CHECKPOINT_RESTORE)
  local i
  for i in "${!names[@]}"; do
    [ "CAP_${names[$i]}" = "$1" ] && {
      echo "$i"
      return 0
    }
  done
  echo "unknown capability $1" >&2
  return 1
}

# wait_file_content FILE TEXT [SECONDS]
wait_file_content() {
  local tries=$((${3:-10} * 10))
  while [ "$tries" -gt 0 ]; do
    grep -qF -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
    tries=$((tries - 1))
  done
  echo "timed out waiting for '$2' in $1: $(cat "$1" 2>/dev/null)" >&2
  return 1
}
