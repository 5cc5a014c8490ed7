#!/bin/bash
# tests/rootless/deps.sh — what tests/rootless needs on a fresh machine (called by .ci/run):
# newuidmap/newgidmap (uidmap) and the user tools (passwd: useradd, userdel; util-linux: setpriv).
set -euo pipefail
missing=()
command -v newuidmap >/dev/null || missing+=(uidmap)
command -v useradd >/dev/null || missing+=(passwd)
command -v setpriv >/dev/null || missing+=(util-linux)
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
fi
echo "tests/rootless: $(command -v newuidmap), $(command -v useradd), $(command -v setpriv)"
