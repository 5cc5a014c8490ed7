# shellcheck shell=bash
# Helpers for the image-based bundle makers (make-oci-layout-bundle.sh,
# make-docker-export-bundle.sh). Source after lib.sh.
#
#   img_apply_layer ROOTFS LAYER      apply one layer tarball (plain, gzip or zstd) on top of ROOTFS,
#                                     with the OCI whiteouts (.wh.NAME, .wh..wh..opq)
#   img_config_to_bundle DIR CONFIG   process.args/env/cwd/user of DIR/config.json from an image
#                                     config's inner object (Env, Entrypoint, Cmd, WorkingDir, User)
#   img_sha256_check FILE DIGEST      FILE's content has DIGEST ("sha256:…")

# img_resolve_inside ROOTFS PATH: print where ROOTFS/PATH leads once symlinks (of earlier layers)
# are followed, or fail when that is outside ROOTFS: extracting or deleting below it would then
# act on whatever the link points to on the host (a layer-crafted tar-slip: `etc -> /`, or an
# absolute link, which means something else inside the container than on the host).
img_resolve_inside() {
  local real
  real=$(realpath -m -- "$1/$2") || return 1
  case $real in "$1" | "$1"/*) echo "$real" ;; *) return 1 ;; esac
}

# img_tar_flags FILE: the decompression flag for a layer (tar auto-detects on -x but not every
# tar does so when listing from a pipe; be explicit).
img_tar_flags() {
  local magic
  magic=$(head -c 4 "$1" | od -An -tx1 | tr -d ' \n')
  case $magic in
    1f8b*) echo --gzip ;;
    28b52ffd) echo --zstd ;;
    *) echo "" ;;
  esac
}

img_apply_layer() {
  local rootfs layer=$2 flags entries entry dir name rc=0
  rootfs=$(realpath -- "$1") || return 1
  flags=$(img_tar_flags "$layer")
  entries=$(mktemp) || return 1
  # shellcheck disable=SC2086
  if ! tar -t $flags -f "$layer" >"$entries"; then
    rm -f "$entries"
    echo "img_apply_layer: $layer: not a readable tar" >&2
    return 1
  fi
  # Paths as tar stores them ("./etc/x", "etc/x"): normalised, and refused when they climb out.
  sed -i -e 's|^\./||' -e 's|/$||' "$entries"
  if grep -qE '(^/|(^|/)\.\.(/|$))' "$entries"; then
    rm -f "$entries"
    echo "img_apply_layer: $layer: an entry is absolute or contains '..': refused" >&2
    return 1
  fi
  # Parents that lead outside the tree through a symlink of an earlier layer: refused.
  local dirs bad
  dirs=$(sed -n 's|/[^/]*$||p' "$entries" | sort -u)
  if [ -n "$dirs" ]; then
    bad=$(while IFS= read -r dir; do
      img_resolve_inside "$rootfs" "$dir" >/dev/null || echo "$dir"
    done <<<"$dirs")
    if [ -n "$bad" ]; then
      rm -f "$entries"
      echo "img_apply_layer: $layer: entries below a symlink that leads out of the rootfs: $(head -3 <<<"$bad" | tr '\n' ' ')" >&2
      return 1
    fi
  fi
  # Whiteouts first: they delete what lower layers put there, before this layer adds its own.
  while IFS= read -r entry; do
    name=${entry##*/}
    case $name in .wh.*) ;; *) continue ;; esac
    dir=${entry%/*}
    [ "$dir" = "$entry" ] && dir=.
    local target
    target=$(img_resolve_inside "$rootfs" "$dir") || continue # checked above
    if [ "$name" = .wh..wh..opq ]; then
      # Opaque directory: nothing of the lower layers stays in it.
      [ -d "$target" ] && find "$target" -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +
    else
      # rm on the name itself: a symlink named there is removed, never followed.
      rm -rf -- "${target:?}/${name#.wh.}"
    fi
  done <"$entries"
  # --numeric-owner: uids as in the image, not remapped through the host's /etc/passwd. Device
  # nodes under /dev are the runtime's job; whiteout markers are not files.
  # shellcheck disable=SC2086
  tar -x $flags -f "$layer" -C "$rootfs" --numeric-owner --same-permissions \
    --exclude='.wh.*' --exclude='*/.wh.*' --exclude='./dev/*' --exclude='dev/*' || rc=$?
  rm -f "$entries"
  [ "$rc" -eq 0 ] || echo "img_apply_layer: extracting $layer failed" >&2
  return "$rc"
}

img_sha256_check() {
  local file=$1 want=${2#sha256:} got
  [ "$want" != "$2" ] || { echo "img_sha256_check: unsupported digest $2" >&2; return 1; }
  got=$(sha256sum <"$file" | cut -d' ' -f1)
  [ "$got" = "$want" ] || { echo "img_sha256_check: $file: sha256 $got, expected $want" >&2; return 1; }
}

# img_resolve_user ROOTFS USER → "uid gid" from a numeric or named User ("1000", "1000:1000",
# "app", "app:staff"), looking names up in the rootfs's own /etc/passwd and /etc/group.
img_resolve_user() {
  local rootfs=$1 spec=$2 user group uid gid
  user=${spec%%:*}
  group=
  [[ "$spec" == *:* ]] && group=${spec#*:}
  if [[ "$user" =~ ^[0-9]+$ ]]; then
    uid=$user
    gid=$(awk -F: -v u="$uid" '$3 == u { print $4; exit }' "$rootfs/etc/passwd" 2>/dev/null)
  else
    read -r uid gid < <(awk -F: -v u="$user" '$1 == u { print $3, $4; exit }' "$rootfs/etc/passwd" 2>/dev/null) || true
    [ -n "$uid" ] || { echo "img_resolve_user: user \"$user\" is not in the image's /etc/passwd" >&2; return 1; }
  fi
  if [ -n "$group" ]; then
    if [[ "$group" =~ ^[0-9]+$ ]]; then
      gid=$group
    else
      gid=$(awk -F: -v g="$group" '$1 == g { print $3; exit }' "$rootfs/etc/group" 2>/dev/null)
      [ -n "$gid" ] || { echo "img_resolve_user: group \"$group\" is not in the image's /etc/group" >&2; return 1; }
    fi
  fi
  echo "$uid ${gid:-0}"
}

# img_config_to_bundle DIR CONFIG: CONFIG is a file holding the image config's inner object
# ({"Env": […], "Entrypoint": […], "Cmd": […], "WorkingDir": "…", "User": "…"}), as in an OCI
# image config's .config or `docker inspect`'s .Config. The process runs without a terminal
# (what a server on stdio, or a CI job, wants); set process.terminal for an interactive shell.
img_config_to_bundle() {
  local dir=$1 cfg=$2 uid=0 gid=0 user
  user=$(jq -r '.User // ""' "$cfg") || return 1
  if [ -n "$user" ]; then
    read -r uid gid < <(img_resolve_user "$dir/rootfs" "$user") || return 1
  fi
  bundle_jq "$dir" '
    $imgs[0] as $img
    | (($img.Entrypoint // []) + ($img.Cmd // [])) as $args
    | .process.terminal = false
    | .process.args = (if ($args | length) > 0 then $args else .process.args end)
    | .process.env = (if $img.Env then $img.Env else .process.env end)
    | .process.cwd = (if ($img.WorkingDir // "") != "" then $img.WorkingDir else "/" end)
    | .process.user.uid = $uid | .process.user.gid = $gid' \
    --slurpfile imgs "$cfg" --argjson uid "$uid" --argjson gid "$gid"
}
