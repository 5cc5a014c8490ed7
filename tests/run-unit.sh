#!/bin/bash
# tests/run-unit.sh BIN… — run cmocka unit test binaries (what `make unit` calls).
# Ends with one line `N passed, N failed, N skipped`; exits 1 if anything failed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/suite.sh
. "$here/lib/suite.sh"

if [ $# -eq 0 ]; then
  echo "# no unit test binaries given (make unit passes build/tests/test_*)"
fi
suite_run_unit "$@"
suite_summary
[ "$SUITE_FAILED" -eq 0 ]
