# shellcheck shell=bash
# TAP output for the suites written as plain bash scripts (mcp, stress, valgrind): pass NAME,
# fail NAME [DETAIL…] (each detail becomes a "# " line). $n counts the tests, $failed the failures.
n=0
failed=0
pass() { n=$((n + 1)); echo "ok $n $1"; }
fail() {
  local l
  n=$((n + 1))
  failed=$((failed + 1))
  echo "not ok $n $1"
  shift
  for l in "$@"; do echo "# $l"; done
}
