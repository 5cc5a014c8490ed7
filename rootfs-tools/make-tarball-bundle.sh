#!/bin/bash
# make-tarball-bundle.sh TARBALL DIR — make an OCI bundle from a root filesystem tarball, e.g.
# `docker export CONTAINER > rootfs.tar` or a distribution's minirootfs (.tar, .tar.gz, .tar.xz,
# .tar.zst; `-` reads stdin).
#
# config.json comes from `$CODEMODE spec` when CODEMODE names a codemode binary, else the embedded
# runc-shaped default. Device nodes in the tarball are skipped (the runtime makes /dev itself) and
# ownership is kept, so files owned by uid 0 in the image stay root's.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=rootfs-tools/lib.sh
. "$here/lib.sh"

[ $# -eq 2 ] || { echo "usage: ${0##*/} TARBALL DIR" >&2; exit 2; }
tarball=$1
dir=$2
[ "$tarball" = - ] || [ -f "$tarball" ] || rt_die "$tarball: no such file"

rootfs=$dir/rootfs
[ -e "$rootfs" ] && rt_die "$rootfs already exists"
mkdir -p "$rootfs"

# --no-same-owner would make every file root's; as root tar keeps owners by default, which is what
# an image needs. Absolute names and `..` are stripped by GNU tar by default (no writes outside
# DIR); device nodes are excluded because /dev is the runtime's job.
tar_args=(-x -f "$tarball" -C "$rootfs" --numeric-owner --exclude='./dev/*' --exclude='dev/*')
if ! tar "${tar_args[@]}"; then
  rm -rf "$rootfs"
  rt_die "extracting $tarball failed"
fi

# Images from `docker export` already have these; minimal tarballs may not.
for d in proc sys dev tmp; do
  [ -d "$rootfs/$d" ] || [ -L "$rootfs/$d" ] || mkdir -p "$rootfs/$d"
done
[ -L "$rootfs/tmp" ] || chmod 1777 "$rootfs/tmp"

rt_write_config "$dir"
# A tarball without /bin/sh cannot run the default `sh`; say so instead of failing at exec time.
if [ ! -e "$rootfs/bin/sh" ] && [ ! -L "$rootfs/bin/sh" ]; then
  echo "${0##*/}: note: $rootfs has no /bin/sh; set process.args (bundle_set_args in lib.sh)" >&2
fi
echo "bundle ready: $dir" >&2
