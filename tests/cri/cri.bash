# shellcheck shell=bash
# tests/cri/cri.bash — a private containerd with its CRI plugin on, for tests/cri/run.sh (the
# suite), tests/cri/bench.sh (pod start) and the VM's systemd variant (tests/vm/guest-systemd.sh).
#
#   cri_images WORK             the pause and busybox images as OCI tarballs in WORK/images
#   cri_enter WORK SYSTEMD CMD… run CMD inside a private network and mount namespace with a
#                               containerd started there (its socket: $CRI_SOCK), the images
#                               imported, and everything stopped and unmounted afterwards
#
# What stays private, and why each piece is there:
# - a network namespace of our own: the pods' bridge (CNI) and their veths live in it, and so
#   does the CRI streaming server on 127.0.0.1; the node's network is never touched. The "node"
#   of the test, and so the namespace a hostNetwork pod gets, is this namespace.
# - a mount namespace of our own, so that the production paths can be used as they are on a node:
#   containerd's state is /run/containerd (a tmpfs here; the pods' /dev/shm and resolv.conf come
#   from there, which is what the mcp profile's bind policy sees on a real node), the shims'
#   sockets (/run/containerd/s) and runtime state (/run/containerd/runc) are there too; CNI's
#   cache (/var/lib/cni, not configurable in containerd 1.6) lands on an overlay of /var/lib
#   whose upper layer is in WORK. containerd's root (images, snapshots) is WORK/root.
# - cgroups: the pods' cgroup parent is /cm-test-<run tag>-cri… (tests/run-all.sh's leak check
#   looks for that name).
# The containerd config is the README's Kubernetes section (the block after the marker
# "tests/cri: containerd runtimes"), with the binaries' paths replaced: the README shows what
# is tested.

CM_REPO=${CM_REPO:-$(cd "${BASH_SOURCE[0]%/*}/../.." && pwd)}
: "${CODEMODE:=$CM_REPO/build/codemode}"
CRI_PAUSE_IMAGE=cm.local/pause:1
CRI_BUSYBOX_IMAGE=cm.local/busybox:1
# shellcheck source=tests/containerd/containerd.bash
. "$CM_REPO/tests/containerd/containerd.bash"

cri_log() { echo "tests/cri: $*" >&2; }

# The runtimes block of the README, as TOML, with /usr/local/bin/codemode → $1 (the directory
# holding codemode and the codemode-mcp link).
cri_readme_runtimes() {
  local bindir=$1
  awk '/<!-- tests\/cri: containerd runtimes -->/ {m = 1; next}
       m && /^```toml/ {p = 1; next}
       p && /^```/ {exit}
       p {print}' "$CM_REPO/README.md" | sed "s#/usr/local/bin/#$bindir/#g"
}

cri_images() {
  local work=$1 bundle
  mkdir -p "$work/images" "$work/pause-rootfs"
  cc -static -O2 -Wall -Wextra -Werror -o "$work/pause-rootfs/pause" "$CM_REPO/tests/cri/pause.c" || return 1
  CTR_DIR=$work ctrd_make_oci_tar "$work/pause-rootfs" "$work/images/pause.tar" "$CRI_PAUSE_IMAGE" \
    '{"Entrypoint": ["/pause"], "WorkingDir": "/"}' || return 1
  bundle=$work/busybox-bundle
  rm -rf "$bundle"
  env -u CODEMODE "$CM_REPO/rootfs-tools/make-busybox-bundle.sh" "$bundle" >/dev/null 2>&1 || return 1
  CTR_DIR=$work ctrd_make_oci_tar "$bundle/rootfs" "$work/images/busybox.tar" "$CRI_BUSYBOX_IMAGE" || return 1
  rm -rf "$bundle"
}

# cri_write_config WORK SYSTEMD(true|false)
cri_write_config() {
  local work=$1 systemd=$2 bindir=$work/bin
  mkdir -p "$bindir" "$work/cni" "$work/ipam" "$work/opt"
  # The handlers' binaries as a node has them: codemode, and codemode-mcp, a link to it whose
  # name selects the mcp profile (cli/main.c).
  ln -sfn "$CODEMODE" "$bindir/codemode"
  ln -sfn codemode "$bindir/codemode-mcp"
  {
    cat <<EOF
version = 2
root = "$work/root"
state = "/run/containerd"
[grpc]
  address = "$work/containerd.sock"
[ttrpc]
  address = "$work/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$work/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$CRI_PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  netns_mounts_under_state_dir = true
  stats_collect_period = 1
  # This machine has no CAP_SYS_RESOURCE: the pause container's -998 (and any score below
  # containerd's own) cannot be set, by runc or codemode. containerd then clamps to its own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$work/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    snapshotter = "overlayfs"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      BinaryName = "$(command -v runc)"
      SystemdCgroup = false
EOF
    cri_readme_runtimes "$bindir"
  } | sed "s/SystemdCgroup = false/SystemdCgroup = $systemd/" >"$work/config.toml"
  # One bridge inside the private network namespace, no gateway, no masquerading, addresses
  # from host-local with its data in WORK: containerd wants an eth0 with an address in every
  # pod that is not on the node's network.
  cat >"$work/cni/10-cm-cri.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "cm-cri",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cmcri0",
      "isGateway": false,
      "ipMasq": false,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.213.0.0/24"}]], "dataDir": "$work/ipam"}
    }
  ]
}
EOF
}

# Inside the namespaces: mounts, containerd, images, CMD, teardown. Not called directly.
cri_inside() {
  local work=$1 systemd=$2 rc=0
  shift 2
  set -u
  mount --make-rprivate / || return 1
  ip link set lo up || return 1
  # /run/containerd: production's state path, private (made empty on the host when missing:
  # tests/containerd's shims use it too).
  mount -t tmpfs -o mode=0711 cm-cri-state /run/containerd || return 1
  mkdir -p "$work/varlib/upper" "$work/varlib/work"
  mount -t overlay -o "lowerdir=/var/lib,upperdir=$work/varlib/upper,workdir=$work/varlib/work" cm-cri-varlib /var/lib ||
    return 1
  cri_write_config "$work" "$systemd"
  CRI_SOCK=$work/containerd.sock
  export CRI_SOCK CRI_WORK=$work
  containerd --config "$work/config.toml" --log-level "${CM_CRI_LOG_LEVEL:-info}" >"$work/containerd.log" 2>&1 &
  local pid=$! tries=300
  echo "$pid" >"$work/containerd.pid"
  until ctr -a "$CRI_SOCK" version >/dev/null 2>&1; do
    tries=$((tries - 1))
    if [ $tries -le 0 ] || ! kill -0 "$pid" 2>/dev/null; then
      cri_log "containerd did not come up; its log:"
      tail -30 "$work/containerd.log" >&2
      return 1
    fi
    sleep 0.1
  done
  local t
  for t in "$work"/images/*.tar; do
    ctr -a "$CRI_SOCK" -n k8s.io images import "$t" >/dev/null || { cri_log "ctr images import $t failed"; return 1; }
  done
  "$@" || rc=$?
  cri_stop "$work"
  return $rc
}

# containerd first, then whatever it started that is still running in our mount namespace (the
# shims and their containers: identified by that namespace, never by name).
cri_stop() {
  local work=$1 pid me p
  pid=$(cat "$work/containerd.pid" 2>/dev/null)
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
  me=$(readlink /proc/self/ns/mnt)
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = $$ ] || [ "${p#/proc/}" = "$BASHPID" ] && continue
    [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$me" ] || continue
    cri_log "left running after containerd stopped: ${p#/proc/} $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)"
    echo "${p#/proc/}" >>"$work/leftover.pids"
    kill -KILL "${p#/proc/}" 2>/dev/null
  done
  # The pods' own processes have mount namespaces of their own, but their cgroups are named
  # after this run (cgroupParentFor in lib.mjs): a pod left behind by a failed case, and its
  # shim killed above, leaves them running otherwise.
  local tag=${CM_RUN_TAG:-}
  if [ -n "$tag" ]; then
    for p in /proc/[0-9]*; do
      grep -qE "/cm-test-$tag-cri/|/cmtest$tag[.-]" "$p/cgroup" 2>/dev/null || continue
      cri_log "a pod's process left running: ${p#/proc/} $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)"
      echo "${p#/proc/}" >>"$work/leftover.pids"
      kill -KILL "${p#/proc/}" 2>/dev/null
    done
  fi
  local m
  while read -r m; do
    umount -l "$m" 2>/dev/null
  done < <(awk '{print $5}' /proc/self/mountinfo | grep -E "^($work/|/run/containerd/|/var/lib(/|$))" | sort -r)
  umount -l /var/lib /run/containerd 2>/dev/null
  return 0
}

cri_enter() {
  local work=$1 systemd=$2 made= rc=0
  shift 2
  # The mount point of the private tmpfs; an empty directory made here goes again afterwards.
  if [ ! -d /run/containerd ]; then
    mkdir /run/containerd && made=1
  fi
  unshare --mount --net -- bash -c '
    . "$1/tests/cri/cri.bash"
    work=$2 systemd=$3
    shift 3
    cri_inside "$work" "$systemd" "$@"' cri-ns "$CM_REPO" "$work" "$systemd" "$@" || rc=$?
  [ -z "$made" ] || rmdir /run/containerd 2>/dev/null
  return $rc
}

# cgroups the pods left behind, printed, and removed deepest first (rmdir: only what is empty).
cri_cgroup_leftovers() {
  local tag=$1 top d
  find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d -name "*$tag*" 2>/dev/null | while read -r top; do
    find "$top" -depth -type d 2>/dev/null | while read -r d; do
      echo "$d"
      rmdir "$d" 2>/dev/null
    done
  done
}
