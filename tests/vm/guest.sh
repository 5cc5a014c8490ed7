#!/bin/bash
# PID 1 of the test VM (after switch_root into the host tree's overlay): mount what a booted
# system has, cgroup2 with every controller at /sys/fs/cgroup, run the variant's tests, power off.
# Under systemd (the systemd variant) it runs as a oneshot unit instead and skips the mounting.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
arg() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" /proc/cmdline; }

if [ "$$" -eq 1 ]; then
  mount -t proc proc /proc
  mount -t sysfs sysfs /sys
  mount -t devtmpfs devtmpfs /dev
  mkdir -p /dev/pts /dev/shm /dev/mqueue
  mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
  mount -t tmpfs tmpfs /dev/shm
  mount -t mqueue mqueue /dev/mqueue
  mount -t tmpfs -o mode=755 tmpfs /run
  mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
  mount -t bpf bpf /sys/fs/bpf 2>/dev/null
  # AppArmor's policy interface (apparmor_parser loads the test profile through it).
  mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
  exec </dev/console >/dev/console 2>&1
fi

CMVM_REPO=$(arg cmvm.repo)
CMVM_WORK=$(arg cmvm.work)
CMVM_VARIANT=$(arg cmvm.variant)
CODEMODE=$(arg cmvm.codemode)
export CMVM_REPO CMVM_WORK CMVM_VARIANT CODEMODE

bash "$CMVM_REPO/tests/vm/guest-$CMVM_VARIANT.sh" 2>&1 | sed -u 's/^/CMVM: /'
echo "CMVM: done"
sync
if [ "$$" -eq 1 ]; then
  # PID 1 may not exit (kernel panic); reboot(2) power-off ends qemu (-no-reboot).
  /bin/busybox poweroff -f
  sleep 10
else
  systemctl poweroff -ff
fi
