#!/bin/bash
# tests/bench/ci.sh — the ci profile (issue 26), reported only:
#   1. a job's start: codemode-run --profile ci BUNDLE -- true beside --profile mcp (plain and
#      --ephemeral, the overlay root ci always has), interleaved rounds, medians; the goal is a
#      ci start within 1.3 x an mcp start;
#   2. a nested `podman run --rm --network none IMAGE true` inside a ci job (--host, the host's
#      podman) beside the same podman on the host, in a private mount namespace whose
#      /var/lib, /run and /var/tmp are tmpfs (the host's own storage is never used).
# Appends a table to tests/bench/results/latest.md. BENCH_RUNS: rounds (default 20, at most 20).
set -euo pipefail
self=$(readlink -f "${BASH_SOURCE[0]}")
here=$(dirname "$self")
# shellcheck source=tests/bench/settings.sh
. "$here/settings.sh"
log() { echo "bench-ci: $*" >&2; }
[ "$(id -u)" -eq 0 ] || { log "needs root: skipped"; exit 0; }

work=$(mktemp -d /tmp/codemode-bench-ci.XXXXXX)
chmod 0755 "$work"
cleanup() {
  set +e
  for d in "$work"/state/*/; do [ -d "$d" ] && "$CODEMODE" --root "$work/state" delete --force "$(basename "$d")" 2>/dev/null; done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
run=("$bin/codemode-run" --root "$work/state")
"$repo/rootfs-tools/make-busybox-bundle.sh" "$work/bb" >/dev/null 2>&1

ms() { echo $(( $(date +%s%N) / 1000000 )); }
# shellcheck disable=SC2086 # $1 is a list of numbers, split on purpose
median() { printf '%s\n' $1 | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

# 1. Starts.
declare -A start
modes=("mcp" "mcp --ephemeral" "ci")
for _ in $(seq "$rounds"); do
  for m in "${modes[@]}"; do
    t0=$(date +%s%N)
    # shellcheck disable=SC2086 # the mode is a profile and maybe a flag
    "${run[@]}" --profile $m "$work/bb" -- true </dev/null >/dev/null 2>&1
    start[$m]+="$(( ($(date +%s%N) - t0) / 1000 )) "
  done
done

# 2. Nested podman run against the host's.
if command -v podman >/dev/null && command -v python3 >/dev/null; then
  cat >"$work/img.json" <<JSON
{"format": "docker-archive", "images": [{"tag": "bb", "platforms": [{"arch": "amd64",
  "layers": [[{"from_dir": "$work/bb/rootfs"}]], "config": {"Cmd": ["sh"]},
  "history": [{"created": "2026-01-01T00:00:00Z", "created_by": "busybox rootfs"}]}]}]}
JSON
  mkdir -p "$work/ws"
  python3 "$repo/tests/image/mkimage.py" "$work/img.json" "$work/ws/img.tar"
  n=$((rounds < 10 ? rounds : 10))
  # One script for both sides: load once, then n timed runs (ms each).
  cat >"$work/ws/nested.sh" <<'SH'
podman load -q -i img.tar >/dev/null
podman run --rm --network none localhost/test/bb:latest true
for i in $(seq "$1"); do
  t0=$(date +%s%N)
  podman run --rm --network none localhost/test/bb:latest true
  echo "run $(( ($(date +%s%N) - t0) / 1000000 ))"
done
SH
  chown -R 65534:65534 "$work/ws"
  inside=$("${run[@]}" --profile ci --host --mount "$work/ws:/ws:rw" --cwd /ws -- sh /ws/nested.sh "$n" </dev/null 2>/dev/null |
    awk '/^run / {printf "%s ", $2}')
  # Host side: tmpfs over /var/lib, /run and /var/tmp in a mount namespace of its own (they all
  # exist: nothing is made on the host), so podman's storage, run and cache directories are new.
  # shellcheck disable=SC2016 # expanded by the inner shell
  host=$(cd "$work/ws" && unshare -m sh -c 'mount --make-rprivate / && for d in /var/lib /run /var/tmp; do
      mount -t tmpfs -o size=1g tmpfs $d || exit 1; done && sh ./nested.sh "$1"' sh "$n" </dev/null 2>/dev/null |
    awk '/^run / {printf "%s ", $2}')
fi

{
  echo
  echo "## ci profile (tests/bench/ci.sh, medians, $rounds rounds)"
  echo
  echo "| | start → exit of \`true\` |"
  echo "|---|---|"
  for m in "${modes[@]}"; do
    echo "| codemode-run --profile $m | $(median "${start[$m]}" | awk '{printf "%.1f", $1 / 1000}') ms |"
  done
  mcp=$(median "${start[mcp]}") eph=$(median "${start[mcp --ephemeral]}") ci=$(median "${start[ci]}")
  echo
  echo "ci / mcp: $(awk -v a="$ci" -v b="$mcp" 'BEGIN {printf "%.2f", a / b}') (goal: at most 1.3);" \
    "ci / mcp --ephemeral: $(awk -v a="$ci" -v b="$eph" 'BEGIN {printf "%.2f", a / b}')"
  if [ -n "${inside:-}" ] && [ -n "${host:-}" ]; then
    echo
    echo "| podman run --rm --network none IMAGE true | median |"
    echo "|---|---|"
    echo "| nested in a ci job (--host) | $(median "$inside") ms |"
    echo "| on the host (private tmpfs storage) | $(median "$host") ms |"
  fi
} | tee -a "$results/latest.md"
