# shellcheck shell=bash
# The hostile "MCP server" (payload.c, static) of mcp_escape.bats, ci_escape.bats and learn.bats,
# on top of tests/lib/helpers.bash (load that first).
#
#   escape_setup_file        cm_setup_file, plus $CODEMODE_RUN and the payload built ($PAYLOAD)
#   escape_setup PREFIX      cm_setup, plus the payload as /escape in $BUNDLE's rootfs with the
#                            marker only a test bundle has, and $HOST_DIR, a host dir under /tmp
#                            named after PREFIX (teardown removes it: escape_teardown)
#   escape_run SECS PROFILE [codemode-run options…] -- ATTEMPT [ARG]
#                            run the payload under codemode-run --profile PROFILE, bounded to SECS;
#                            $status, $output (stdout+stderr)
#   contained …              esc … (the file's own, over escape_run): exit 0, "contained", never
#                            "ESCAPED"
#   escape_need_ia32         skip unless this kernel runs a host process's 32-bit syscall (int
#                            0x80): where ia32 emulation is off, the kernel itself kills it, and a
#                            test of what the profile does with 32-bit syscalls could not fail

escape_setup_file() {
  cm_setup_file
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
  export PAYLOAD=$BATS_FILE_TMPDIR/payload
  cc -static -O2 -Wall -Wextra -o "$PAYLOAD" "$CM_REPO/tests/security/mcp_escape/payload.c"
}

escape_need_ia32() {
  local probe=$BATS_FILE_TMPDIR/ia32-probe
  if [ ! -x "$probe" ]; then
    # getpid (nr 20) through the 32-bit entry point, on the host, outside any filter.
    printf '%s\n' 'int main(void) { long r; __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory"); return r > 0 ? 0 : 1; }' |
      cc -x c -o "$probe" - || return 1
  fi
  "$probe" 2>/dev/null || skip "this kernel has no 32-bit syscall entry (ia32 emulation off: int 0x80 kills a host process too)"
}

escape_setup() {
  cm_setup
  [ -x "$CODEMODE_RUN" ] || { echo "$CODEMODE_RUN is not built (run make)" >&2; return 1; }
  cp "$PAYLOAD" "$BUNDLE/rootfs/escape"
  echo "codemode mcp escape test bundle" >"$BUNDLE/rootfs/.codemode-escape-marker"
  # Bind sources live under /tmp: the suite's TMPDIR may be on /dev/shm, and the mcp profile
  # refuses any bind from /dev (a host system tree).
  HOST_DIR=$(mktemp -d "/tmp/$1.XXXXXX")
}

escape_teardown() {
  rm -rf --one-file-system "$HOST_DIR"
  cm_teardown
}

# shellcheck disable=SC2153 # TEST_DIR, ROOT, CID: cm_setup's
escape_run() {
  local secs=$1 profile=$2 opts=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  status=0
  timeout --kill-after=5 "$secs" "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile "$profile" "${opts[@]}" \
    "$BUNDLE" -- /escape "$@" </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  output=$(cat "$TEST_DIR/out")
  echo "# status $status: $output" >&3
}

contained() {
  esc "$@"
  [ "$status" -eq 0 ]
  [[ "$output" == *contained* ]]
  [[ "$output" != *ESCAPED* ]]
}
