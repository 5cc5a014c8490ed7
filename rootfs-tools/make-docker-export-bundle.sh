#!/bin/bash
# make-docker-export-bundle.sh SOURCE DIR — make an OCI bundle from Docker:
#
#   --container NAME   `docker export NAME` (the container's flattened filesystem) and its config
#                      from `docker inspect NAME` (.Config)
#   --image IMAGE      `docker save IMAGE`: its layers applied in order (whiteouts honoured) and
#                      the image config
#   FILE               a tarball written earlier by `docker save` (it has a manifest.json) or by
#                      `docker export` (then without an image config: args stay `sh`); `-` = stdin
#
# The image config's Env, Entrypoint + Cmd, WorkingDir and User become process.env, .args, .cwd
# and .user of a config.json made by `$CODEMODE spec` (or the embedded default), without a
# terminal. `docker` is the CLI on PATH (DOCKER_HOST etc. are honoured); set DOCKER to another.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=rootfs-tools/lib.sh
. "$here/lib.sh"
# shellcheck source=rootfs-tools/image-lib.sh
. "$here/image-lib.sh"

usage() {
  echo "usage: ${0##*/} --container NAME DIR | --image IMAGE DIR | TARBALL DIR" >&2
  exit 2
}

mode=file src=
pos=()
while [ $# -gt 0 ]; do
  case $1 in
    --container) [ $# -ge 2 ] || usage; mode=container src=$2; shift 2 ;;
    --image) [ $# -ge 2 ] || usage; mode=image src=$2; shift 2 ;;
    -h | --help) usage ;;
    -) pos+=("$1"); shift ;;
    --) shift; pos+=("$@"); break ;;
    -*) usage ;;
    *) pos+=("$1"); shift ;;
  esac
done
if [ "$mode" = file ]; then
  [ ${#pos[@]} -eq 2 ] || usage
  src=${pos[0]} dir=${pos[1]}
else
  [ ${#pos[@]} -eq 1 ] || usage
  dir=${pos[0]}
fi
docker=${DOCKER:-docker}
rt_need_jq
rootfs=$dir/rootfs
[ -e "$rootfs" ] && rt_die "$rootfs already exists"

work=$(mktemp -d "${TMPDIR:-/tmp}/cm-docker-bundle.XXXXXX")
trap 'rm -rf "$work"' EXIT

finish() {
  for d in proc sys dev tmp; do
    [ -d "$rootfs/$d" ] || [ -L "$rootfs/$d" ] || mkdir -p "$rootfs/$d"
  done
  [ -L "$rootfs/tmp" ] || chmod 1777 "$rootfs/tmp"
  rt_write_config "$dir"
  if [ -s "$work/inner.json" ]; then
    img_config_to_bundle "$dir" "$work/inner.json" || rt_die "the image config could not be turned into config.json"
  else
    bundle_jq "$dir" '.process.terminal = false'
  fi
  echo "bundle ready: $dir" >&2
}

# from_save TARBALL: the layout `docker save` writes: manifest.json = [{Config, Layers: [paths]}].
from_save() {
  local tarball=$1 config layer n=0
  mkdir -p "$work/save"
  tar -x -f "$tarball" -C "$work/save" || rt_die "$tarball: cannot be read"
  [ "$(jq 'length' "$work/save/manifest.json")" -eq 1 ] ||
    rt_die "$tarball holds several images: save one at a time"
  config=$(jq -r '.[0].Config' "$work/save/manifest.json")
  case $config in /* | *..*) rt_die "manifest.json: Config path \"$config\" refused" ;; esac
  jq '.config // {}' "$work/save/$config" >"$work/inner.json"
  mkdir -p "$rootfs"
  while IFS= read -r layer; do
    n=$((n + 1))
    case $layer in /* | *..*) rt_die "manifest.json: layer path \"$layer\" refused" ;; esac
    img_apply_layer "$rootfs" "$work/save/$layer" || rt_die "layer $n ($layer) could not be applied"
  done < <(jq -r '.[0].Layers[]' "$work/save/manifest.json")
}

case $mode in
  container)
    "$docker" inspect --type container --format '{{json .Config}}' "$src" >"$work/inner.json" ||
      rt_die "docker inspect $src failed"
    mkdir -p "$rootfs"
    # A flattened filesystem: no whiteouts to honour; device nodes are the runtime's job.
    "$docker" export "$src" | tar -x -C "$rootfs" --numeric-owner --exclude='./dev/*' --exclude='dev/*' ||
      rt_die "docker export $src failed"
    ;;
  image)
    "$docker" save -o "$work/image.tar" "$src" || rt_die "docker save $src failed"
    from_save "$work/image.tar"
    ;;
  file)
    if [ "$src" = - ]; then
      cat >"$work/input.tar"
      src=$work/input.tar
    fi
    [ -f "$src" ] || rt_die "$src: no such file"
    # grep reads the whole list (no -q): with pipefail, a grep that stops at the first match
    # could kill tar with SIGPIPE and make a `docker save` tarball look like an export.
    if tar -t -f "$src" 2>/dev/null | grep -xE '(\./)?manifest\.json' >/dev/null; then
      from_save "$src"
    else
      mkdir -p "$rootfs"
      tar -x -f "$src" -C "$rootfs" --numeric-owner --exclude='./dev/*' --exclude='dev/*' ||
        rt_die "extracting $src failed"
    fi
    ;;
esac
finish
