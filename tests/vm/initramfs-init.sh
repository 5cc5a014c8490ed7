#!/bin/busybox sh
# /init of the test VM's initramfs (tests/vm/run.sh builds it): load the 9p and overlay modules,
# mount the host's / (read-only, 9p) under a tmpfs overlay and switch_root into it, running
# tests/vm/guest.sh, or systemd (cmvm.init=) with a test unit dropped into the overlay.
/bin/busybox mkdir -p /bin /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

say() { echo "CMVM: $*" >/dev/console; }
fail() {
  say "# initramfs: $*"
  say "done (initramfs failed)"
  poweroff -f
}

arg() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" /proc/cmdline; }

# In dependency order (run.sh resolved it from each module's "depends=").
for m in $(cat /modules.order); do
  insmod "/lib/modules/$m.ko" || fail "insmod $m failed"
done

mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=524288,cache=loose hostroot /lower ||
  fail "mount 9p hostroot failed"
mount -t tmpfs -o mode=755 tmpfs /upper
mkdir -p /upper/data /upper/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/data,workdir=/upper/work /newroot ||
  fail "mount overlay failed"

repo=$(arg cmvm.repo)
init=$(arg cmvm.init)
[ -n "$repo" ] || fail "no cmvm.repo= on the kernel command line"
if [ -n "$init" ]; then
  # systemd boot: the test unit (and its script, outside /tmp: systemd gives units a private or
  # cleaned /tmp) go into the overlay, so the host's /etc stays untouched.
  sh "/newroot$repo/tests/vm/systemd-setup.sh" /newroot "$repo" || fail "systemd-setup.sh failed"
fi

# switch_root leaves nothing of /proc, /sys, /dev behind: the next init mounts them fresh.
umount /proc /sys
umount /dev 2>/dev/null || umount -l /dev
if [ -n "$init" ]; then
  exec switch_root /newroot "$init"
fi
exec switch_root /newroot /bin/bash "$repo/tests/vm/guest.sh"
