#!/bin/bash
# In-VM tests under systemd as PID 1 (unified hierarchy): the systemd cgroup driver, through
# tests/integration/cgroups_systemd.bats, then through containerd's CRI with SystemdCgroup = true
# for runc and codemode (the cgroup cases of tests/cri). TMPDIR stays out of /tmp, which
# systemd-tmpfiles empties at boot.
echo "# systemd $(systemctl --version | head -n 1 | cut -d' ' -f2), state $(systemctl is-system-running), cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
export TMPDIR=/var/tmp/cmvm
mkdir -p "$TMPDIR"
cd "$CMVM_REPO" || exit 1
bats --tap tests/integration/cgroups_systemd.bats
# containerd's root on a tmpfs: its overlayfs snapshots cannot sit on the guest's overlay root.
# The images were made on the host (tests/vm/run.sh).
if [ -s "$CMVM_WORK/cri-images/pause.tar" ]; then
  mkdir -p /var/tmp/cmvm-cri && mount -t tmpfs -o size=512m cmvm-cri /var/tmp/cmvm-cri
  # Pods on the node's network: this kernel's bridge and veth are modules the initramfs does not
  # load (the cgroup cases need no pod network).
  CM_CRI_SYSTEMD=true CM_CRI_NETWORK=NODE CM_CRI_WORK_BASE=/var/tmp/cmvm-cri CM_CRI_IMAGES=$CMVM_WORK/cri-images CM_CRI_NO_INSTALL=1 \
    bash tests/cri/run.sh cgroups
  umount /var/tmp/cmvm-cri
else
  echo "ok 1 - CRI with SystemdCgroup = true # skip the host made no CRI images (tests/cri/deps.sh)"
fi

# Rootless (issue 15): the systemd user-scope path, with a user session of a test user.
CG=/sys/fs/cgroup
BUNDLES=/run/cmvm-bundles
TEMPLATE=$CMVM_WORK/bundle
mkdir -p "$BUNDLES"
# shellcheck source=tests/vm/guest-rootless.sh
. "$CMVM_REPO/tests/vm/guest-rootless.sh"
rl_user_setup
n=0
rl_t() {
  local desc=$1 out
  shift
  n=$((n + 1))
  if out=$("$@" 2>&1); then
    echo "ok $n - $desc"
  else
    echo "not ok $n - $desc"
    printf '%s\n' "$out" | tail -n 20 | sed 's/^/#   /'
  fi
}
rl_t "rootless: policy explain names the systemd user scope" rl_explain_systemd
rl_t "rootless: a user session's container runs in a transient scope of the user's manager, with the mcp profile's limits" rl_systemd_scope
rl_t "rootless: the same with codemode-run --ephemeral (its own user namespace talks to the user's manager)" rl_systemd_scope --ephemeral
