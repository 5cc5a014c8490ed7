#!/bin/bash
# tests/image/deps.sh — what tests/image needs on a fresh machine (called by .ci/run): the
# registry, skopeo and umoci (reference tools), openssl for the test CA, python3 for the image
# builder, node for the token service.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=rootfs-tools/lib.sh
. "$here/../../rootfs-tools/lib.sh"
rt_ensure_packages docker-registry skopeo umoci openssl python3 libcurl4-openssl-dev libarchive-dev libssl-dev
echo "tests/image: $(docker-registry --version 2>&1 | head -1), skopeo $(skopeo --version | awk '{print $3}'), umoci $(umoci --version | awk '{print $3}')"
