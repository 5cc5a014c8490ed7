#!/bin/bash
# make-closure-bundle.sh [--add SRC:DST]… BINARY DIR [-- ARGS…] — make an OCI bundle whose rootfs
# is one host binary, the shared-library closure ldd reports for it (plus the dynamic loader), and
# whatever extra files or trees --add copies in. For example node and an npm package:
#
#   make-closure-bundle.sh --add ./node_modules:/app/node_modules "$(command -v node)" bundle \
#     -- /app/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js /data
#
#   BINARY     copied to its own (resolved) path inside the rootfs, and also to /usr/bin/NAME
#              under the name it was given, so process.args[0] can be either
#   --add      SRC (file or directory, copied with cp -a) to DST (absolute) in the rootfs
#   ARGS       appended to the binary in process.args (default: the binary alone)
#
# The rootfs also gets /etc/passwd and /etc/group (root, nobody, user 1000) and the empty mount
# points; config.json comes from `$CODEMODE spec` (or the embedded default), without a terminal.
# Libraries the binary opens with dlopen() are not in ldd's list: --add them.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=rootfs-tools/lib.sh
. "$here/lib.sh"

usage() {
  echo "usage: ${0##*/} [--add SRC:DST]... BINARY DIR [-- ARGS...]" >&2
  exit 2
}

adds=() pos=() extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --add) [ $# -ge 2 ] || usage; adds+=("$2"); shift 2 ;;
    --add=*) adds+=("${1#--add=}"); shift ;;
    -h | --help) usage ;;
    --) shift; extra=("$@"); break ;;
    -*) usage ;;
    *) pos+=("$1"); shift ;;
  esac
done
[ ${#pos[@]} -eq 2 ] || usage
given=${pos[0]} dir=${pos[1]}
case $given in */*) ;; *) given=$(command -v "$given") || rt_die "${pos[0]}: not found in PATH" ;; esac
binary=$(readlink -f "$given") || rt_die "$given: no such file"
[ -f "$binary" ] && [ -x "$binary" ] || rt_die "$binary: not an executable file"
rt_need_jq

rootfs=$dir/rootfs
[ -e "$rootfs" ] && rt_die "$rootfs already exists"
mkdir -p "$dir"
rt_skeleton_dirs "$rootfs"
rt_minimal_etc "$rootfs"

# copy_in HOST-PATH [ROOTFS-PATH]: a file at the same (or the given) absolute path in the rootfs.
copy_in() {
  local src=$1 dst=${2:-$1}
  mkdir -p "$rootfs$(dirname "$dst")"
  cp -L --preserve=mode "$src" "$rootfs$dst"
}

# Merged-/usr hosts: /lib, /lib64… are symlinks into /usr; keep them so, so the loader and the
# libraries sit where the binary's PT_INTERP and the loader's search path expect them.
for d in lib lib32 lib64 libx32 bin sbin; do
  if [ -L "/$d" ] && [ ! -e "$rootfs/$d" ]; then
    ln -s "$(readlink "/$d")" "$rootfs/$d"
    mkdir -p "$rootfs/$(readlink -f "/$d")"
  fi
done

copy_in "$binary"
name=$(basename "$given")
[ -e "$rootfs/usr/bin/$name" ] || copy_in "$binary" "/usr/bin/$name"

# ldd: "libX.so => /path (addr)", the loader as "/lib64/ld-linux-x86-64.so.2 (addr)", the vDSO
# without a path. A library ldd cannot find would make the binary fail inside: stop here.
libs=$(ldd "$binary" 2>&1) || true
if grep -q 'not found' <<<"$libs"; then
  rt_die "$binary: missing libraries: $(grep 'not found' <<<"$libs" | tr -s '\t\n' '  ')"
fi
if ! grep -qE 'not a dynamic executable|statically linked' <<<"$libs"; then
  while read -r lib; do
    [ -n "$lib" ] || continue
    copy_in "$lib"
  done < <(awk '/=> \// { print $3 } /^[ \t]*\// { print $1 }' <<<"$libs")
fi

for a in "${adds[@]}"; do
  src=${a%%:*} dst=${a#*:}
  [ "$src" != "$a" ] && [ -n "$src" ] || rt_die "--add $a: expected SRC:DST"
  [ "${dst:0:1}" = / ] || rt_die "--add $a: DST must be absolute"
  [ -e "$src" ] || rt_die "--add $a: $src: no such file or directory"
  mkdir -p "$rootfs$(dirname "$dst")"
  cp -a "$src" "$rootfs$dst"
done

rt_write_config "$dir"
extra_json=$(jq -cn '$ARGS.positional' --args -- "${extra[@]}")
bundle_jq "$dir" '.process.terminal = false | .process.args = [$bin] + $extra' \
  --arg bin "/usr/bin/$name" --argjson extra "$extra_json"
echo "bundle ready: $dir ($(du -sh "$rootfs" | cut -f1))" >&2
