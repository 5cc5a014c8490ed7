# shellcheck shell=bash
# A private dockerd for the Docker suite: its own data root, exec root, pid file and socket under
# $DK_DIR, no iptables, no bridge, codemode registered in a generated daemon.json three times
# ("codemode" plainly, "codemode-args" with runtimeArgs, "codemode-mcp" with --profile=mcp), and a
# busybox image imported as cm-busybox. Its trust key goes to $DK_DIR too, not /etc/docker. Everything it makes (mounts, cgroups, netns, processes, files) goes away in
# dockerd_stop.
#
#   dockerd_start DIR   → exports DOCKER_HOST, DOCKER_CONFIG, DK_DIR
#   dockerd_stop
#   dk ARGS…            docker against that daemon (with a timeout)
#   dockerd_setup_file PREFIX, dockerd_teardown_file, dockerd_case_setup, dockerd_case_teardown
#                       the setup and teardown of a bats file and of its cases (below)

CM_REPO=${CM_REPO:-$(cd "${BASH_SOURCE[0]%/*}/../.." && pwd)}
: "${CODEMODE:=$CM_REPO/build/codemode}"
DK_TIMEOUT=${DK_TIMEOUT:-120}
# The runtimeArgs of the second registration: global flags, passed by the shim to every call.
DK_RUNTIME_ARGS=${DK_RUNTIME_ARGS:-'["--debug"]'}
# Extra dockerd flags, one word each (tests/vm/guest-criu.sh: --experimental, which Docker 20.10's
# checkpoint calls need).
DK_DAEMON_ARGS=${DK_DAEMON_ARGS:-}

dk() {
  timeout --kill-after=5 "$DK_TIMEOUT" docker "$@"
}

dockerd_install() {
  command -v dockerd >/dev/null && command -v containerd >/dev/null && return 0
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker.io containerd >&2
}

dockerd_start() {
  DK_DIR=$1
  mkdir -p "$DK_DIR"/{data,exec,config}
  export DK_DIR
  export DOCKER_HOST=unix://$DK_DIR/docker.sock
  export DOCKER_CONFIG=$DK_DIR/config
  jq -n --arg cm "$CODEMODE" --argjson args "$DK_RUNTIME_ARGS" --arg key "$DK_DIR/key.json" '{
      "deprecated-key-path": $key,
      runtimes: {codemode: {path: $cm}, "codemode-args": {path: $cm, runtimeArgs: $args},
                 "codemode-mcp": {path: $cm, runtimeArgs: ["--profile=mcp"]}},
      "storage-driver": "overlay2",
      "log-driver": "json-file"
    }' >"$DK_DIR/daemon.json"
  # shellcheck disable=SC2086 # DK_DAEMON_ARGS: one flag per word
  dockerd --config-file "$DK_DIR/daemon.json" --data-root "$DK_DIR/data" --exec-root "$DK_DIR/exec" \
    --pidfile "$DK_DIR/docker.pid" -H "$DOCKER_HOST" --iptables=false --ip6tables=false \
    --bridge=none --userland-proxy=false $DK_DAEMON_ARGS >"$DK_DIR/dockerd.log" 2>&1 &
  echo $! >"$DK_DIR/dockerd.launcher.pid"
  local tries=300
  until docker version >/dev/null 2>&1; do
    tries=$((tries - 1))
    if [ $tries -le 0 ] || ! kill -0 "$(cat "$DK_DIR/dockerd.launcher.pid")" 2>/dev/null; then
      echo "dockerd did not come up; its log:" >&2
      tail -30 "$DK_DIR/dockerd.log" >&2
      return 1
    fi
    sleep 0.2
  done
  dockerd_import_busybox
}

dockerd_import_busybox() {
  dk image inspect cm-busybox >/dev/null 2>&1 && return 0
  local b=$DK_DIR/busybox-bundle
  rm -rf "$b"
  env -u CODEMODE "$CM_REPO/rootfs-tools/make-busybox-bundle.sh" "$b" >/dev/null 2>&1 || return 1
  tar -C "$b/rootfs" -c . | dk import -c 'CMD ["sh"]' -c 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' - cm-busybox >/dev/null
  rm -rf "$b"
}

# Stop every container, then dockerd (which stops its containerd), then remove what is left:
# mounts under $DK_DIR, the containers' cgroups, the state dirs.
dockerd_stop() {
  [ -n "${DK_DIR:-}" ] || return 0
  if docker version >/dev/null 2>&1; then
    local ids
    ids=$(docker ps -aq 2>/dev/null)
    # shellcheck disable=SC2086 # one word per id
    [ -z "$ids" ] || dk rm -f $ids >/dev/null 2>&1 || true
  fi
  local pid
  pid=$(cat "$DK_DIR/docker.pid" 2>/dev/null || cat "$DK_DIR/dockerd.launcher.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    local tries=150
    while kill -0 "$pid" 2>/dev/null && [ $tries -gt 0 ]; do
      sleep 0.2
      tries=$((tries - 1))
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  # Shims and containerd started by this dockerd carry our exec root on their command line.
  local p
  for p in $(pgrep -f -- "$DK_DIR/" 2>/dev/null); do
    kill -KILL "$p" 2>/dev/null || true
  done
  # Mounts: deepest first.
  local m
  while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done < <(awk -v d="$DK_DIR/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r)
  # Docker's cgroup parent (/docker) and anything a container left in it.
  local c
  for c in /sys/fs/cgroup/*/docker /sys/fs/cgroup/unified/docker /sys/fs/cgroup/docker; do
    [ -d "$c" ] || continue
    find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  # The shim keeps the runtime's state under a fixed /run/containerd/runc/<namespace> (moby for
  # dockerd): remove it only if empty.
  rmdir /run/containerd/runc/moby 2>/dev/null || true
  rm -rf "$DK_DIR"
  unset DOCKER_HOST DOCKER_CONFIG DK_DIR
}

# The setup_file and teardown_file of a bats file with a private dockerd of its own (docker.bats,
# userns.bats). DIR_PREFIX names its directory under /tmp: short, since containerd's sockets live
# under the exec root (108-byte limit). Every case removes its containers, so teardown fails on
# any container left.
dockerd_setup_file() {
  [ "$(id -u)" -eq 0 ] || skip "needs root"
  [ -x "$CODEMODE" ] || skip "no codemode binary at $CODEMODE"
  dockerd_install || skip "docker.io cannot be installed here"
  DK_DIR=$(mktemp -d "/tmp/$1.XXXXXX")
  dockerd_start "$DK_DIR"
  export DK_DIR DOCKER_HOST DOCKER_CONFIG
}

dockerd_teardown_file() {
  local left=
  if [ -n "${DK_DIR:-}" ]; then
    left=$(docker ps -aq 2>/dev/null)
    dockerd_stop
  fi
  [ -z "$left" ] || {
    echo "containers left behind: $left" >&2
    return 1
  }
}

# The setup and teardown of a case: $HOST_DIR (its bind sources, seccomp profiles) under $DK_DIR;
# at the end, the daemon's containers (`docker ps -aq ARGS…`: a --filter narrows it to the
# case's own) removed, and $HOST_DIR.
dockerd_case_setup() {
  HOST_DIR=$(mktemp -d "$DK_DIR/case.XXXXXX")
}

dockerd_case_teardown() {
  local ids
  ids=$(docker ps -aq "$@" 2>/dev/null)
  # shellcheck disable=SC2086 # one word per id
  [ -z "$ids" ] || dk rm -f $ids >/dev/null 2>&1 || true
  rm -rf "$HOST_DIR"
}
