#!/bin/bash
# make-busybox-bundle.sh DIR — make an OCI bundle whose rootfs is Debian's static busybox.
#
#   DIR/config.json   from `$CODEMODE spec` if CODEMODE names a codemode binary, else the same
#                     runc-shaped default (args ["sh"], terminal true). Non-interactive users
#                     rewrite it: `. rootfs-tools/lib.sh; bundle_set_args DIR echo hi;
#                     bundle_set_terminal DIR false`.
#   DIR/rootfs/       /bin/busybox plus one symlink per applet, /etc/passwd and /etc/group
#                     (root, nobody, user 1000), empty proc/ sys/ dev/ tmp/.
#
# Environment: BUSYBOX (default /bin/busybox from busybox-static, installed when missing),
# CODEMODE (optional). An existing DIR/rootfs is refused, so a typo never clobbers a tree.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=rootfs-tools/lib.sh
. "$here/lib.sh"

usage() {
  echo "usage: ${0##*/} DIR" >&2
  exit 2
}

dir=
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage ;;
    --) shift; [ $# -eq 1 ] || usage; dir=$1; shift ;;
    -*) usage ;;
    *) [ -z "$dir" ] || usage; dir=$1; shift ;;
  esac
done
[ -n "$dir" ] || usage

busybox=${BUSYBOX:-/bin/busybox}
if [ -z "${BUSYBOX:-}" ]; then
  rt_ensure_packages busybox-static
fi
[ -x "$busybox" ] || rt_die "$busybox: not an executable"
# A dynamically linked busybox would need its libraries inside the rootfs too.
if command -v readelf >/dev/null && readelf -l "$busybox" 2>/dev/null | grep 'INTERP' >/dev/null; then
  rt_die "$busybox is dynamically linked; install busybox-static or set BUSYBOX"
fi

rootfs=$dir/rootfs
[ -e "$rootfs" ] && rt_die "$rootfs already exists"
mkdir -p "$dir"
rt_skeleton_dirs "$rootfs"
install -m 0755 "$busybox" "$rootfs/bin/busybox"

# One symlink per applet in /bin (so PATH finds them all), plus one at the applet's usual place
# (/usr/bin/env, /sbin/ip, …) for scripts with absolute shebangs. Only the host's busybox prints
# its applet list; nothing runs inside the rootfs, and the links are made by us, not by
# `busybox --install`.
links=() # "target<TAB>linkpath" pairs
while IFS= read -r path; do
  name=${path##*/}
  if [ -z "$name" ] || [ "$name" = busybox ]; then continue; fi
  links+=("busybox	$rootfs/bin/$name")
  case $path in
    bin/*) ;;
    */*) links+=("/bin/busybox	$rootfs/$path") ;;
  esac
done < <("$busybox" --list-full)
links+=("busybox	$rootfs/bin/sh")
declare -A dirs=()
for l in "${links[@]}"; do
  d=${l#*	}
  dirs[${d%/*}]=1
done
mkdir -p "${!dirs[@]}"
if command -v perl >/dev/null; then
  # One process for ~400 links instead of one `ln` each (perl-base is essential in Debian).
  printf '%s\n' "${links[@]}" | perl -ne 'chomp; my ($t, $l) = split /\t/; symlink($t, $l) or $!{EEXIST} or die "symlink $l: $!\n"'
else
  for l in "${links[@]}"; do
    [ -L "${l#*	}" ] || ln -s "${l%%	*}" "${l#*	}"
  done
fi

rt_minimal_etc "$rootfs"
rt_write_config "$dir"
echo "bundle ready: $dir (rootfs: busybox $("$busybox" 2>&1 | head -1 | awk '{print $2}'))" >&2
