# tests/egress/suite.bash — setup, teardown and helpers shared by the egress suite's files that
# run codemode-run against the lab (lab.bash). Loaded by requests.bats; egress.bats has the same
# inline (it predates this file).

CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}

setup_file() {
  lab_up "$BATS_FILE_TMPDIR/lab"
  "$BATS_TEST_DIRNAME/npm-install.sh"
  "$BATS_TEST_DIRNAME/make-bundle.sh" "$BATS_FILE_TMPDIR/bundle" "$LAB_CA" "$BATS_TEST_DIRNAME/.work/node_modules"
  export EG_BUNDLE=$BATS_FILE_TMPDIR/bundle
}

teardown_file() {
  lab_down
}

setup() {
  TEST_DIR=$BATS_TEST_TMPDIR
  ROOT=$TEST_DIR/state
  AUDIT=$TEST_DIR/audit.log
  CID=cm-test-$CM_RUN_TAG-eq$BATS_TEST_NUMBER
  brokers_before=$(live_brokers | wc -l)
  : >"$LAB_DIR/requests.log"
}

teardown() {
  [ -e "$AUDIT" ] && dump_audit
  local d
  for d in "$ROOT"/*/; do [ -d "$d" ] && "$CODEMODE" --root "$ROOT" delete --force "$(basename "$d")" 2>/dev/null; done
  local left
  left=$(live_brokers | wc -l)
  [ "$left" -le "$brokers_before" ] || {
    echo "codemode-broker left running: $(live_brokers)"
    return 1
  }
}

# egress FLAGS… -- CMD…: codemode-run in the lab's "machine" namespace, with the lab's resolver
# and this test's audit log. $status, $output (stdout), $stderr.
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

# hostile CASE ARGS…: tests/egress/clients/hostile.py inside the container.
hostile() { local f=("${EG_FLAGS[@]}"); egress "${f[@]}" -- /usr/bin/python3 /clients/hostile.py "$@"; }

audit_count() { jq -c "select($1)" "$AUDIT" | wc -l; }
dump_audit() { echo "# audit:" >&3; jq -c "select(.event == \"connect\")" "$AUDIT" | sed "s/^/# /" >&3; }

# reached HOST: how many requests for HOST the lab's servers saw.
reached() { grep -c "\"host\": \"$1\"" "$LAB_DIR/requests.log" || true; }
