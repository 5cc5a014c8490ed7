# shellcheck shell=bash
# Counting helpers shared by tests/run-all.sh and tests/run-unit.sh.
# Totals live in SUITE_PASSED, SUITE_FAILED, SUITE_SKIPPED.

SUITE_PASSED=0
SUITE_FAILED=0
SUITE_SKIPPED=0
SUITE_PROBLEMS=()

# suite_note MESSAGE: printed again in the summary, so a failure far up the log is not missed.
suite_note() {
  SUITE_PROBLEMS+=("$1")
  echo "### $1"
}

# suite_tally_tap FILE: count TAP results (bats and cmocka flavours).
#   ok N …               passed            ok N … # skip …      skipped (bats)
#   not ok N …           failed            not ok N # SKIP …    skipped (cmocka)
# Sets TAP_PASSED, TAP_FAILED, TAP_SKIPPED for FILE and adds them to the totals.
suite_tally_tap() {
  local line
  TAP_PASSED=0 TAP_FAILED=0 TAP_SKIPPED=0
  while IFS= read -r line; do
    case $line in
      "ok "[0-9]*" # skip"* | "ok "[0-9]*" # SKIP"* | "not ok "[0-9]*" # SKIP"* | "not ok "[0-9]*" # skip"*)
        TAP_SKIPPED=$((TAP_SKIPPED + 1)) ;;
      "ok "[0-9]*) TAP_PASSED=$((TAP_PASSED + 1)) ;;
      "not ok "[0-9]*) TAP_FAILED=$((TAP_FAILED + 1)) ;;
    esac
  done <"$1"
  SUITE_PASSED=$((SUITE_PASSED + TAP_PASSED))
  SUITE_FAILED=$((SUITE_FAILED + TAP_FAILED))
  SUITE_SKIPPED=$((SUITE_SKIPPED + TAP_SKIPPED))
}

# suite_skip NAME REASON: a whole suite cannot run here. Loud; a failure under CI=true, where the
# machine is supposed to have everything.
suite_skip() {
  if [ "${CI:-}" = true ]; then
    SUITE_FAILED=$((SUITE_FAILED + 1))
    suite_note "FAILED (skipped under CI=true): suite $1: $2"
  else
    SUITE_SKIPPED=$((SUITE_SKIPPED + 1))
    suite_note "SKIPPED suite $1: $2"
  fi
}

# suite_run_unit BIN…: run cmocka binaries with TAP output and count their results. A binary that
# exits non-zero without reporting a failed test (crash, abort, failed group setup) is one failure.
suite_run_unit() {
  local bin out rc
  for bin in "$@"; do
    echo "# unit: $bin"
    if [ ! -x "$bin" ]; then
      SUITE_FAILED=$((SUITE_FAILED + 1))
      suite_note "FAILED: unit test binary $bin is missing"
      continue
    fi
    out=$(mktemp)
    rc=0
    CMOCKA_MESSAGE_OUTPUT=TAP timeout --kill-after=5 "${CM_UNIT_TIMEOUT:-120}" "$bin" >"$out" 2>&1 </dev/null || rc=$?
    cat "$out"
    suite_tally_tap "$out"
    rm -f "$out"
    if [ "$rc" -ne 0 ] && [ "$TAP_FAILED" -eq 0 ]; then
      SUITE_FAILED=$((SUITE_FAILED + 1))
      suite_note "FAILED: $bin exited with status $rc without reporting a failed test"
    elif [ "$TAP_FAILED" -gt 0 ]; then
      suite_note "FAILED: $bin: $TAP_FAILED test(s)"
    fi
  done
}

# suite_summary: the problems again, then the one line `make check` ends with.
suite_summary() {
  local p
  if [ "${#SUITE_PROBLEMS[@]}" -gt 0 ]; then
    echo "#"
    echo "# Summary of problems:"
    for p in "${SUITE_PROBLEMS[@]}"; do echo "#   $p"; done
  fi
  echo "$SUITE_PASSED passed, $SUITE_FAILED failed, $SUITE_SKIPPED skipped"
}
