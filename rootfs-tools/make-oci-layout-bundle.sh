#!/bin/bash
# make-oci-layout-bundle.sh [--ref NAME] LAYOUT DIR — make an OCI bundle from an OCI image layout
# directory (what `skopeo copy … oci:LAYOUT`, `umoci`, `buildah push oci:…` or `docker save` of
# Docker 25+ write): index.json → manifest (through a nested image index, picking this machine's
# platform) → layers applied in order, with the whiteouts (.wh.NAME, .wh..wh..opq) honoured; the
# image config's Env, Entrypoint + Cmd, WorkingDir and User become process.env, .args, .cwd and
# .user of a config.json made by `$CODEMODE spec` (or the embedded default), without a terminal.
#
#   --ref NAME   the manifest whose org.opencontainers.image.ref.name annotation is NAME (needed
#                when index.json lists several)
#
# Every blob's sha256 is checked. Layers may be tar, tar+gzip or tar+zstd. A layer entry that is
# absolute, contains `..`, or lies below a symlink leading out of the rootfs is refused.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=rootfs-tools/lib.sh
. "$here/lib.sh"
# shellcheck source=rootfs-tools/image-lib.sh
. "$here/image-lib.sh"

usage() {
  echo "usage: ${0##*/} [--ref NAME] LAYOUT DIR" >&2
  exit 2
}

ref=
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --ref) [ $# -ge 2 ] || usage; ref=$2; shift 2 ;;
    --ref=*) ref=${1#--ref=}; shift ;;
    -h | --help) usage ;;
    --) shift; args+=("$@"); break ;;
    -*) usage ;;
    *) args+=("$1"); shift ;;
  esac
done
[ ${#args[@]} -eq 2 ] || usage
layout=${args[0]} dir=${args[1]}
rt_need_jq
[ -f "$layout/oci-layout" ] || rt_die "$layout: no oci-layout file (not an OCI image layout)"
[ -f "$layout/index.json" ] || rt_die "$layout: no index.json"
jq -e '.imageLayoutVersion == "1.0.0"' "$layout/oci-layout" >/dev/null ||
  rt_die "$layout/oci-layout: imageLayoutVersion is not 1.0.0"

# blob DIGEST: the path of a blob, after checking its digest.
blob() {
  local digest=$1 path
  [[ "$digest" =~ ^sha256:[0-9a-f]{64}$ ]] || rt_die "unsupported or malformed digest \"$digest\""
  path=$layout/blobs/sha256/${digest#sha256:}
  [ -f "$path" ] || rt_die "$layout: blob $digest is missing"
  img_sha256_check "$path" "$digest" || rt_die "$layout: blob $digest is corrupt"
  echo "$path"
}

# This machine's platform, as the image spec spells it.
case $(uname -m) in
  x86_64) arch=amd64 ;;
  aarch64) arch=arm64 ;;
  armv7l | armv6l) arch=arm ;;
  i?86) arch=386 ;;
  *) arch=$(uname -m) ;;
esac

# pick_manifest INDEX-FILE: the descriptor (JSON) to follow from an index.
pick_manifest() {
  local index=$1 chosen
  if [ -n "$ref" ]; then
    chosen=$(jq -c --arg r "$ref" '[.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == $r)][0] // empty' "$index")
    [ -n "$chosen" ] || rt_die "no manifest with ref.name \"$ref\" in $index"
  else
    chosen=$(jq -c --arg a "$arch" '
      if (.manifests | length) == 1 then .manifests[0]
      else ([.manifests[] | select(.platform == null or (.platform.os == "linux" and .platform.architecture == $a))]
            | if length == 1 then .[0] else empty end) end' "$index")
    [ -n "$chosen" ] || rt_die "$index lists several manifests: choose one with --ref (names: $(jq -r '[.manifests[].annotations["org.opencontainers.image.ref.name"] // "?"] | join(", ")' "$index"))"
  fi
  echo "$chosen"
}

desc=$(pick_manifest "$layout/index.json")
# Follow nested indexes (a multi-platform image) down to one image manifest; --ref only names the
# top-level entry.
for _ in 1 2 3 4; do
  media=$(jq -r '.mediaType // ""' <<<"$desc")
  path=$(blob "$(jq -r .digest <<<"$desc")")
  [ -z "$media" ] && media=$(jq -r '.mediaType // ""' "$path")
  case $media in
    application/vnd.oci.image.index.v1+json | application/vnd.docker.distribution.manifest.list.v2+json)
      ref='' desc=$(pick_manifest "$path") ;;
    application/vnd.oci.image.manifest.v1+json | application/vnd.docker.distribution.manifest.v2+json)
      manifest=$path
      break ;;
    *) rt_die "unsupported manifest media type \"$media\"" ;;
  esac
done
[ -n "${manifest:-}" ] || rt_die "image indexes nested too deep"

rootfs=$dir/rootfs
[ -e "$rootfs" ] && rt_die "$rootfs already exists"
mkdir -p "$rootfs"
config=$(blob "$(jq -r .config.digest "$manifest")")

n=0
while IFS=$'\t' read -r digest media; do
  n=$((n + 1))
  case $media in
    *tar | *tar+gzip | *tar+zstd | *tar.gzip | *tar.gz) ;;
    *) rt_die "layer $n: unsupported media type \"$media\"" ;;
  esac
  img_apply_layer "$rootfs" "$(blob "$digest")" || rt_die "layer $n ($digest) could not be applied"
done < <(jq -r '.layers[] | [.digest, .mediaType] | @tsv' "$manifest")

for d in proc sys dev tmp; do
  [ -d "$rootfs/$d" ] || [ -L "$rootfs/$d" ] || mkdir -p "$rootfs/$d"
done
[ -L "$rootfs/tmp" ] || chmod 1777 "$rootfs/tmp"

rt_write_config "$dir"
inner=$(mktemp)
trap 'rm -f "$inner"' EXIT
jq '.config // {}' "$config" >"$inner"
img_config_to_bundle "$dir" "$inner" || rt_die "the image config could not be turned into config.json"
echo "bundle ready: $dir ($n layers)" >&2
