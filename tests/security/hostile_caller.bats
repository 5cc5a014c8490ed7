#!/usr/bin/env bats
# The caller can be hostile too (issue 21): configs and flags that ask an mcp container for more
# than it may have, sent through `codemode --profile mcp`, through `codemode-run` and through a
# real dockerd with the codemode-mcp runtime. Each attempt must be contained, or refused with an
# error that names the mount (destination and type), what is wrong and the fix; the host is left
# untouched. The payloads (/bin/hostile, and shell checks that start with `[ -e /$MARKER ]`) only
# run where the test bundle's marker is; nothing they try changes anything even when it works
# (a knob is opened for writing and closed, TIOCSETD sets the line discipline already there).
#
# Host-side setups that need mounts (a procfs, a tracefs, a loop device's filesystem, a bind alias
# of /etc) are made in a private mount namespace around the runtime (in_private_ns), so the host
# never sees them.

load lib
codemode_only_file mcp-profile

bats_require_minimum_version 1.5.0

setup_file() {
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "${CODEMODE:-$CM_REPO/build/codemode}")/codemode-run}
  sec_setup_file
  export DK_STATE=$BATS_FILE_TMPDIR/dockerd
  export LISTENER=$CM_HELPER_DIR/unix-listener
  [ -x "$LISTENER" ] || cc -std=gnu11 -O2 -Wall -Wextra -o "$LISTENER" "$CM_REPO/tests/helpers/unix-listener.c"
}

setup() {
  sec_setup
  [ -x "$CODEMODE_RUN" ] || {
    echo "$CODEMODE_RUN is not built (run make)" >&2
    return 1
  }
  # Host directories for bind sources: inside the test's own tree.
  HOST=$TEST_DIR/host
  mkdir -p "$HOST"
}

teardown() {
  local l ids
  if [ -n "${DOCKER_HOST:-}" ]; then
    ids=$(docker ps -aq --filter "name=$CID" 2>/dev/null)
    # shellcheck disable=SC2086 # one word per id
    [ -z "$ids" ] || dk rm -f $ids >/dev/null 2>&1 || true
    docker volume ls -q --filter "name=$CID" 2>/dev/null | xargs -r docker volume rm -f >/dev/null 2>&1 || true
  fi
  # Every loop device still attached to this test's image (by its backing file, so one attached
  # in a subshell is found too).
  if [ -e "$TEST_DIR/disk.img" ]; then
    for l in $(losetup -j "$TEST_DIR/disk.img" 2>/dev/null | cut -d: -f1); do losetup -d "$l" 2>/dev/null || true; done
  fi
  cm_teardown
}

teardown_file() {
  if [ -s "$DK_STATE" ]; then
    # shellcheck source=tests/docker/dockerd.bash
    . "$CM_REPO/tests/docker/dockerd.bash"
    DK_DIR=$(cat "$DK_STATE")
    export DK_DIR DOCKER_HOST=unix://$DK_DIR/docker.sock DOCKER_CONFIG=$DK_DIR/config
    dockerd_stop
  fi
}

# cmrun [codemode-run options…] -- CMD…: codemode-run (profile mcp unless PROFILE says otherwise)
# on $BUNDLE; sets status, output, stderr like run_cm. IN_NS="shell commands" runs them first in a
# private mount namespace that the runtime then inherits.
cmrun() {
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    opts+=("$1")
    shift
  done
  shift
  local out=$TEST_DIR/.cmrun.out err=$TEST_DIR/.cmrun.err
  status=0
  if [ -n "${IN_NS:-}" ]; then
    timeout --kill-after=5 60 unshare -m --propagation private sh -c "$IN_NS"' && exec "$@"' sh \
      "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile "${PROFILE:-mcp}" "${opts[@]}" "$BUNDLE" -- "$@" \
      </dev/null >"$out" 2>"$err" 3>&- || status=$?
  else
    timeout --kill-after=5 60 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile "${PROFILE:-mcp}" "${opts[@]}" \
      "$BUNDLE" -- "$@" </dev/null >"$out" 2>"$err" 3>&- || status=$?
  fi
  stdout=$(cat "$out")
  stderr=$(cat "$err")
  output=$(cat "$out" "$err")
  echo "# codemode-run ${opts[*]} -- $* -> $status: $output" >&3
}

# run_mcp: `codemode --profile mcp run` of $BUNDLE, in a private mount namespace prepared by IN_NS
# when given.
run_mcp() {
  if [ -n "${IN_NS:-}" ]; then
    run_cm_ns "$IN_NS" --profile mcp run "$@" -b "$BUNDLE" "$CID"
  else
    run_cm --profile mcp run "$@" -b "$BUNDLE" "$CID"
  fi
  echo "# codemode --profile mcp run $* -> $status: $output" >&3
}

run_cm_ns() { # run_cm_ns SETUP ARGS…: run_cm inside a private mount namespace made by SETUP
  local setup=$1
  shift
  local out=$TEST_DIR/.ns.out err=$TEST_DIR/.ns.err
  status=0
  timeout --kill-after=5 60 unshare -m --propagation private sh -c "$setup"' && exec "$@"' sh \
    "$CODEMODE" --root "$ROOT" "$@" </dev/null >"$out" 2>"$err" 3>&- || status=$?
  stdout=$(cat "$out")
  stderr=$(cat "$err")
  output=$(cat "$out" "$err")
}

# refused_clearly WORD…: a refusal (status 125 for codemode-run, non-zero for codemode) whose
# codemode error names every WORD and says what to do (fix:), and nothing ran.
refused_clearly() {
  [ "$status" -ne 0 ] || {
    echo "not refused: $output" >&2
    return 1
  }
  [[ $stderr == *"codemode"*": "* ]] || {
    echo "no codemode error: $output" >&2
    return 1
  }
  local w
  for w in "$@"; do
    [[ $stderr == *"$w"* ]] || {
      echo "the error does not name '$w': $stderr" >&2
      return 1
    }
  done
  [[ $stdout != *OPENED-FOR-WRITE* && $stdout != *CONNECTED* && $stdout != *READ:* && $stdout != *VIEW-OK* ]]
}

make_loop_fs() { # make_loop_fs: an ext4 image in the test dir on a loop device, in $dev (teardown detaches it)
  truncate -s 32M "$TEST_DIR/disk.img"
  mkfs.ext4 -q -F "$TEST_DIR/disk.img" >/dev/null
  dev=$(losetup -f --show "$TEST_DIR/disk.img")
  [ -b "$dev" ]
}

# --- §1: the mounts allow-list --------------------------------------------------------------

@test "hostile caller: a second procfs (/proc2) is refused, naming the mount, its type and the fix" {
  set_cfg '.mounts += [{destination: "/proc2", type: "proc", source: "proc"}]'
  set_args /bin/hostile "$MARKER" open-write /proc2/sys/kernel/core_pattern
  run_mcp
  refused_clearly "(/proc2, type proc)" "only at /proc" "fix:"
  assert_host_untouched
}

@test "hostile caller: filesystem types outside the allow-list (ext4 on a block device, tracefs, debugfs, securityfs, bpf) are refused" {
  local dev t
  make_loop_fs
  set_args /bin/hostile "$MARKER" open-write /mnt/x
  for t in ext4 tracefs debugfs securityfs bpf devtmpfs ramfs; do
    cp "$BUNDLE/config.json" "$TEST_DIR/config.orig"
    set_cfg '.mounts += [{destination: "/mnt", type: $t, source: (if $t == "ext4" then $dev else $t end)}]' \
      --arg t "$t" --arg dev "$dev"
    run_mcp
    refused_clearly "(/mnt, type $t)" "only bind, tmpfs" "fix:"
    [ "$t" != ext4 ] || [[ $stderr == *"block device"* ]]
    cp "$TEST_DIR/config.orig" "$BUNDLE/config.json"
  done
  # sysfs and devpts only at their places.
  set_cfg '.mounts += [{destination: "/sys2", type: "sysfs", source: "sysfs"}]'
  run_mcp
  refused_clearly "(/sys2, type sysfs)" "only at /sys" "fix:"
  assert_host_untouched
}

@test "hostile caller: what the profile keeps is tightened: devpts gets max=64 ptys, tmpfs size=0 a size, sysfs and cgroup stay read-only" {
  set_cfg '.mounts |= map(if .destination == "/sys" then .options = ["rw"] else . end)
    | .mounts += [{destination: "/big", type: "tmpfs", source: "tmpfs", options: ["size=0"]}]'
  set_args sh -c "[ -e /$MARKER ] && grep -E ' /dev/pts | /big | /sys ' /proc/self/mountinfo"
  run_mcp
  [ "$status" -eq 0 ]
  [[ $stdout == *"/dev/pts "*"max=64"* ]]
  [[ $stdout == *" /big "*"size=65536k"* ]]
  [[ $stdout == *" /sys ro,"* ]]
}

@test "hostile caller: a bind whose source is a procfs is refused: by name, and by what it is behind an innocent name" {
  cmrun --mount /proc:/hp -- /bin/hostile "$MARKER" open-write /hp/sys/kernel/core_pattern
  [ "$status" -eq 125 ]
  refused_clearly "/proc"
  # A procfs mounted at an innocent host path (what a Docker volume of type proc is).
  mkdir -p "$HOST/p"
  IN_NS="mount -t proc proc $HOST/p" cmrun --mount "$HOST/p:/hp" -- /bin/hostile "$MARKER" open-write /hp/sys/kernel/core_pattern
  [ "$status" -eq 125 ]
  refused_clearly "on \"/hp\"" "type bind" "proc filesystem" "fix:"
  # tracefs and sysfs the same way.
  IN_NS="mount -t tracefs tracefs $HOST/p" cmrun --mount "$HOST/p:/hp" -- ls /hp
  refused_clearly "tracefs filesystem"
  IN_NS="mount -t sysfs sysfs $HOST/p" cmrun --mount "$HOST/p:/hp" -- ls /hp
  refused_clearly "sysfs filesystem"
  assert_host_untouched
}

@test "hostile caller: a block device and the whole filesystem on it are refused; a directory inside it is not" {
  local dev
  make_loop_fs
  mkdir -p "$HOST/vol"
  # The device node itself.
  cmrun --mount "$dev:/dev/disk" -- /bin/hostile "$MARKER" open-write /dev/disk
  refused_clearly "$dev"
  # Its filesystem from the top, mounted where a Docker local volume would be.
  IN_NS="mount $dev $HOST/vol && mkdir -p $HOST/vol/data && echo inside >$HOST/vol/data/f" \
    cmrun --mount "$HOST/vol:/v" -- /bin/hostile "$MARKER" open-write /v/x
  refused_clearly "on \"/v\"" "whole filesystem of block device $dev" "fix: bind a directory inside it"
  IN_NS="mount $dev $HOST/vol" cmrun --mount "$HOST/vol/data:/v" -- /bin/hostile "$MARKER" read /v/f
  [ "$status" -eq 0 ]
  [[ $stdout == *"READ: inside"* ]]
  assert_host_untouched
}

@test "hostile caller: overlay layers are judged like bind sources, by name and by what they are" {
  mkdir -p "$HOST/lower" "$HOST/upper" "$HOST/work" "$HOST/alias"
  echo layer >"$HOST/lower/f"
  local ov='.mounts += [{destination: "/o", type: "overlay", source: "overlay", options: $opts}]'
  set_args /bin/hostile "$MARKER" read /o/hostname
  cp "$BUNDLE/config.json" "$TEST_DIR/config.orig"
  set_cfg "$ov" --argjson opts "[\"lowerdir=$HOST/lower:/etc\"]"
  run_mcp
  refused_clearly "(/o, type overlay)" "lowerdir" "/etc"
  # /etc behind an innocent name: a bind alias made on the host side.
  cp "$TEST_DIR/config.orig" "$BUNDLE/config.json"
  set_cfg "$ov" --argjson opts "[\"lowerdir=$HOST/lower:$HOST/alias\"]"
  IN_NS="mount --bind /etc $HOST/alias" run_mcp
  refused_clearly "type overlay" "is the host's /etc" "fix:"
  # A layer of one's own works, and is given to the kernel by fd.
  cp "$TEST_DIR/config.orig" "$BUNDLE/config.json"
  set_cfg "$ov" --argjson opts "[\"lowerdir=$HOST/lower\", \"upperdir=$HOST/upper\", \"workdir=$HOST/work\"]"
  set_args sh -c "[ -e /$MARKER ] && cat /o/f && echo new >/o/g && echo VIEW-OK"
  run_mcp
  [ "$status" -eq 0 ]
  [[ $stdout == *layer*VIEW-OK* ]]
  [ "$(cat "$HOST/upper/g")" = new ]
  assert_host_untouched
}

@test "hostile caller: a directory holding a host socket is refused, even read-only and deep down; the listener is never reached" {
  mkdir -p "$HOST/run/a/b"
  "$LISTENER" "$HOST/run/a/b/svc.sock" 20 >"$TEST_DIR/listener.out" 2>&1 &
  bg_track $!
  wait_file_content "$TEST_DIR/listener.out" LISTENING 5
  cmrun --mount "$HOST/run:/s:ro" -- /bin/hostile "$MARKER" connect /s/a/b/svc.sock
  refused_clearly "on \"/s\"" "holds a socket (/a/b/svc.sock)" "connect(2)" "fix:"
  # The socket itself as the source.
  cmrun --mount "$HOST/run/a/b/svc.sock:/svc.sock" -- /bin/hostile "$MARKER" connect /svc.sock
  refused_clearly "socket"
  ! grep -q CONNECTED "$TEST_DIR/listener.out"
  # The same tree without the socket is fine.
  mkdir -p "$HOST/quiet/a"
  cmrun --mount "$HOST/quiet:/q:ro" -- sh -c "[ -e /$MARKER ] && ls /q"
  [ "$status" -eq 0 ]
}

@test "hostile caller: homes, credentials, /tmp and /var/tmp as a whole, /run are refused; a directory of one's own in /tmp is not" {
  local src
  for src in /tmp /var/tmp /run /run/user "$HOME"; do
    [ -d "$src" ] || continue
    cmrun --mount "$src:/x:ro" -- /bin/hostile "$MARKER" read /x/.codemode-no-such-file
    [ "$status" -eq 125 ]
    refused_clearly "$src"
  done
  local name
  for name in .ssh .gnupg .aws .kube .docker .config; do
    rm -rf "$HOST/proj"
    mkdir -p "$HOST/proj/deep/down/$name"
    echo secret >"$HOST/proj/deep/down/$name/key"
    cmrun --mount "$HOST/proj:/p:ro" -- /bin/hostile "$MARKER" read "/p/deep/down/$name/key"
    refused_clearly "credentials" "$name"
  done
  # Inside a credentials directory.
  cmrun --mount "$HOST/proj/deep/down/.config:/c:ro" -- /bin/hostile "$MARKER" read /c/key
  refused_clearly ".config"
  # The invoking user's home as a whole (here a home of the test's own, by $HOME), by name and by
  # what it is behind a symlink; a project directory inside it is fine, its keys are not.
  mkdir -p "$HOST/home/me/.ssh" "$HOST/home/me/proj"
  echo key >"$HOST/home/me/.ssh/id_ed25519"
  echo code >"$HOST/home/me/proj/main.c"
  HOME=$HOST/home/me cmrun --mount "$HOST/home/me:/h:ro" -- /bin/hostile "$MARKER" read /h/.ssh/id_ed25519
  refused_clearly "home"
  HOME=$HOST/home/me cmrun --mount "$HOST/home:/h:ro" -- /bin/hostile "$MARKER" read /h/me/.ssh/id_ed25519
  refused_clearly "home"
  # A home without keys, behind a bind alias: refused by what it is.
  mkdir -p "$HOST/alias" "$HOST/home/you/proj"
  HOME=$HOST/home/you IN_NS="mount --bind $HOST/home/you $HOST/alias" \
    cmrun --mount "$HOST/alias:/h:ro" -- /bin/hostile "$MARKER" read /h/proj
  refused_clearly "home/you as a whole"
  HOME=$HOST/home/me cmrun --mount "$HOST/home/me/.ssh:/h:ro" -- /bin/hostile "$MARKER" read /h/id_ed25519
  refused_clearly ".ssh"
  HOME=$HOST/home/me cmrun --mount "$HOST/home/me/proj:/p:ro" -- /bin/hostile "$MARKER" read /p/main.c
  [ "$status" -eq 0 ]
  [[ $stdout == *"READ: code"* ]]
  local own
  own=$(mktemp -d /tmp/cm-hostile-own.XXXXXX)
  echo mine >"$own/f"
  cmrun --mount "$own:/o:ro" -- /bin/hostile "$MARKER" read /o/f
  rm -rf "$own"
  [ "$status" -eq 0 ]
  [[ $stdout == *"READ: mine"* ]]
}

@test "hostile caller: sensitive host trees are refused by what they are: a bind alias of /etc, a symlink to /root, an ancestor of /etc" {
  mkdir -p "$HOST/alias"
  IN_NS="mount --bind /etc $HOST/alias" cmrun --mount "$HOST/alias/ssl:/x:ro" -- /bin/hostile "$MARKER" read /x/hostname
  refused_clearly "is inside the host's /etc" "fix:"
  IN_NS="mount --bind /etc $HOST/alias" cmrun --mount "$HOST/alias:/x:ro" -- /bin/hostile "$MARKER" read /x/hostname
  refused_clearly "is the host's /etc"
  ln -s /root "$HOST/innocent"
  cmrun --mount "$HOST/innocent:/x:ro" -- /bin/hostile "$MARKER" read /x/.codemode-no-such-file
  refused_clearly "/root"
  # A file inside /etc behind a symlink.
  ln -s /etc/hostname "$HOST/notes.txt"
  cmrun --mount "$HOST/notes.txt:/notes.txt:ro" -- /bin/hostile "$MARKER" read /notes.txt
  refused_clearly "/etc"
  assert_host_untouched
}

@test "hostile caller: submounts of a bind source stay out (rbind becomes bind): what is under them is what the container sees" {
  mkdir -p "$HOST/src/sub"
  echo underneath >"$HOST/src/sub/f"
  IN_NS="mount -t proc proc $HOST/src/sub" \
    cmrun --mount "$HOST/src:/s:ro" -- sh -c "[ -e /$MARKER ] && cat /s/sub/f && [ ! -e /s/sub/self ] && echo VIEW-OK"
  [ "$status" -eq 0 ]
  [[ $stdout == *underneath*VIEW-OK* ]]
  # ...and what a submount hides on the host is checked too: a socket under a mount point.
  mkdir -p "$HOST/hid/sub"
  "$LISTENER" "$HOST/hid/sub/svc.sock" 20 >"$TEST_DIR/listener.out" 2>&1 &
  bg_track $!
  wait_file_content "$TEST_DIR/listener.out" LISTENING 5
  IN_NS="mount -t tmpfs t $HOST/hid/sub" cmrun --mount "$HOST/hid:/h:ro" -- /bin/hostile "$MARKER" connect /h/sub/svc.sock
  refused_clearly "holds a socket (/sub/svc.sock)"
  ! grep -q CONNECTED "$TEST_DIR/listener.out"
}

@test "hostile caller: root.path must not be a host tree either (/, /etc)" {
  set_cfg '.root.path = "/"'
  set_args /bin/hostile "$MARKER" read /etc/hostname
  run_mcp
  refused_clearly "root.path" "/"
  set_cfg '.root.path = "/etc"'
  run_mcp
  refused_clearly "root.path" "/etc"
}

# issue 28: before, "set propagation of /: Operation not permitted" from deep in init.
@test "hostile caller: a mount namespace joined by path that the container's user namespace cannot own is refused, naming it, its owner and the way out" {
  unshare -m --propagation private sleep 60 </dev/null >/dev/null 2>&1 3>&- &
  local holder=$!
  bg_track "$holder"
  unshare -Um --map-root-user sleep 60 </dev/null >/dev/null 2>&1 3>&- &
  local userns_holder=$!
  bg_track "$userns_holder"
  sleep 0.3
  set_args true
  set_cfg '(.linux.namespaces[] | select(.type == "mount")).path = $p' --arg p "/proc/$holder/ns/mnt"
  run_mcp
  refused_clearly "the mount namespace /proc/$holder/ns/mnt" "user namespace user:[" "the host's" \
    "cannot administer" "Drop the mount namespace's path"
  [[ $stderr != *"set propagation"* ]]
  # Owned by another user namespace than the host's: joining that one is the other way out.
  set_cfg '(.linux.namespaces[] | select(.type == "mount")).path = $p' --arg p "/proc/$userns_holder/ns/mnt"
  run_mcp
  refused_clearly "the mount namespace /proc/$userns_holder/ns/mnt" "user:[$(stat -L -c %i /proc/$userns_holder/ns/user)]" \
    "join the user namespace that owns it"
}

# --- §3: update -------------------------------------------------------------------------------

# limits: "MEMORY PIDS CPU-QUOTA CPU-BURST" of $CID's cgroup, from cgroup v1 files or their v2
# equivalents.
limits() {
  local pid list rel mem='' pids='' quota='' burst=''
  pid=$(state_field "$CID" pid)
  while IFS=: read -r _ list rel; do
    case ",$list," in
      *,memory,*) mem=$(cat "/sys/fs/cgroup/$list$rel/memory.limit_in_bytes" 2>/dev/null) ;;
    esac
    case ",$list," in *,pids,*) pids=$(cat "/sys/fs/cgroup/$list$rel/pids.max" 2>/dev/null) ;; esac
    case ",$list," in *,cpu,*)
      quota=$(cat "/sys/fs/cgroup/$list$rel/cpu.cfs_quota_us" 2>/dev/null)
      burst=$(cat "/sys/fs/cgroup/$list$rel/cpu.cfs_burst_us" 2>/dev/null)
      ;;
    esac
    if [ -z "$list" ] && [ -e "/sys/fs/cgroup$rel/memory.max" ]; then
      mem=$(cat "/sys/fs/cgroup$rel/memory.max")
      pids=$(cat "/sys/fs/cgroup$rel/pids.max")
      quota=$(cut -d' ' -f1 "/sys/fs/cgroup$rel/cpu.max")
      burst=$(cat "/sys/fs/cgroup$rel/cpu.max.burst")
    fi
  done <"/proc/$pid/cgroup"
  echo "$mem $pids $quota $burst"
}

@test "hostile caller: update cannot loosen an mcp container: limits are clamped, raw files and device rules refused, also without --profile" {
  set_args sleep 60
  run_cm --profile mcp create -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  run_cm start "$CID"
  [ "$status" -eq 0 ]
  [ "$(limits)" = "536870912 256 100000 100000" ]
  run_cm --profile mcp update --memory 4g --pids-limit -1 --cpu-quota -1 "$CID"
  [ "$status" -eq 0 ]
  [[ $stderr == *"clamped to the profile"*"memory.limit"* ]]
  [ "$(limits)" = "536870912 256 100000 100000" ]
  # A shorter period alone would raise the share of the same quota. The quota it brings is below
  # the burst of create, which the kernel refuses until the burst is lowered (cgroup/files.c).
  run_cm --profile mcp update --cpu-period 10000 "$CID"
  [ "$status" -eq 0 ]
  [ "$(limits)" = "536870912 256 10000 10000" ]
  # The profile recorded at create applies without --profile too.
  echo '{"memory": {"limit": -1}, "pids": {"limit": 100000}}' >"$TEST_DIR/res.json"
  run_cm update --resources "$TEST_DIR/res.json" "$CID"
  [ "$status" -eq 0 ]
  [ "$(limits)" = "536870912 256 10000 10000" ]
  # A lower limit is kept.
  run_cm update --memory 128m --pids-limit 10 "$CID"
  [ "$status" -eq 0 ]
  [ "$(limits)" = "134217728 10 10000 10000" ]
  echo '{"unified": {"memory.max": "max"}}' >"$TEST_DIR/res.json"
  run_cm update --resources "$TEST_DIR/res.json" "$CID"
  refused_clearly "profile mcp" "unified" "fix:"
  echo '{"devices": [{"allow": true, "access": "rwm"}]}' >"$TEST_DIR/res.json"
  run_cm update --resources "$TEST_DIR/res.json" "$CID"
  refused_clearly "profile mcp" "devices"
  run_cm update --memory-swap -1 "$CID"
  refused_clearly "memory.swap" "fix:"
  [ "$(limits)" = "134217728 10 10000 10000" ]
  # A burst above its quota is lowered to it (the period is the profile's again: given with
  # the quota, as at create).
  echo '{"cpu": {"quota": 5000, "burst": 1000000}}' >"$TEST_DIR/res.json"
  run_cm update --resources "$TEST_DIR/res.json" "$CID"
  [ "$status" -eq 0 ]
  [[ $stderr == *"cpu.burst: 1000000 -> 5000"* ]]
  [ "$(limits)" = "134217728 10 5000 5000" ]
}

@test "hostile caller: linux.resources.unified cannot set the limits behind the profile's back at create" {
  set_cfg '.linux.resources.unified = {"pids.max": "max"}'
  run_cm --profile mcp policy explain -b "$BUNDLE"
  [ "$status" -eq 0 ]
  [[ $stdout == *"linux.resources.unified: pids.max=max removed"* ]]
}

# --- §4: terminal and audit -------------------------------------------------------------------

@test "hostile caller: TIOCSETD on the caller's terminal is refused by seccomp under mcp (ENOTTY; allowed without the profile)" {
  command -v script >/dev/null || skip "script(1) is not installed (bsdutils)"
  local cmd="'$CODEMODE_RUN' --root '$ROOT' --id '$CID' --profile mcp '$BUNDLE' -- /bin/hostile '$MARKER' tiocsetd"
  run script -qec "$cmd" /dev/null
  echo "# mcp: $output" >&3
  [[ $output == *"refused: Inappropriate ioctl for device"* ]]
  [[ $output != *TIOCSETD-ALLOWED* ]]
  cmd="'$CODEMODE_RUN' --root '$ROOT' --id '$CID-d' --profile default '$BUNDLE' -- /bin/hostile '$MARKER' tiocsetd"
  run script -qec "$cmd" /dev/null
  echo "# default: $output" >&3
  [[ $output == *TIOCSETD-ALLOWED* ]]
}

@test "hostile caller: an mcp server cannot choose its audit login uid, neither as init nor exec'd" {
  [ -e /proc/self/loginuid ] || skip "no audit login uids in this kernel"
  cmrun -- /bin/hostile "$MARKER" loginuid 1000
  [ "$status" -eq 0 ]
  [[ $stdout == *"refused: Operation not permitted"* ]]
  [[ $stdout != *"loginuid 1000"* ]]
  set_args sleep 60
  run_cm --profile mcp create -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  run_cm start "$CID"
  run_cm exec "$CID" /bin/hostile "$MARKER" loginuid 1000
  [ "$status" -eq 0 ]
  [[ $stdout == *"refused: Operation not permitted"* ]]
  [[ $stdout != *"loginuid 1000"* ]]
}

# --- §5: --no-pivot ---------------------------------------------------------------------------

@test "hostile caller: --no-pivot leaves no fresh procfs to mount (a user + pid namespace made inside), as with pivot_root" {
  [ -e /proc/self/ns/user ] || skip "no user namespaces"
  # An unprivileged process that makes itself root of a new user and pid namespace: the kernel
  # lets it mount a procfs only if a full one is visible in its mount namespace.
  set_cfg '.root.readonly = false | .process.user = {uid: 1000, gid: 1000} | del(.linux.seccomp)'
  set_args sh -c "[ -e /$MARKER ] && unshare -Urmpf sh -c 'mount -t tmpfs t /tmp && mkdir /tmp/p && mount -t proc proc /tmp/p && echo FRESH-PROC; mount -t sysfs s /tmp/p && echo FRESH-SYSFS; echo done'"
  local np
  for np in "" --no-pivot; do
    run_cm run $np -b "$BUNDLE" "$CID"
    echo "# run $np -> $status: $output" >&3
    [[ $stdout == *done* ]]
    [[ $stdout != *FRESH-PROC* ]]
    [[ $stdout != *FRESH-SYSFS* ]]
  done
  # The host's /proc is still there, for the host.
  [ -r /proc/self/status ]
}

# --- through Docker: codemode-mcp (runtimeArgs ["--profile=mcp"]) -------------------------------

# need_dockerd: the private dockerd of this file (tests/docker/dockerd.bash), started by the first
# Docker test and stopped in teardown_file. Missing packages skip the test, and fail it under CI.
need_dockerd() {
  # shellcheck source=tests/docker/dockerd.bash
  . "$CM_REPO/tests/docker/dockerd.bash"
  if ! command -v dockerd >/dev/null || ! command -v containerd >/dev/null || ! command -v docker >/dev/null; then
    if [ "${CI:-}" = true ]; then
      echo "dockerd, containerd or docker is not installed (tests/docker/deps.sh installs them)" >&2
      return 1
    fi
    skip "dockerd, containerd or docker is not installed (tests/docker/deps.sh installs them)"
  fi
  if [ ! -s "$DK_STATE" ]; then
    # Short path: containerd's sockets live under the exec root (108-byte limit).
    local d
    d=$(mktemp -d /tmp/cm-hdk.XXXXXX)
    echo "$d" >"$DK_STATE"
    dockerd_start "$d" >&3 2>&1 || return 1
  fi
  DK_DIR=$(cat "$DK_STATE")
  export DK_DIR DOCKER_HOST=unix://$DK_DIR/docker.sock DOCKER_CONFIG=$DK_DIR/config
}

# drun_mcp ARGS…: docker run --rm under codemode-mcp; sets status, output (stdout+stderr), stderr.
drun_mcp() {
  status=0
  dk run --rm --runtime=codemode-mcp --network none "$@" >"$TEST_DIR/dk.out" 2>"$TEST_DIR/dk.err" </dev/null 3>&- ||
    status=$?
  stdout=$(cat "$TEST_DIR/dk.out")
  stderr=$(cat "$TEST_DIR/dk.err")
  output=$(cat "$TEST_DIR/dk.out" "$TEST_DIR/dk.err")
  echo "# docker run --runtime=codemode-mcp $* -> $status: $output" >&3
}

@test "hostile caller, Docker: a volume of type proc and a volume on a block device are refused; a plain volume works" {
  need_dockerd
  dk volume create --driver local --opt type=proc --opt device=proc "$CID-proc" >/dev/null
  drun_mcp -v "$CID-proc:/hp" cm-busybox sh -c "cat /hp/sys/kernel/core_pattern && echo VIEW-OK"
  [ "$status" -ne 0 ]
  [[ $stderr == *"proc filesystem"* ]]
  [[ $stdout != *VIEW-OK* ]]
  local dev
  make_loop_fs
  dk volume create --driver local --opt type=ext4 --opt device="$dev" "$CID-disk" >/dev/null
  drun_mcp -v "$CID-disk:/disk" cm-busybox sh -c "ls /disk && echo VIEW-OK"
  [ "$status" -ne 0 ]
  [[ $stderr == *"whole filesystem of block device $dev"* ]]
  [[ $stdout != *VIEW-OK* ]]
  # A directory holding a host socket, as -v.
  mkdir -p "$HOST/run"
  "$LISTENER" "$HOST/run/svc.sock" 30 >"$TEST_DIR/listener.out" 2>&1 &
  bg_track $!
  wait_file_content "$TEST_DIR/listener.out" LISTENING 5
  drun_mcp -v "$HOST/run:/s:ro" cm-busybox sh -c "ls /s && echo VIEW-OK"
  [ "$status" -ne 0 ]
  [[ $stderr == *"holds a socket"* ]]
  ! grep -q CONNECTED "$TEST_DIR/listener.out"
  # The ordinary case still works: a named volume, Docker's /dev/shm, /etc/hosts and friends.
  drun_mcp -v "$CID-plain:/data" cm-busybox sh -c 'echo kept >/data/f && cat /data/f && cat /etc/hostname >/dev/null && echo VIEW-OK'
  [ "$status" -eq 0 ]
  [[ $stdout == *kept*VIEW-OK* ]]
}

@test "hostile caller, Docker: docker update cannot loosen a codemode-mcp container" {
  need_dockerd
  dk run -d --runtime=codemode-mcp --network none --name "$CID-u" cm-busybox sleep 120 >/dev/null
  local pid
  pid=$(docker inspect -f '{{.State.Pid}}' "$CID-u")
  dk update --memory 4g --memory-swap 4g --pids-limit -1 --cpus 2 "$CID-u" >"$TEST_DIR/upd.out" 2>&1 || {
    cat "$TEST_DIR/upd.out" >&2
    return 1
  }
  local list rel mem='' pids='' quota=''
  while IFS=: read -r _ list rel; do
    case ",$list," in *,memory,*) mem=$(cat "/sys/fs/cgroup/$list$rel/memory.limit_in_bytes") ;; esac
    case ",$list," in *,pids,*) pids=$(cat "/sys/fs/cgroup/$list$rel/pids.max") ;; esac
    case ",$list," in *,cpu,*) quota=$(cat "/sys/fs/cgroup/$list$rel/cpu.cfs_quota_us") ;; esac
    if [ -z "$list" ] && [ -e "/sys/fs/cgroup$rel/memory.max" ]; then
      mem=$(cat "/sys/fs/cgroup$rel/memory.max")
      pids=$(cat "/sys/fs/cgroup$rel/pids.max")
      quota=$(cut -d' ' -f1 "/sys/fs/cgroup$rel/cpu.max")
    fi
  done <"/proc/$pid/cgroup"
  echo "# after docker update: memory $mem pids $pids quota $quota" >&3
  [ "$mem" = 536870912 ]
  [ "$pids" = 256 ]
  [ "$quota" -le 100000 ] && [ "$quota" -gt 0 ]
}
