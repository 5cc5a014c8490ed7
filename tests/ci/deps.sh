#!/bin/bash
# tests/ci/deps.sh — what tests/ci needs on a fresh machine (called by .ci/run): Debian's podman
# (with crun and conmon) for the nested containers, run inside --profile ci jobs from the host's
# /usr (codemode-run --host); python3 for the test image; make and a C compiler for the build
# jobs (scripts/install-deps.sh has them).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=rootfs-tools/lib.sh
. "$here/../../rootfs-tools/lib.sh"
rt_ensure_packages podman crun conmon python3 busybox-static
echo "tests/ci: $(podman --version), $(crun --version | head -1)"
