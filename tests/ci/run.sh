#!/bin/bash
# tests/ci/run.sh — hardened CI runners (--profile ci, issue 26): real jobs in codemode-run
# --profile ci, as root: Debian's podman nested in the job (load, run, build; the host's through
# --host, and inside an image) and buildah (from, run, commit; bud with a RUN step), the job's
# end (exit, timeout, codemode-run killed) leaving nothing, two concurrent jobs apart, a C build
# as root and as a normal user, apt-get install in a Debian image, an npm project's `npm ci && npm test` from a verdaccio mirror in the egress
# lab's network namespaces, reached only through --allow-host (npm.bats), and the GitLab Runner
# driver (contrib/gitlab-runner) and the GitHub Actions shell (contrib/github-actions) called as
# the runners call them. TAP on stdout (bats); exit 77 with the reason as the last stderr line
# when a tool is missing (tests/ci/deps.sh installs them).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${CODEMODE:=$repo/build/codemode}"
export CODEMODE

[ "$(id -u)" -eq 0 ] || { echo "tests/ci: needs root (per-job host ranges, idmapped mounts)" >&2; exit 77; }
for tool in podman buildah crun conmon python3 bats jq busybox make cc debootstrap dpkg-scanpackages node npm dnsmasq openssl ip nsenter curl; do
  command -v "$tool" >/dev/null || { echo "tests/ci: $tool is not installed (tests/ci/deps.sh)" >&2; exit 77; }
done
[ -x "$(dirname "$CODEMODE")/codemode-run" ] || { echo "tests/ci: codemode-run is not built (run make)" >&2; exit 1; }
args=(--tap)
[ -n "${CM_TEST_FILTER:-}" ] && args+=(--filter "$CM_TEST_FILTER")
bats "${args[@]}" "$here"/*.bats
