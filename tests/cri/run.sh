#!/bin/bash
# tests/cri/run.sh — codemode as a Kubernetes RuntimeClass handler, driven through containerd's
# CRI without kubelet: a private containerd 1.6 with the CRI plugin (tests/cri/cri.bash: its own
# network and mount namespace, the README's runtimes config), the test's own pause and busybox
# images imported with `ctr -n k8s.io images import`, and the CRI calls kubelet makes, from a
# small client of ours (tests/cri/cri.mjs, tests/cri/cri.proto). Every case runs with runc as the
# handler and then with codemode, and must see the same; then the codemode-mcp handler's cases
# (tests/cri/suite.mjs). TAP on stdout; exit 77 (the reason as the last stderr line) when this
# machine cannot run it. The systemd cgroup driver part runs in the VM's systemd variant
# (tests/vm/guest-systemd.sh calls this script with CM_CRI_SYSTEMD=true and "cgroups").
#   run.sh [all|cgroups]
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${CODEMODE:=$repo/build/codemode}"
: "${CM_RUN_TAG:=$(printf '%04x' $((RANDOM % 65536)))}"
export CODEMODE CM_RUN_TAG CM_REPO=$repo
what=${1:-all}
systemd=${CM_CRI_SYSTEMD:-false}

cannot() {
  echo "tests/cri: $*" >&2
  exit 77
}
[ "$(id -u)" -eq 0 ] || cannot "needs root"
[ -x "$CODEMODE" ] || cannot "$CODEMODE is not built (run make)"
system_deps() {
  command -v containerd >/dev/null && command -v node >/dev/null && command -v npm >/dev/null && [ -x /usr/lib/cni/bridge ]
}
if system_deps && [ ! -d "$here/.work/node_modules/@grpc/grpc-js" ] && [ "${CM_CRI_NO_INSTALL:-}" != 1 ]; then
  # The machine has what apt gives; the npm packages come on first use (deps.sh installs nothing
  # else then), as tests/mcp's do: a plain `make check` from a fresh clone runs this suite too.
  "$here/deps.sh" >&2 || cannot "tests/cri/deps.sh failed (is the npm registry reachable?)"
fi
if ! system_deps || [ ! -d "$here/.work/node_modules/@grpc/grpc-js" ]; then
  if [ "${CI:-}" = true ] && [ "${CM_CRI_NO_INSTALL:-}" != 1 ]; then
    "$here/deps.sh" >&2 || cannot "tests/cri/deps.sh failed"
  else
    cannot "containerd, containernetworking-plugins, node or the npm packages are missing (run tests/cri/deps.sh)"
  fi
fi
for tool in containerd ctr runc node unshare ip jq cc; do
  command -v "$tool" >/dev/null || cannot "$tool is not installed (tests/cri/deps.sh)"
done

# shellcheck source=tests/cri/cri.bash
. "$here/cri.bash"

# On the disk, not the suite's TMPDIR (maybe /dev/shm): the mcp profile refuses bind mounts of
# anything under /dev, and the pods' /etc/hosts and resolv.conf come from containerd's root here.
work=$(mktemp -d "${CM_CRI_WORK_BASE:-/tmp}/cm-cri.XXXXXX")
chmod 0755 "$work"
cleanup() {
  local left
  left=$(cri_cgroup_leftovers "cm-test-$CM_RUN_TAG-cri")
  [ -z "$left" ] || echo "tests/cri: cgroups left behind (removed): $left" >&2
  if [ "${CM_CRI_KEEP:-}" = 1 ]; then
    echo "tests/cri: work dir kept: $work" >&2
  else
    rm -rf --one-file-system "$work"
  fi
}
trap cleanup EXIT

# CM_CRI_IMAGES: a directory with the images made already (tests/vm/run.sh makes them on the
# host: building the pause program under TCG would take long).
if [ -n "${CM_CRI_IMAGES:-}" ] && [ -s "$CM_CRI_IMAGES/pause.tar" ] && [ -s "$CM_CRI_IMAGES/busybox.tar" ]; then
  mkdir -p "$work/images" && cp "$CM_CRI_IMAGES/pause.tar" "$CM_CRI_IMAGES/busybox.tar" "$work/images/"
else
  cri_images "$work" || { echo "Bail out! building the test images failed"; exit 1; }
fi
export CM_CRI_SYSTEMD=$systemd
cri_enter "$work" "$systemd" timeout --kill-after=10 "${CM_CRI_TIMEOUT:-600}" node "$here/suite.mjs" "$what" |
  tee "$work/suite.tap"
rc=${PIPESTATUS[0]}
n=$(grep -cE '^(not )?ok [0-9]+' "$work/suite.tap")
if [ "$rc" -ne 0 ] && ! grep -qE '^not ok [0-9]+' "$work/suite.tap"; then
  n=$((n + 1))
  echo "not ok $n - tests/cri/suite.mjs $what exited with status $rc (see above)"
fi
n=$((n + 1))
if [ -s "$work/leftover.pids" ]; then
  echo "not ok $n - nothing of the pods runs once containerd has stopped: $(tr '\n' ' ' <"$work/leftover.pids")"
  rc=1
else
  echo "ok $n - nothing of the pods runs once containerd has stopped"
fi
if [ $rc -ne 0 ]; then
  echo "# containerd's log (last 40 lines):"
  tail -n 40 "$work/containerd.log" 2>/dev/null | cut -c1-600 | sed 's/^/#   /'
fi
echo "1..$n"
exit $rc
