#!/bin/bash
# tests/cri/bench.sh [RUNS] — `make bench-cri`: pod start through containerd's CRI with runc and
# with codemode as the RuntimeClass handler (tests/cri/bench.mjs), in the same private containerd
# as tests/cri/run.sh. Reports only; never fails on timings.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${CODEMODE:=$repo/build/codemode}"
: "${CM_RUN_TAG:=bench}"
export CODEMODE CM_RUN_TAG CM_REPO=$repo
runs=${1:-20}
[ "$(id -u)" -eq 0 ] || { echo "tests/cri/bench.sh: needs root" >&2; exit 1; }
[ -d "$here/.work/node_modules/@grpc/grpc-js" ] || "$here/deps.sh" >&2 || exit 1
# shellcheck source=tests/cri/cri.bash
. "$here/cri.bash"
work=$(mktemp -d /tmp/cm-cri-bench.XXXXXX)
chmod 0755 "$work"
trap 'cri_cgroup_leftovers "cm-test-$CM_RUN_TAG-cri" >/dev/null; rm -rf --one-file-system "$work"' EXIT
cri_images "$work" || { echo "tests/cri/bench.sh: building the images failed" >&2; exit 1; }
cri_enter "$work" false node "$here/bench.mjs" "$runs"
