#!/bin/sh
# systemd-setup.sh NEWROOT REPO — run by the initramfs before switching to systemd: prepares the
# overlay (never the host) so systemd boots quickly to a oneshot unit running tests/vm/guest.sh.
set -e
root=$1
repo=$2
etc=$root/etc/systemd/system
mkdir -p "$etc"
# The host's fstab names its disks, which this VM does not have: waiting for them takes 90 s.
: >"$root/etc/fstab"
# systemd-tmpfiles would empty the host's /tmp in the overlay at boot: over 9p that takes
# minutes (whiteouts for every file), and the tests keep nothing there.
mkdir -p "$root/etc/tmpfiles.d"
: >"$root/etc/tmpfiles.d/tmp.conf"
# Units that fail or are slow here (the host's docker and containerd need configuration,
# apparmor.service compiles every host profile under TCG), and
# gettys that would write login prompts onto the serial console the results travel on.
for u in docker.service docker.socket containerd.service serial-getty@ttyS0.service getty@tty1.service \
  systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer man-db.timer e2scrub_reap.service \
  cron.service ssh.service systemd-networkd.service networking.service apparmor.service; do
  ln -sf /dev/null "$etc/$u"
done
# The host tree carries /.dockerenv: systemd would think it runs in a container and ignore the
# kernel command line (systemd.unit=, the cgroup options). A whiteout in the overlay hides it.
rm -f "$root/.dockerenv"
ln -sf cmvm.target "$etc/default.target"
# The script stays in the repo, outside /tmp: systemd-tmpfiles empties /tmp at boot.
cat >"$etc/cmvm-test.service" <<UNIT
[Unit]
Description=codemode VM tests
After=basic.target dbus.socket
Wants=dbus.socket

[Service]
Type=oneshot
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
ExecStart=/bin/bash $repo/tests/vm/guest.sh
UNIT
# Booted as the default unit (systemd.unit=cmvm.target): basic.target (mounts, sockets, D-Bus
# activation) and the tests, without whatever the host enables for multi-user.target (docker,
# podman, databases, gettys that would take over the serial console).
cat >"$etc/cmvm.target" <<UNIT
[Unit]
Description=codemode VM tests target
Requires=basic.target cmvm-test.service
After=basic.target cmvm-test.service
AllowIsolate=yes
UNIT
