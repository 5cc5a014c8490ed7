#!/bin/sh
# systemd-setup.sh NEWROOT REPO — run by the initramfs before switching to systemd: prepares the
# overlay (never the host) so systemd boots quickly to a oneshot unit running tests/vm/guest.sh.
set -e
root=$1
repo=$2
etc=$root/etc/systemd/system
mkdir -p "$etc/multi-user.target.wants"
# The host's fstab names its disks, which this VM does not have: waiting for them takes 90 s.
: >"$root/etc/fstab"
# Units that fail or are slow here (the host's docker and containerd need configuration), and
# gettys that would write login prompts onto the serial console the results travel on.
for u in docker.service docker.socket containerd.service serial-getty@ttyS0.service getty@tty1.service \
  systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer man-db.timer e2scrub_reap.service \
  cron.service ssh.service systemd-networkd.service networking.service; do
  ln -sf /dev/null "$etc/$u"
done
# The script stays in the repo, outside /tmp: systemd-tmpfiles empties /tmp at boot.
cat >"$etc/cmvm-test.service" <<UNIT
[Unit]
Description=codemode VM tests
After=dbus.socket basic.target
Wants=dbus.socket

[Service]
Type=oneshot
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
ExecStart=/bin/bash $repo/tests/vm/guest.sh
UNIT
ln -sf ../cmvm-test.service "$etc/multi-user.target.wants/cmvm-test.service"
