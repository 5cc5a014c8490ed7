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

escape_setup_file() {
  cm_setup_file
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
  export PAYLOAD=$BATS_FILE_TMPDIR/payload
  cc -static -O2 -Wall -Wextra -o "$PAYLOAD" "$CM_REPO/tests/security/mcp_escape/payload.c"
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
