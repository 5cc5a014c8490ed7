#!/bin/bash
# In-VM tests under systemd as PID 1 (unified hierarchy): the systemd cgroup driver, through
# tests/integration/cgroups_systemd.bats. TMPDIR stays out of /tmp, which systemd-tmpfiles
# empties at boot.
echo "# systemd $(systemctl --version | head -n 1 | cut -d' ' -f2), state $(systemctl is-system-running), cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
export TMPDIR=/var/tmp/cmvm
mkdir -p "$TMPDIR"
cd "$CMVM_REPO" || exit 1
bats --tap tests/integration/cgroups_systemd.bats
