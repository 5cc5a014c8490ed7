#!/bin/bash
# tests/valgrind/deps.sh — what tests/valgrind/run.sh needs beyond scripts/install-deps.sh.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=rootfs-tools/lib.sh
. "$here/../../rootfs-tools/lib.sh"
rt_ensure_packages valgrind
