# shellcheck shell=bash
# A private containerd for the containerd suite (its own root, state, sockets; the CRI plugin
# off) and an OCI image of busybox built by hand (no registry here).
#
#   ctrd_start DIR   → CTR_SOCK, CTR_NS
#   ctrd_stop
#   cctr ARGS…       ctr against that containerd, namespace $CTR_NS, with a timeout

CM_REPO=${CM_REPO:-$(cd "${BASH_SOURCE[0]%/*}/../.." && pwd)}
: "${CODEMODE:=$CM_REPO/build/codemode}"
CTR_NS=${CTR_NS:-cmtest}
CTR_IMAGE=docker.io/library/cm-busybox:latest

cctr() {
  timeout --kill-after=5 "${CTR_TIMEOUT:-120}" ctr -a "$CTR_SOCK" -n "$CTR_NS" "$@"
}

ctrd_install() {
  command -v containerd >/dev/null && command -v ctr >/dev/null && return 0
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends containerd >&2
}

ctrd_start() {
  CTR_DIR=$1
  mkdir -p "$CTR_DIR"
  CTR_SOCK=$CTR_DIR/containerd.sock
  export CTR_DIR CTR_SOCK
  cat >"$CTR_DIR/config.toml" <<EOF
version = 2
root = "$CTR_DIR/root"
state = "$CTR_DIR/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$CTR_SOCK"
[ttrpc]
  address = "$CTR_SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
EOF
  containerd --config "$CTR_DIR/config.toml" >"$CTR_DIR/containerd.log" 2>&1 &
  echo $! >"$CTR_DIR/containerd.pid"
  local tries=150
  until ctr -a "$CTR_SOCK" version >/dev/null 2>&1; do
    tries=$((tries - 1))
    if [ $tries -le 0 ] || ! kill -0 "$(cat "$CTR_DIR/containerd.pid")" 2>/dev/null; then
      echo "containerd did not come up; its log:" >&2
      tail -30 "$CTR_DIR/containerd.log" >&2
      return 1
    fi
    sleep 0.2
  done
  ctrd_import_busybox
}

# An OCI image layout tarball: one gzip layer (the rootfs), its config, a manifest and an index
# naming it NAME (default $CTR_IMAGE). IMAGE_CONFIG: the image config's "config" object as JSON
# (default: Cmd ["sh"], a PATH, WorkingDir /). tests/cri builds its images with it too.
#   ctrd_make_oci_tar ROOTFS OUT [NAME [IMAGE_CONFIG]]
ctrd_make_oci_tar() {
  local rootfs=$1 out=$2 name=${3:-$CTR_IMAGE} dir
  local image_config=${4:-'{"Cmd": ["sh"], "Env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], "WorkingDir": "/"}'}
  dir=$(mktemp -d "${CTR_DIR:-${TMPDIR:-/tmp}}/oci.XXXXXX")
  mkdir -p "$dir/blobs/sha256"
  tar -C "$rootfs" --numeric-owner -cf "$dir/layer.tar" .
  local diff_id layer layer_size
  diff_id=$(sha256sum "$dir/layer.tar" | cut -d' ' -f1)
  gzip -n -c "$dir/layer.tar" >"$dir/layer.tgz"
  layer=$(sha256sum "$dir/layer.tgz" | cut -d' ' -f1)
  layer_size=$(stat -c %s "$dir/layer.tgz")
  mv "$dir/layer.tgz" "$dir/blobs/sha256/$layer"
  rm "$dir/layer.tar"
  jq -cn --arg d "sha256:$diff_id" --argjson c "$image_config" '{architecture: "amd64", os: "linux",
      config: $c, rootfs: {type: "layers", diff_ids: [$d]}}' >"$dir/config.json"
  local config config_size
  config=$(sha256sum "$dir/config.json" | cut -d' ' -f1)
  config_size=$(stat -c %s "$dir/config.json")
  mv "$dir/config.json" "$dir/blobs/sha256/$config"
  jq -cn --arg c "sha256:$config" --argjson cs "$config_size" --arg l "sha256:$layer" --argjson ls "$layer_size" '{
      schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $c, size: $cs},
      layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest: $l, size: $ls}]}' >"$dir/manifest.json"
  local manifest manifest_size
  manifest=$(sha256sum "$dir/manifest.json" | cut -d' ' -f1)
  manifest_size=$(stat -c %s "$dir/manifest.json")
  mv "$dir/manifest.json" "$dir/blobs/sha256/$manifest"
  jq -cn --arg m "sha256:$manifest" --argjson ms "$manifest_size" --arg name "$name" '{schemaVersion: 2,
      manifests: [{mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $m, size: $ms,
                   platform: {architecture: "amd64", os: "linux"},
                   annotations: {"io.containerd.image.name": $name, "org.opencontainers.image.ref.name": "latest"}}]}' \
    >"$dir/index.json"
  echo '{"imageLayoutVersion": "1.0.0"}' >"$dir/oci-layout"
  tar -C "$dir" -cf "$out" oci-layout index.json blobs
  rm -rf "$dir"
}

ctrd_import_busybox() {
  CTR_BUNDLE=$CTR_DIR/busybox-bundle
  rm -rf "$CTR_BUNDLE"
  env -u CODEMODE "$CM_REPO/rootfs-tools/make-busybox-bundle.sh" "$CTR_BUNDLE" >/dev/null 2>&1 || return 1
  export CTR_BUNDLE
  ctrd_make_oci_tar "$CTR_BUNDLE/rootfs" "$CTR_DIR/busybox-oci.tar"
  cctr images import "$CTR_DIR/busybox-oci.tar" >/dev/null
}

ctrd_stop() {
  [ -n "${CTR_DIR:-}" ] || return 0
  if ctr -a "$CTR_SOCK" version >/dev/null 2>&1; then
    local id
    for id in $(ctr -a "$CTR_SOCK" -n "$CTR_NS" tasks ls -q 2>/dev/null); do
      ctr -a "$CTR_SOCK" -n "$CTR_NS" tasks kill -s KILL "$id" >/dev/null 2>&1 || true
      ctr -a "$CTR_SOCK" -n "$CTR_NS" tasks delete -f "$id" >/dev/null 2>&1 || true
    done
    for id in $(ctr -a "$CTR_SOCK" -n "$CTR_NS" containers ls -q 2>/dev/null); do
      ctr -a "$CTR_SOCK" -n "$CTR_NS" containers delete "$id" >/dev/null 2>&1 || true
    done
  fi
  local pid p
  pid=$(cat "$CTR_DIR/containerd.pid" 2>/dev/null || true)
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    local tries=100
    while kill -0 "$pid" 2>/dev/null && [ $tries -gt 0 ]; do
      sleep 0.1
      tries=$((tries - 1))
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  # Shims started by this containerd name our socket on their command line.
  for p in $(pgrep -f -- "$CTR_SOCK" 2>/dev/null); do
    kill -KILL "$p" 2>/dev/null || true
  done
  local m
  while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done < <(awk -v d="$CTR_DIR/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r)
  # ctr's default cgroup parent is /<namespace>.
  local c
  for c in /sys/fs/cgroup/*/"$CTR_NS" /sys/fs/cgroup/"$CTR_NS"; do
    [ -d "$c" ] || continue
    find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  # The shim keeps the runtime's state under a fixed /run/containerd/runc/<namespace>: only
  # ours, and only if empty.
  rmdir "/run/containerd/runc/$CTR_NS" 2>/dev/null || true
  rm -rf "$CTR_DIR"
  unset CTR_DIR CTR_SOCK
}
