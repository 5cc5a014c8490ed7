# tests/egress/suite.bash — the setup, teardown and helpers of the egress suite's files that run
# codemode-run against the lab (lab.bash): egress.bats and requests.bats load it (after
# ../lib/helpers and lab).

CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}

setup_file() {
  lab_up "$BATS_FILE_TMPDIR/lab"
  "$BATS_TEST_DIRNAME/npm-install.sh"
  "$BATS_TEST_DIRNAME/make-bundle.sh" "$BATS_FILE_TMPDIR/bundle" "$LAB_CA" "$BATS_TEST_DIRNAME/.work/node_modules"
  export EG_BUNDLE=$BATS_FILE_TMPDIR/bundle
  # The MCP client imports the SDK from the suite's node_modules (ESM resolves from the
  # script's directory up).
  cp "$BATS_TEST_DIRNAME/mcp-client.mjs" "$BATS_TEST_DIRNAME/.work/mcp-client.mjs"
}

teardown_file() {
  lab_down
}

setup() {
  TEST_DIR=$BATS_TEST_TMPDIR
  ROOT=$TEST_DIR/state
  AUDIT=$TEST_DIR/audit.log
  # Unique across the suite's files (bats numbers each file's tests from 1).
  CID=cm-test-$CM_RUN_TAG-eg$BATS_SUITE_TEST_NUMBER
  brokers_before=$(live_brokers | wc -l)
  : >"$LAB_DIR/requests.log"
}

teardown() {
  [ -e "$AUDIT" ] && dump_audit
  [ -z "${MACHINE_PID:-}" ] || { kill "$MACHINE_PID"; wait "$MACHINE_PID" 2>/dev/null; }
  local d
  for d in "$ROOT"/*/; do [ -d "$d" ] && "$CODEMODE" --root "$ROOT" delete --force "$(basename "$d")" 2>/dev/null; done
  # Every broker went with its container.
  local left
  left=$(live_brokers | wc -l)
  [ "$left" -le "$brokers_before" ] || {
    echo "codemode-broker left running: $(live_brokers)"
    return 1
  }
}

# egress FLAGS… -- CMD…: codemode-run in the lab's "machine" namespace, with the lab's resolver
# and this test's audit log. $status, $output (stdout: the container's), $stderr (codemode-run's
# own words and the clients' errors).
egress() {
  local flags=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  run --separate-stderr in_net timeout --kill-after=5 60 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" \
    --dns-upstream "$LAB_DNS" --audit-log "$AUDIT" "${flags[@]}" "$EG_BUNDLE" -- "$@"
  echo "# $output" >&3
  # shellcheck disable=SC2154 # set by run --separate-stderr
  echo "# stderr: $stderr" >&3
}

# hostile CASE ARGS…: tests/egress/clients/hostile.py inside the container, with EG_FLAGS.
hostile() { local f=("${EG_FLAGS[@]}"); egress "${f[@]}" -- /usr/bin/python3 /clients/hostile.py "$@"; }

# machine_server: servers.py --machine on 198.51.100.1:8081 in LAB_NET (the broker's own
# machine) until the test ends.
machine_server() {
  nsenter --net="/run/netns/$LAB_NET" python3 "$BATS_TEST_DIRNAME/servers.py" --machine 198.51.100.1 8081 \
    >"$TEST_DIR/machine.out" 2>&1 </dev/null 3>&- &
  MACHINE_PID=$!
  local i
  for i in $(seq 100); do grep -q ready "$TEST_DIR/machine.out" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

# audit JQ-FILTER: the audit records matching a jq select() condition, compact; audit_count: how
# many.
audit() { jq -c "select($1)" "$AUDIT"; }
audit_count() { jq -c "select($1)" "$AUDIT" | wc -l; }
dump_audit() { echo "# audit:" >&3; jq -c "select(.event == \"connect\")" "$AUDIT" | sed "s/^/# /" >&3; }

# reached HOST: how many requests for HOST the lab's servers saw in this test.
reached() { grep -c "\"host\": \"$1\"" "$LAB_DIR/requests.log" || true; }
