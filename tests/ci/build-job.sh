#!/bin/sh
# tests/ci/build-job.sh — the C build job of tests/ci/ci.bats (as root) and tests/rootless/ci.bats
# (as a normal user), run inside a ci job with the source read-only at /src: codemode's own make
# as the job's root in its throwaway root, then as the job's uid 1000 in a tree of that user's.
# Prints the two codemode versions, the codemode-run version, and last the uid 1000 build's
# owner as the job sees it.
set -e
mkdir /build && tar -C /src --exclude=./build --exclude=./.git --exclude="./tests/*/.work" -cf - . | tar -C /build -xf -
make -C /build -j2 build/codemode build/codemode-run >/dev/null
/build/build/codemode --version | head -1
/build/build/codemode-run --version | head -1
# a normal user of the job (the usual CI image user), its own build tree
mkdir /home-build && cp -a /build/src /build/Makefile /build/seccomp-profiles /build/scripts /home-build/
chown -R 1000:1000 /home-build
setpriv --reuid 1000 --regid 1000 --clear-groups env HOME=/home-build make -C /home-build -j2 build/codemode >/dev/null
setpriv --reuid 1000 --regid 1000 --clear-groups /home-build/build/codemode --version | head -1
stat -c "%u" /home-build/build/codemode
