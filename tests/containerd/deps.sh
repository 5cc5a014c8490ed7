#!/bin/bash
# tests/containerd/deps.sh — what the containerd suite needs, for .ci/run (Debian packages, no recommends).
set -euo pipefail
need=()
command -v containerd >/dev/null || need+=(containerd)
command -v runc >/dev/null || need+=(runc)
# podman: its case is skipped without it (CM_NO_PODMAN=1 keeps CI lean).
[ "${CM_NO_PODMAN:-}" = 1 ] || command -v podman >/dev/null || need+=(podman)
[ ${#need[@]} -eq 0 ] || DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}"
