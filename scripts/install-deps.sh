#!/bin/bash
# scripts/install-deps.sh [build|test|all] — install, with apt-get, the Debian packages codemode
# needs to build (build), to run its test suites (test), or both (all, the default). Only what
# is missing is installed; nothing happens when everything is there. Needs root for installing.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=rootfs-tools/lib.sh
. "$here/../rootfs-tools/lib.sh"

# libcurl, libarchive and libssl: codemode-image only (images; never on the start path).
build_pkgs=(build-essential pkg-config libseccomp-dev libcap-dev libyajl-dev
  libsystemd-dev libcmocka-dev libcurl4-openssl-dev libarchive-dev libssl-dev
  # codemode-broker (the egress broker, issue 16): async DNS, netlink (OpenSSL: above), the
  # HTTP/1 parser every plain-HTTP request and every intercepted request goes through (issue 25)
  libc-ares-dev libmnl-dev libhttp-parser-dev
  # codemode-criu (checkpoint/restore, issue 28): CRIU's RPC messages (protoc-c compiles
  # src/criu/rpc.proto at build time)
  libprotobuf-c-dev protobuf-c-compiler)
# bats/jq drive the suites; busybox-static makes the test rootfs; iproute2 and util-linux
# (unshare) set up namespaces to join; runc/crun are the side-by-side references; clang builds
# the libFuzzer targets; criu is what checkpoint/restore drive (tests/integration/checkpoint.bats,
# the VM's criu variant).
test_pkgs=(bats jq busybox-static iproute2 util-linux procps runc crun clang criu)

case ${1:-all} in
  build) rt_ensure_packages "${build_pkgs[@]}" ;;
  test) rt_ensure_packages "${test_pkgs[@]}" ;;
  all) rt_ensure_packages "${build_pkgs[@]}" "${test_pkgs[@]}" ;;
  *) echo "usage: ${0##*/} [build|test|all]" >&2; exit 2 ;;
esac
