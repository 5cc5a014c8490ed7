#!/usr/bin/env bats
# tests/KNOWN_DIFFERENCES.md and the oracle markers of the suites agree, both ways
# (tests/oracle/check.sh): every marker names an entry of the right kind, every entry is named by
# a marker. In every run, so a broken marker fails `make check` too, not only the oracle pass.

load ../lib/helpers

@test "every oracle marker names an entry of KNOWN_DIFFERENCES.md, and every entry is used" {
  run "$CM_REPO/tests/oracle/check.sh"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"every marker named and every entry used"* ]]
}

@test "the check finds a marker without an entry, an unused entry and a failure against the oracle" {
  # A copy of the repository's tests with one broken marker and one stale entry.
  local t=$TEST_DIR/repo
  mkdir -p "$t/tests"
  cp -a "$CM_REPO/tests/oracle" "$CM_REPO/tests/lib" "$CM_REPO/tests/KNOWN_DIFFERENCES.md" "$t/tests/"
  mkdir -p "$t/tests/integration" "$t/tests/security"
  cp "$CM_REPO"/tests/integration/*.bats "$t/tests/integration/"
  cp "$CM_REPO"/tests/security/*.bats "$CM_REPO/tests/security/lib.bash" "$t/tests/security/"
  printf '@test "x" {\n  codemode_only no-such-entry\n}\n' >"$t/tests/integration/zz.bats"
  sed -i 's/^## Pending/- `stale-entry` [runc]: nothing shows it. Why: none.\n\n## Pending/' "$t/tests/KNOWN_DIFFERENCES.md"
  run "$t/tests/oracle/check.sh"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"zz.bats:2: codemode_only no-such-entry: no such entry"* ]]
  [[ "$output" == *"entry 'stale-entry' is named by no test marker"* ]]
  # An oracle pass's log: a failed test is an unlisted difference.
  rm "$t/tests/integration/zz.bats"
  sed -i '/stale-entry/d' "$t/tests/KNOWN_DIFFERENCES.md"
  printf 'ok 1 a\nnot ok 2 b\nok 3 c # skip codemode-only: strict-json\n' >"$TEST_DIR/log"
  run "$t/tests/oracle/check.sh" "$TEST_DIR/log"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"unlisted difference (fails against the oracle, no marker): 2 b"* ]]
  [[ "$output" == *"1 skipped, codemode-only: strict-json"* ]]
}
