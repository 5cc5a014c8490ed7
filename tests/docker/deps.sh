#!/bin/bash
# tests/docker/deps.sh — what the docker suite needs, for .ci/run (Debian packages, no recommends).
set -euo pipefail
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v containerd >/dev/null || need+=(containerd)
command -v script >/dev/null || need+=(bsdutils)
[ ${#need[@]} -eq 0 ] || DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}"
# The docker CLI comes with docker.io; any recent CLI (e.g. 28.x) talks to dockerd 20.10 too.
command -v docker >/dev/null
