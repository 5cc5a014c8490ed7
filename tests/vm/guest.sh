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
  if grep -qw cmvm.variant=criu-v1 /proc/cmdline; then
    # Hybrid, as systemd's legacy layout: a tmpfs with one v1 hierarchy per controller the
    # kernel has (cpu and cpuacct together, net_cls and net_prio together) and cgroup2 at
    # unified/ with no controller.
    mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup
    for c in $(awk 'NR > 1 && $4 == 1 { print $1 }' /proc/cgroups); do
      case $c in cpu | cpuacct) c=cpu,cpuacct ;; net_cls | net_prio) c=net_cls,net_prio ;; esac
      [ -d /sys/fs/cgroup/$c ] && continue
      mkdir /sys/fs/cgroup/$c && mount -t cgroup -o $c cgroup /sys/fs/cgroup/$c
    done
    mkdir /sys/fs/cgroup/unified && mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup/unified
  else
    mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
  fi
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

# criu-v1: guest-criu.sh's cgroup v1 cases on the hybrid layout mounted above.
script=$CMVM_VARIANT
[ "$script" = criu-v1 ] && script=criu
bash "$CMVM_REPO/tests/vm/guest-$script.sh" 2>&1 | sed -u 's/^/CMVM: /'
echo "CMVM: done"
sync
if [ "$$" -eq 1 ]; then
  # PID 1 may not exit (kernel panic); reboot(2) power-off ends qemu (-no-reboot).
  /bin/busybox poweroff -f
  sleep 10
else
  systemctl poweroff -ff
fi
