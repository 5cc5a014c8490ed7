#!/bin/bash
# tests/bench/private-null.sh CMD… — run CMD (a benchmark) with a /dev/null of its own: a null
# device node made in a temporary directory and bound over /dev/null in a private mount
# namespace. Why: crun 1.8.1 fchowns a detached container's stdio to the container's user, and
# a benchmark (hyperfine, `run --detach </dev/null`) hands it /dev/null: the host's /dev/null
# changed (its ctime) at every crun exec and create measurement, which the host sentinel of a
# suite running beside the bench caught. runc skips /dev/null; codemode never touches its stdio.
# Not root (mount needs it): CMD runs as it is.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  exec "$@"
fi
if [ "${CM_BENCH_PRIVATE_NULL:-}" != 1 ]; then
  exec env CM_BENCH_PRIVATE_NULL=1 unshare -m --propagation private -- "$0" "$@"
fi
dir=$(mktemp -d /tmp/cm-bench-null.XXXXXX)
mknod -m 0666 "$dir/null" c 1 3
mount --bind "$dir/null" /dev/null
rc=0
"$@" || rc=$?
umount /dev/null
rm -rf "$dir"
exit "$rc"
