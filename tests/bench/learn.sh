#!/bin/bash
# tests/bench/learn.sh — what learn mode and a learned policy cost (issue 19), reported only:
#   1. one syscall: getppid (notified while learning: a round trip to codemode-run) and getpid
#      (the baseline: never notified), in ns per call, under the mcp profile, --learn, and
#      --policy (+ --audit-summary, whose audit filter notifies only file calls);
#   2. @modelcontextprotocol/server-filesystem: spawn → initialize, and 10 read_text_file calls
#      in one session, interleaved rounds, medians, under the same four.
# Appends a table to tests/bench/results/latest.md. BENCH_RUNS: rounds (default 20, at most 20).
set -euo pipefail
self=$(readlink -f "${BASH_SOURCE[0]}")
here=$(dirname "$self")
# shellcheck source=tests/bench/settings.sh
. "$here/settings.sh"
log() { echo "bench-learn: $*" >&2; }
for t in node jq cc; do
  command -v "$t" >/dev/null || { log "$t is missing: skipped"; exit 0; }
done
[ -d "$repo/tests/mcp/.work/node_modules/@modelcontextprotocol/server-filesystem" ] || "$repo/tests/mcp/deps.sh" >&2

work=$(mktemp -d /tmp/codemode-bench-learn.XXXXXX)
cleanup() {
  set +e
  for d in "$work"/state/*/; do [ -d "$d" ] && "$CODEMODE" --root "$work/state" delete --force "$(basename "$d")" 2>/dev/null; done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
run=("$bin/codemode-run" --root "$work/state")

# 1. One syscall.
"$repo/rootfs-tools/make-busybox-bundle.sh" "$work/bb" >/dev/null 2>&1
cc -static -O2 -o "$work/bb/rootfs/calls" "$here/learn_calls.c"
"${run[@]}" --learn "$work/calls.json" "$work/bb" -- /calls 2000 </dev/null >/dev/null 2>&1
declare -A note_ns base_ns
modes=("mcp" "learn" "policy" "policy+audit")
opts() {
  case $1 in
  mcp) ;;
  learn) echo "--learn $work/calls-again.json" ;;
  policy) echo "--policy $work/calls.json" ;;
  policy+audit) echo "--policy $work/calls.json --audit-summary" ;;
  esac
}
for _ in 1 2 3; do
  for m in "${modes[@]}"; do
    # shellcheck disable=SC2046
    out=$("${run[@]}" $(opts "$m") "$work/bb" -- /calls 20000 </dev/null 2>/dev/null)
    note_ns[$m]+="$(sed -E 's/.*notified_ns ([0-9]+).*/\1/' <<<"$out") "
    base_ns[$m]+="$(sed -E 's/.*baseline_ns ([0-9]+).*/\1/' <<<"$out") "
  done
done
# shellcheck disable=SC2086 # $1 is a list of numbers, split on purpose
median() { printf '%s\n' $1 | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

# 2. The MCP server.
nm=$repo/tests/mcp/.work/node_modules
mkdir -p "$work/data"
echo hello >"$work/data/hello.txt"
CM_TEST_TOKEN=bench "$repo/tests/mcp/make-node-bundle.sh" "$work/bundle" "$nm" >/dev/null 2>&1
srv=("${run[@]}" --mount "$work/data:/data:ro" "$work/bundle")
jq -n --argjson r 1 --argjson c "$(printf '%s\n' "${srv[@]:0:3}" --learn "$work/fs.json" "${srv[@]:3}" | jq -R . | jq -s '{"learn": .}')" \
  '{rounds: $r, calls: 10, tool: {name: "read_text_file", arguments: {path: "/data/hello.txt"}}, commands: $c}' >"$work/learn-spec.json"
node "$here/mcp-timing.mjs" "$work/learn-spec.json" >/dev/null
cmds=$(jq -n --argjson base "$(printf '%s\n' "${srv[@]}" | jq -R . | jq -s .)" --arg pol "$work/fs.json" --arg again "$work/fs-again.json" \
  '{"mcp": $base,
    "learn": ($base[:3] + ["--learn", $again] + $base[3:]),
    "policy": ($base[:3] + ["--policy", $pol] + $base[3:]),
    "policy+audit": ($base[:3] + ["--policy", $pol, "--audit-summary"] + $base[3:])}')
jq -n --argjson c "$cmds" --argjson r "$rounds" \
  '{rounds: $r, calls: 10, tool: {name: "read_text_file", arguments: {path: "/data/hello.txt"}}, commands: $c}' >"$work/spec.json"
log "server-filesystem: $rounds interleaved rounds"
node "$here/mcp-timing.mjs" "$work/spec.json" >"$work/mcp.json"
calls=$(jq '.runs[0].notifications' "$work/fs-again.json")

{
  echo
  echo "## Learn mode and learned policies (tests/bench/learn.sh, medians)"
  echo
  echo "| | getppid (notified while learning) | getpid (baseline) | server-filesystem spawn → initialize | 10 read_text_file in a session |"
  echo "|---|---|---|---|---|"
  for m in "${modes[@]}"; do
    echo "| $m | $(median "${note_ns[$m]}") ns | $(median "${base_ns[$m]}") ns | $(jq --arg m "$m" '.[$m].spawn_ms | . * 10 | round / 10' "$work/mcp.json") ms | $(jq --arg m "$m" '.[$m].per_call_in_session_ms * 10 | . * 10 | round / 10' "$work/mcp.json") ms |"
  done
  echo
  echo "A learning session of server-filesystem (start, initialize, 10 reads, exit) notified $calls calls."
} | tee -a "$results/latest.md"
