#!/bin/bash
# Run libFuzzer targets: tests/fuzz/run.sh SECONDS build/fuzz/fuzz_NAME...
#
# Each target fuzzes for SECONDS starting from its seed corpus tests/fuzz/corpus/NAME (plus the
# inputs earlier runs found, kept in build/fuzz/work/NAME so the repository's corpus only grows by
# hand). SECONDS=0 only replays the seed corpus: a quick regression check that every kept crash
# input stays fixed. A crash leaves its input in build/fuzz/artifacts/NAME/; copy it into the seed
# corpus once fixed. Prints one summary line per target and exits 1 if any target failed.
set -u
seconds=${1:?usage: run.sh SECONDS FUZZ_BINARY...}
shift
here=$(cd "${BASH_SOURCE[0]%/*}" && pwd)
# One target per CPU at a time (FUZZ_JOBS), each with its own log and summary line, printed in
# the order given: 7 targets × 60 s took 7 minutes of CI one after another.
jobs=${FUZZ_JOBS:-$(nproc)}
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
fuzz_one() {
  local bin=$1 out=$2
  local name=${bin##*/fuzz_}
  local seeds=$here/corpus/$name
  local build
  build=$(cd "${bin%/*}" && pwd)
  local work=$build/work/$name artifacts=$build/artifacts/$name/ log=$build/$name.log
  mkdir -p "$seeds" "$work" "$artifacts"
  # Leaks on error paths are bugs too (detect_leaks); a hang over 10 s on a 64 KiB document is one.
  local opts=(-dict="$here/json.dict" -max_len=65536 -timeout=10 -rss_limit_mb=2048
    -artifact_prefix="$artifacts" -print_final_stats=1)
  if [ "$seconds" -eq 0 ]; then
    "$bin" "${opts[@]}" -runs=0 "$seeds" >"$log" 2>&1
  else
    # The state target writes to a temp dir; keep it off the repository.
    TMPDIR=${TMPDIR:-/tmp} "$bin" "${opts[@]}" -max_total_time="$seconds" "$work" "$seeds" >"$log" 2>&1
  fi
  local rc=$? execs rate cov
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1)
  if [ "$rc" -eq 0 ]; then
    echo "fuzz $name: ok, ${execs:-0} runs, ${rate:-0} exec/s, ${cov:-cov: ?}" >"$out"
  else
    echo "fuzz $name: FAILED (exit $rc), see $log; inputs in $artifacts" >"$out"
    grep -m3 -E 'ERROR: |runtime error:|SUMMARY:' "$log" | sed 's/^/    /' >&2
    return 1
  fi
}
i=0
for bin in "$@"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  fuzz_one "$bin" "$results/$i" &
  i=$((i + 1))
done
wait
failed=0
for ((k = 0; k < i; k++)); do
  cat "$results/$k"
  grep -q ': FAILED' "$results/$k" && failed=1
done
exit "$failed"
