# shellcheck shell=bash
# The settings of the report-only benches (ci.sh, learn.sh, mcp.sh): source it once $here (this
# directory) is set. repo, CODEMODE (default build/codemode) and bin (its directory), rounds
# (BENCH_RUNS, default 20, at most 20: they interleave their columns, medians), results
# (BENCH_RESULTS, default tests/bench/results).
# shellcheck disable=SC2034,SC2154 # set for, and $here set by, the script that sources this
repo=$(cd "$here/../.." && pwd)
: "${CODEMODE:=$repo/build/codemode}"
bin=$(dirname "$CODEMODE")
rounds=${BENCH_RUNS:-20}
[ "$rounds" -gt 20 ] && rounds=20
results=${BENCH_RESULTS:-$here/results}
