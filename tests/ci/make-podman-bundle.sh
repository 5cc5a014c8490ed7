#!/bin/bash
# tests/ci/make-podman-bundle.sh [--no-config] DIR — an OCI bundle whose image holds podman: the
# host's podman, crun and conmon with their shared-library closures
# (rootfs-tools/make-closure-bundle.sh), busybox for a shell, and the image's own /etc/containers
# as a CI image would ship it (cgroups disabled: on a host without a delegated cgroup v2 tree the
# job's cgroup is the host's to manage; overlay storage; local images accepted).
# --no-config: no containers.conf and no storage.conf anywhere in the image, only what Debian's
# containers-common puts in /etc/containers (policy.json): podman's defaults and what the ci
# profile tells it (its containers.conf.d drop-in) are all it gets.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tools=$here/../../rootfs-tools
own_config=1
[ "${1:-}" = --no-config ] && { own_config=0; shift; }
out=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$tools/make-closure-bundle.sh" /usr/bin/podman "$out" >/dev/null
"$tools/make-closure-bundle.sh" --add /usr/bin/conmon:/usr/bin/conmon /usr/bin/crun "$tmp/crun" >/dev/null
cp -an "$tmp/crun/rootfs/." "$out/rootfs/"
# conmon's libraries (glib): ldd's closure, as the bundle maker does for its binary.
ldd /usr/bin/conmon | awk '/=> \// {print $3}' | while read -r lib; do
  mkdir -p "$out/rootfs$(dirname "$lib")"
  cp -Ln "$lib" "$out/rootfs$lib"
done
mkdir -p "$out/rootfs/bin" "$out/rootfs/etc/containers" "$out/rootfs/var/tmp" "$out/rootfs/var/lib" "$out/rootfs/run"
chmod 1777 "$out/rootfs/var/tmp"
cp "$(command -v busybox)" "$out/rootfs/bin/busybox"
for a in sh cat echo ls id; do ln -sfn busybox "$out/rootfs/bin/$a"; done
if [ "$own_config" = 1 ]; then
  printf '[containers]\ncgroups = "disabled"\n\n[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\nruntime = "crun"\n' \
    >"$out/rootfs/etc/containers/containers.conf"
  printf '[storage]\ndriver = "overlay"\nrunroot = "/run/containers/storage"\ngraphroot = "/var/lib/containers/storage"\n' \
    >"$out/rootfs/etc/containers/storage.conf"
fi
echo '{"default": [{"type": "insecureAcceptAnything"}]}' >"$out/rootfs/etc/containers/policy.json"
