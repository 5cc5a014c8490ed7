#!/bin/bash
# tests/ci/deps.sh — what tests/ci needs on a fresh machine (called by .ci/run): Debian's podman
# (with crun and conmon) and buildah for the nested containers, run inside --profile ci jobs from the host's
# /usr (codemode-run --host); python3 for the test image; debootstrap for the Debian rootfs of
# the apt-get job; make and a C compiler for the build jobs (scripts/install-deps.sh has them).
# Cached in tests/ci/.work, so the suite itself needs no network: a minbase Debian 12 rootfs
# (debootstrap from the Debian archive) and a local repository of sudo and what it needs
# beyond minbase (apt-get download, dpkg-scanpackages), which the apt-get job installs from.
# The npm job (npm.bats): Node and npm (the job's, from the host's /usr), verdaccio 5 from npm
# as the registry mirror (in .work/verdaccio), and the egress lab's tools (dnsmasq, openssl,
# iproute2) for the network namespaces it runs in.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=rootfs-tools/lib.sh
. "$here/../../rootfs-tools/lib.sh"
rt_ensure_packages podman buildah crun conmon python3 busybox-static debootstrap dpkg-dev dnsmasq-base openssl iproute2
# Node and npm from Debian only when absent (a NodeSource nodejs carries its own npm).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  rt_ensure_packages nodejs npm
fi
echo "tests/ci: $(podman --version), $(crun --version | head -1)"
work=$here/.work
mkdir -p "$work"
if [ ! -x "$work/debian/usr/bin/apt-get" ]; then
  rm -rf --one-file-system "$work/debian.tmp"
  debootstrap --variant=minbase bookworm "$work/debian.tmp" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  rm -rf "$work/debian.tmp/var/cache/apt/archives/"*.deb
  mv "$work/debian.tmp" "$work/debian"
fi
if [ ! -s "$work/repo/Packages" ]; then
  rm -rf "$work/repo" && mkdir -p "$work/repo"
  # sudo and its dependencies that minbase lacks, resolved against the rootfs's own dpkg status.
  pkgs=$(apt-get -s -o Dir::State::status="$work/debian/var/lib/dpkg/status" install sudo 2>/dev/null |
    awk '/^Inst / {print $2}')
  # shellcheck disable=SC2086 # one word per package
  (cd "$work/repo" && apt-get download $pkgs >/dev/null)
  (cd "$work/repo" && dpkg-scanpackages . /dev/null >Packages 2>/dev/null)
fi
debs=("$work"/repo/*.deb)
echo "tests/ci: Debian rootfs $(cat "$work/debian/etc/debian_version"), local repository: ${#debs[@]} packages"
# verdaccio 5, pinned by its own lockfile once installed; again only when the pin changes.
if [ ! -x "$work/verdaccio/node_modules/.bin/verdaccio" ] || [ "$(cat "$work/verdaccio/pin" 2>/dev/null)" != verdaccio@5 ]; then
  rm -rf "$work/verdaccio" && mkdir -p "$work/verdaccio"
  (cd "$work/verdaccio" && echo '{"private": true}' >package.json &&
    timeout 600 npm install --no-audit --no-fund --cache "$work/npm-cache" verdaccio@5 >install.log 2>&1) ||
    { tail -20 "$work/verdaccio/install.log" >&2; exit 1; }
  echo verdaccio@5 >"$work/verdaccio/pin"
fi
echo "tests/ci: node $(node --version), npm $(npm --version), verdaccio $("$work/verdaccio/node_modules/.bin/verdaccio" --version)"
