# shellcheck shell=bash
# shellcheck disable=SC2016 # jq filters are single-quoted on purpose: $name is a jq variable
# Helpers shared by the rootfs-tools scripts and the test suites.
# Source it: `. rootfs-tools/lib.sh`. Every function works on a bundle directory (the one holding
# config.json) and edits config.json in place with jq.

# Print an error and exit (only when sourced by a script; tests use their own failure paths).
rt_die() {
  echo "${0##*/}: $*" >&2
  exit 1
}

# Install Debian packages that are missing (by package name). Quiet when everything is present.
# Needs root and apt-get; never prompts (DEBIAN_FRONTEND=noninteractive).
rt_ensure_packages() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  command -v apt-get >/dev/null || rt_die "missing packages (${missing[*]}) and no apt-get to install them"
  [ "$(id -u)" -eq 0 ] || rt_die "missing packages (${missing[*]}); run as root to install them"
  echo "${0##*/}: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  # Update the index once per process: a fresh machine has an empty one.
  if [ -z "${RT_APT_UPDATED:-}" ]; then
    apt-get update -qq >&2 || rt_die "apt-get update failed"
    RT_APT_UPDATED=1
  fi
  apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >&2 ||
    rt_die "apt-get install ${missing[*]} failed"
}

rt_need_jq() {
  command -v jq >/dev/null || rt_ensure_packages jq
}

# bundle_jq DIR 'jq-expression' [jq options...]: rewrite DIR/config.json through a jq filter.
# Options (--arg N V, --argjson N J) go before the filter, so values starting with '-' are safe.
bundle_jq() {
  local dir=$1 expr=$2 tmp
  shift 2
  rt_need_jq
  [ -f "$dir/config.json" ] || { echo "bundle_jq: $dir/config.json: no such file" >&2; return 1; }
  tmp=$(mktemp "$dir/.config.json.XXXXXX") || return 1
  # Write to a temp file and rename, so a failing filter never leaves a truncated config.
  if jq "$@" "$expr" <"$dir/config.json" >"$tmp"; then
    mv -f "$tmp" "$dir/config.json"
  else
    rm -f "$tmp"
    echo "bundle_jq: jq filter failed: $expr" >&2
    return 1
  fi
}

# bundle_set_args DIR cmd [args...]: set process.args.
bundle_set_args() {
  local dir=$1 i=0 opts=() expr='['
  shift
  [ $# -gt 0 ] || { echo "bundle_set_args: no command" >&2; return 1; }
  for a in "$@"; do
    opts+=(--arg "a$i" "$a")
    expr+="\$a$i,"
    i=$((i + 1))
  done
  bundle_jq "$dir" ".process.args = ${expr%,}]" "${opts[@]}"
}

# bundle_set_terminal DIR true|false
bundle_set_terminal() {
  case $2 in
    true | false) bundle_jq "$1" ".process.terminal = $2" ;;
    *) echo "bundle_set_terminal: want true or false, got '$2'" >&2; return 1 ;;
  esac
}

# bundle_set_env DIR NAME=VALUE...: add or replace variables in process.env.
bundle_set_env() {
  local dir=$1 kv
  shift
  for kv in "$@"; do
    bundle_jq "$dir" '.process.env = ([(.process.env // [])[] | select(startswith($name + "=") | not)] + [$kv])' \
      --arg name "${kv%%=*}" --arg kv "$kv" || return 1
  done
}

# bundle_set_hostname DIR NAME
bundle_set_hostname() {
  bundle_jq "$1" '.hostname = $h' --arg h "$2"
}

# bundle_add_namespace DIR TYPE [PATH]: add (or replace) a linux.namespaces entry.
bundle_add_namespace() {
  local dir=$1 type=$2 path=${3:-}
  if [ -n "$path" ]; then
    bundle_jq "$dir" '.linux.namespaces = ([.linux.namespaces[] | select(.type != $t)] + [{type: $t, path: $p}])' \
      --arg t "$type" --arg p "$path"
  else
    bundle_jq "$dir" '.linux.namespaces = ([.linux.namespaces[] | select(.type != $t)] + [{type: $t}])' \
      --arg t "$type"
  fi
}

# bundle_remove_namespace DIR TYPE
bundle_remove_namespace() {
  bundle_jq "$1" '.linux.namespaces = [.linux.namespaces[] | select(.type != $t)]' --arg t "$2"
}

# bundle_remove_mount DIR DESTINATION
bundle_remove_mount() {
  bundle_jq "$1" '.mounts = [.mounts[] | select(.destination != $d)]' --arg d "$2"
}

# bundle_add_mount DIR 'json-object'
bundle_add_mount() {
  bundle_jq "$1" '.mounts += [$m]' --argjson m "$2"
}

# rt_write_default_config FILE: the config.json `codemode spec` writes, embedded here so bundles can
# be made before codemode is built. Same shape as `runc spec`: an interactive `sh` on a terminal.
rt_write_default_config() {
  cat >"$1" <<'JSON'
{
  "ociVersion": "1.2.0",
  "process": {
    "terminal": true,
    "user": { "uid": 0, "gid": 0 },
    "args": [ "sh" ],
    "env": [
      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      "TERM=xterm"
    ],
    "cwd": "/",
    "capabilities": {
      "bounding": [ "CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE" ],
      "effective": [ "CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE" ],
      "permitted": [ "CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE" ],
      "ambient": [ "CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE" ]
    },
    "rlimits": [ { "type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024 } ],
    "noNewPrivileges": true
  },
  "root": { "path": "rootfs", "readonly": true },
  "hostname": "codemode",
  "mounts": [
    { "destination": "/proc", "type": "proc", "source": "proc" },
    { "destination": "/dev", "type": "tmpfs", "source": "tmpfs",
      "options": [ "nosuid", "strictatime", "mode=755", "size=65536k" ] },
    { "destination": "/dev/pts", "type": "devpts", "source": "devpts",
      "options": [ "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5" ] },
    { "destination": "/dev/shm", "type": "tmpfs", "source": "shm",
      "options": [ "nosuid", "noexec", "nodev", "mode=1777", "size=65536k" ] },
    { "destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
      "options": [ "nosuid", "noexec", "nodev" ] },
    { "destination": "/sys", "type": "sysfs", "source": "sysfs",
      "options": [ "nosuid", "noexec", "nodev", "ro" ] },
    { "destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
      "options": [ "nosuid", "noexec", "nodev", "relatime", "ro" ] }
  ],
  "linux": {
    "resources": { "devices": [ { "allow": false, "access": "rwm" } ] },
    "namespaces": [
      { "type": "pid" }, { "type": "network" }, { "type": "ipc" }, { "type": "uts" }, { "type": "mount" }
    ],
    "maskedPaths": [
      "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
      "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi",
      "/sys/devices/virtual/powercap"
    ],
    "readonlyPaths": [
      "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"
    ]
  }
}
JSON
}

# rt_write_config DIR: config.json from `$CODEMODE spec` when CODEMODE names a binary, else the
# embedded default. Refuses to overwrite an existing config.json.
rt_write_config() {
  local dir=$1
  [ -e "$dir/config.json" ] && { echo "$dir/config.json exists; not overwriting" >&2; return 0; }
  if [ -n "${CODEMODE:-}" ]; then
    [ -x "$CODEMODE" ] || rt_die "CODEMODE=$CODEMODE is not an executable"
    "$CODEMODE" spec -b "$dir" || rt_die "$CODEMODE spec -b $dir failed"
  else
    rt_write_default_config "$dir/config.json"
  fi
}

# rt_minimal_etc ROOTFS: passwd/group with root, nobody and an unprivileged user 1000.
rt_minimal_etc() {
  local r=$1
  mkdir -p "$r/etc"
  cat >"$r/etc/passwd" <<'EOF2'
root:x:0:0:root:/root:/bin/sh
user:x:1000:1000:user:/home/user:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF2
  cat >"$r/etc/group" <<'EOF2'
root:x:0:
tty:x:5:
user:x:1000:
nogroup:x:65534:
EOF2
  [ -e "$r/etc/hostname" ] || echo codemode >"$r/etc/hostname"
  [ -e "$r/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\tlocalhost\n' >"$r/etc/hosts"
  [ -e "$r/etc/resolv.conf" ] || : >"$r/etc/resolv.conf"
  mkdir -p "$r/root" "$r/home/user"
  # Not root: no chown. Every file is then the caller's, which a rootless container (and the
  # mcp profile's idmapped rootfs) shows as its root's: /home/user belongs to root there.
  if [ "$(id -u)" -eq 0 ]; then chown 1000:1000 "$r/home/user"; fi
  chmod 0700 "$r/root"
}

# rt_skeleton_dirs ROOTFS: the empty mount points a container needs.
rt_skeleton_dirs() {
  local r=$1
  mkdir -p "$r/proc" "$r/sys" "$r/dev" "$r/tmp" "$r/bin" "$r/sbin" "$r/usr/bin" "$r/usr/sbin" \
    "$r/etc" "$r/var" "$r/run"
  chmod 1777 "$r/tmp"
}
