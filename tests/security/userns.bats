#!/usr/bin/env bats
# Container root is never host root under the mcp profile (issue 21 §2), and idmapped mounts for
# every caller: as root, the profile maps each container to a host range of its own (runtime/
# idrange.h), created by that range's first uid (linux/userns.h), with the rootfs and read-only
# binds idmapped (linux/idmap.h). The per-uid budget tests exhaust the container's inotify,
# mqueue and pty budgets and check that host root still gets its own.

load lib

setup_file() {
  sec_setup_file
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CM_REPO/build/codemode")/codemode-run}
  export BUDGET=$BATS_FILE_TMPDIR/budget
  cc -static -O2 -Wall -Wextra -Werror -o "$BUDGET" "$SEC_DIR/userns/budget.c"
}

setup() {
  sec_setup
  cp "$BUDGET" "$BUNDLE/rootfs/bin/budget"
  # Bind sources under /tmp: the profile refuses binds from /dev, where TMPDIR may be.
  HOST_DIR=$(mktemp -d /tmp/cm-userns-host.XXXXXX)
}

teardown() {
  ! mountpoint -q "$TEST_DIR/src/sub" 2>/dev/null || umount "$TEST_DIR/src/sub"
  rm -rf --one-file-system "$HOST_DIR"
  cm_teardown
}

# codemode-run under the mcp profile; its own lines (the profile's report) go to $TEST_DIR/err.
mcprun() {
  timeout --kill-after=5 "$CM_TIMEOUT" "$CODEMODE_RUN" --root "$ROOT" --id "$CID" "$@" 2>"$TEST_DIR/err"
}

# host_id_of PID uid|gid: the host id a container process runs as.
host_id_of() {
  awk -v f="$(tr a-z A-Z <<<"${2:0:1}")${2:1}:" '$1 == f { print $2 }' "/proc/$1/status"
}

@test "mcp as root: container root is an unprivileged host uid of a range the container holds alone" {
  codemode_only mcp-profile
  set_args sh -c 'cat /proc/self/uid_map /proc/self/gid_map; id -u'
  run mcprun "$BUNDLE" </dev/null
  echo "$output" >&3
  [ "$status" -eq 0 ]
  local u g
  read -r _ u _ <<<"${lines[0]}"
  read -r _ g _ <<<"${lines[1]}"
  [ "$u" -ge 65536 ] && [ "$g" -ge 65536 ]
  [[ "${lines[0]}" =~ ^[[:space:]]*0[[:space:]]+$u[[:space:]]+65536$ ]]
  [ "${lines[2]}" = 0 ]
}

@test "mcp as root: seen from the host, init runs as the range's first uid; the range is released at delete" {
  codemode_only mcp-profile
  set_args sleep 30
  cm --profile mcp run --detach -b "$BUNDLE" "$CID" </dev/null
  local pid u
  pid=$(state_field "$CID" pid)
  u=$(host_id_of "$pid" uid)
  [ "$u" -ge 65536 ]
  [ "$(host_id_of "$pid" gid)" -ge 65536 ]
  # Registered: the state directory records its range, the registry names the state directory.
  local slot
  read -r slot _ <"$ROOT/$CID/userns-range"
  [ "$(cat "/run/codemode-userns/$slot")" = "$ROOT/$CID" ]
  cm delete --force "$CID"
  [ ! -e "/run/codemode-userns/$slot" ] || [ "$(cat "/run/codemode-userns/$slot")" != "$ROOT/$CID" ]
}

@test "mcp as root: the rootfs is idmapped (host uid 0 files are the container root's), nothing is chowned" {
  codemode_only mcp-profile
  touch "$BUNDLE/rootfs/etc/owned-by-root"
  local before
  before=$(stat -c '%u %g %Z' "$BUNDLE/rootfs/etc/owned-by-root")
  set_args sh -c 'stat -c "%u %g" /etc/owned-by-root /bin/busybox; ls -ld /root | cut -c1-10; cat /root/x 2>&1 || true'
  run mcprun "$BUNDLE" </dev/null
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "0 0" ]
  [ "${lines[1]}" = "0 0" ]
  [ "$(stat -c '%u %g %Z' "$BUNDLE/rootfs/etc/owned-by-root")" = "$before" ]
}

@test "mcp as root: binds are idmapped: host root's files are the container root's, read-only or writable" {
  codemode_only mcp-profile
  mkdir -p "$HOST_DIR/ro" "$HOST_DIR/rw"
  echo hello >"$HOST_DIR/ro/file"
  set_args sh -c 'stat -c %u /ro/file /rw; touch /rw/made-here && echo wrote; cat /proc/self/uid_map'
  run mcprun --mount "$HOST_DIR/ro:/ro:ro" --mount "$HOST_DIR/rw:/rw:rw" "$BUNDLE" </dev/null
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 0 ]
  [ "${lines[1]}" = 0 ]
  [ "${lines[2]}" = wrote ]
  # As without the user namespace: the container's root writes there as host root...
  [ "$(stat -c %u "$HOST_DIR/rw/made-here")" = 0 ]
}

@test "mcp: no setuid or setgid bit can be set, so a writable idmapped bind cannot plant a setuid-root program" {
  codemode_only mcp-profile
  mkdir -p "$HOST_DIR/rw"
  cp "$BUNDLE/rootfs/bin/busybox" "$HOST_DIR/rw/prog"
  set_args sh -c 'cp /bin/busybox /rw/planted; chmod u+s /rw/planted; echo "chmod $?"; chmod g+s /rw/prog; echo "chmod-g $?";
    /bin/budget "$MARKER" creat-setuid /rw/created; chmod 0700 /rw/prog; echo "plain $?"'
  run mcprun --mount "$HOST_DIR/rw:/rw:rw" "$BUNDLE" </dev/null
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *"chmod 1"* ]] && [[ "$output" == *"chmod-g 1"* ]]
  [[ "$output" == *"creat-setuid: Operation not permitted"* ]] # open(O_CREAT, 04755)
  [[ "$output" == *"plain 0"* ]] # an ordinary chmod still works
  local f
  for f in "$HOST_DIR"/rw/*; do
    [ "$(($(stat -c '0%a' "$f") & 06000))" -eq 0 ] || { echo "$f: $(stat -c %A "$f")" >&2; false; }
  done
  # A caller's own writable idmapped mount is held to the same rule.
  set_cfg '.mounts += [{destination: "/own", type: "bind", source: $s, options: ["rbind", "rw", "idmap"]}]' \
    --arg s "$HOST_DIR/rw"
  set_args sh -c 'touch /own/x && chmod u+s /own/x; echo "own $?"'
  run mcprun "$BUNDLE" </dev/null
  echo "$output" >&3
  [[ "$output" == *"own 1"* ]]
  [ "$(($(stat -c '0%a' "$HOST_DIR/rw/x") & 06000))" -eq 0 ]
}

@test "mcp as root --ephemeral: a writable root through a throwaway upper layer; the rootfs is untouched" {
  codemode_only mcp-profile
  set_args sh -c 'echo hi >/etc/made-here && stat -c "%u %s" /etc/made-here /etc/passwd'
  run mcprun --ephemeral "$BUNDLE" </dev/null
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "0 3" ]
  [ "$(cut -d' ' -f1 <<<"${lines[1]}")" = 0 ]
  [ ! -e "$BUNDLE/rootfs/etc/made-here" ]
}

@test "mcp: a config mapping host uid 0 into its user namespace is refused" {
  codemode_only mcp-profile
  set_cfg '.linux.namespaces += [{type: "user"}] | .linux.uidMappings = [{containerID: 0, hostID: 0, size: 65536}] |
    .linux.gidMappings = [{containerID: 0, hostID: 0, size: 65536}]'
  run mcprun "$BUNDLE" </dev/null
  [ "$status" -eq 125 ]
  grep -q "linux.uidMappings\[0\]: maps host id 0" "$TEST_DIR/err"
}

@test "mcp: concurrent creates get distinct ranges; a range is never handed out while held" {
  codemode_only mcp-profile
  local i pids=() ids=() u seen=""
  set_args sleep 60
  for i in 1 2 3 4 5 6; do
    cp -a "$BUNDLE" "$TEST_DIR/b$i"
    cm --profile mcp create -b "$TEST_DIR/b$i" "$CID-$i" </dev/null >/dev/null 2>&1 &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i"; done
  for i in 1 2 3 4 5 6; do
    u=$(awk '{ print $2 }' "/proc/$(state_field "$CID-$i" pid)/uid_map")
    [ -n "$u" ] && [ "$u" -ge 65536 ]
    [[ " $seen " != *" $u "* ]] || { echo "range $u handed out twice: $seen" >&2; false; }
    seen+=" $u"
  done
  # While they are held, more creates never get one of them.
  for i in 7 8; do
    cp -a "$BUNDLE" "$TEST_DIR/b$i"
    cm --profile mcp create -b "$TEST_DIR/b$i" "$CID-$i" </dev/null >/dev/null 2>&1
    u=$(awk '{ print $2 }' "/proc/$(state_field "$CID-$i" pid)/uid_map")
    [[ " $seen " != *" $u "* ]]
  done
  for i in 1 2 3 4 5 6 7 8; do cm delete --force "$CID-$i"; done
  # Released: no registry entry names these state directories any more.
  ! grep -lsx "$ROOT/$CID-.*" /run/codemode-userns/* >/dev/null
}

@test "mcp: a range whose state directory is gone (a crash) is taken again" {
  codemode_only mcp-profile
  set_args sleep 60
  cm --profile mcp create -b "$BUNDLE" "$CID" </dev/null >/dev/null 2>&1
  local slot pid
  read -r slot _ <"$ROOT/$CID/userns-range"
  pid=$(state_field "$CID" pid)
  # The crash: the container and its state directory vanish without a delete (and its cgroup
  # with them, which the test removes by hand once init is gone).
  kill -9 "$pid"
  while [ -e "/proc/$pid" ]; do sleep 0.05; done
  rm -rf "${ROOT:?}/$CID"
  find /sys/fs/cgroup -depth -type d -name "$CID" -exec rmdir {} + 2>/dev/null || true
  [ -e "/run/codemode-userns/$slot" ]
  # The next allocation that reaches the slot sees it stale and takes it (or skips past it if
  # another create took it meanwhile): either way it no longer names the vanished directory.
  local i
  for i in 1 2 3; do
    cp -a "$BUNDLE" "$TEST_DIR/n$i"
    cm --profile mcp create -b "$TEST_DIR/n$i" "$CID-n$i" </dev/null >/dev/null 2>&1
  done
  [ "$(cat "/run/codemode-userns/$slot" 2>/dev/null)" != "$ROOT/$CID" ]
  for i in 1 2 3; do cm delete --force "$CID-n$i"; done
}

# budget_case KIND: the container takes every instance it may and holds them; then host root
# takes one. Prints the container's line and the host's.
budget_case() {
  local kind=$1 fifo=$TEST_DIR/hold
  mkfifo "$fifo"
  # The fifo keeps the container's stdin open (it holds its instances until EOF).
  "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --timeout 60 "$BUNDLE" -- /bin/budget "$MARKER" "$kind" \
    <"$fifo" >"$TEST_DIR/container.out" 2>&1 3>&- &
  bg_track $!
  exec 7>"$fifo"
  wait_file_content "$TEST_DIR/container.out" "exhausted $kind" 30
  HOST_OUT=$("$BUDGET" host "$kind" 2>&1) || true
  exec 7>&-
  CONTAINER_OUT=$(grep exhausted "$TEST_DIR/container.out")
  echo "# container: $CONTAINER_OUT; $HOST_OUT" >&3
}

@test "budget: the container exhausts its own inotify instances; host root still gets one" {
  codemode_only mcp-profile
  budget_case inotify
  [[ "$CONTAINER_OUT" == "exhausted inotify after "*": Too many open files" ]]
  local n=${CONTAINER_OUT#exhausted inotify after }
  n=${n%%:*}
  # fs.inotify.max_user_instances, counted for the container's uid (not host root's).
  [ "$n" -ge "$(($(cat /proc/sys/fs/inotify/max_user_instances) - 8))" ]
  [ "$HOST_OUT" = "host inotify: ok" ]
}

@test "budget: the container exhausts its own POSIX mqueue bytes; host root still gets a queue" {
  codemode_only mcp-profile
  budget_case mqueue
  [[ "$CONTAINER_OUT" == "exhausted mqueue after "* ]]
  [[ "$CONTAINER_OUT" == *"Too many open files"* || "$CONTAINER_OUT" == *"Cannot allocate memory"* ||
    "$CONTAINER_OUT" == *"No space left"* ]]
  [ "$HOST_OUT" = "host mqueue: ok" ]
}

@test "budget: the container's ptys stop at its devpts max=; host root still gets one" {
  codemode_only mcp-profile
  budget_case ptys
  local max
  max=$("$CODEMODE_RUN" --root "$ROOT" --id "$CID-max" "$BUNDLE" -- sh -c 'grep " /dev/pts " /proc/mounts' </dev/null |
    grep -o 'max=[0-9]*' | cut -d= -f2)
  [ -n "$max" ]
  [[ "$CONTAINER_OUT" == "exhausted ptys after $max: "* ]]
  [ "$HOST_OUT" = "host ptys: ok" ]
}

@test "budget: a budget payload refuses to run outside its test bundle" {
  run "$BUDGET" "$MARKER" inotify </dev/null
  [ "$status" -eq 2 ]
  [[ "$output" == *refusing* ]]
}

# --- idmapped mounts for every caller (runtime-spec 1.2 mounts[].uidMappings/gidMappings) -----

# The config's own user namespace (created by root, as runc does) must reach the bundle: every
# directory above it searchable (bats' run dir is 0700).
searchable_bundle() {
  mkdir -p "$BUNDLE/rootfs/m" "$BUNDLE/rootfs/own" "$BUNDLE/rootfs/same"
  local d=$BUNDLE
  while [ "$d" != / ]; do
    chmod o+x "$d"
    d=$(dirname "$d")
  done
}

@test "features: idmapped mounts are advertised" {
  codemode_only features-set
  run cm features
  [ "$status" -eq 0 ]
  [ "$(jq -r '.linux.mountExtensions.idmap.enabled' <<<"$output")" = true ]
}

@test "idmap: a bind with its own mappings, in a container with a user namespace (runc's semantics)" {
  codemode_only runc11-unsupported
  mkdir -p "$TEST_DIR/src"
  touch "$TEST_DIR/src/root-file" "$TEST_DIR/src/one-file"
  chown 1:1 "$TEST_DIR/src/one-file"
  searchable_bundle
  set_cfg '.linux.namespaces += [{type: "user"}] |
    .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}] |
    .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}] |
    .mounts += [{destination: "/m", type: "bind", source: $s, options: ["rbind"],
      uidMappings: [{containerID: 0, hostID: 100000, size: 65536}],
      gidMappings: [{containerID: 0, hostID: 100000, size: 65536}]}]' --arg s "$TEST_DIR/src"
  set_args sh -c 'stat -c "%u:%g" /m/root-file /m/one-file'
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 0:0 ]
  [ "${lines[1]}" = 1:1 ]
}

@test "idmap: mappings of its own (differing from the container's) and the \"idmap\" option alone" {
  codemode_only runc11-unsupported
  mkdir -p "$TEST_DIR/src"
  touch "$TEST_DIR/src/root-file"
  searchable_bundle
  set_cfg '.linux.namespaces += [{type: "user"}] |
    .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}] |
    .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}] |
    .mounts += [{destination: "/own", type: "bind", source: $s, options: ["rbind"],
      uidMappings: [{containerID: 0, hostID: 101000, size: 1}],
      gidMappings: [{containerID: 0, hostID: 101000, size: 1}]},
      {destination: "/same", type: "bind", source: $s, options: ["rbind", "idmap"]}]' --arg s "$TEST_DIR/src"
  set_args sh -c 'stat -c "%u" /own/root-file /same/root-file'
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 1000 ] # on-disk 0 -> host 101000 -> container 1000
  [ "${lines[1]}" = 0 ]    # the container's own mappings
}

@test "idmap: \"idmap\" maps an rbind's top mount only, \"ridmap\" its submounts too (runc)" {
  codemode_only runc11-unsupported
  mkdir -p "$TEST_DIR/src/sub"
  touch "$TEST_DIR/src/root-file"
  mount -t tmpfs -o size=1m cm-ridmap "$TEST_DIR/src/sub"
  touch "$TEST_DIR/src/sub/sub-file"
  searchable_bundle
  mkdir -p "$BUNDLE/rootfs/r"
  set_cfg '.linux.namespaces += [{type: "user"}] |
    .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}] |
    .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}] |
    .mounts += [{destination: "/m", type: "bind", source: $s, options: ["rbind", "idmap"]},
      {destination: "/r", type: "bind", source: $s, options: ["rbind", "ridmap"]}]' --arg s "$TEST_DIR/src"
  set_args sh -c 'stat -c "%u" /m/root-file /m/sub/sub-file /r/root-file /r/sub/sub-file'
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output" >&3
  [ "$status" -eq 0 ]
  # Host root's files: the container's root through an idmapped mount, unmapped (the overflow
  # uid) through one that is not.
  [ "${lines[0]}" = 0 ]
  [ "${lines[1]}" = "$(cat /proc/sys/kernel/overflowuid)" ]
  [ "${lines[2]}" = 0 ]
  [ "${lines[3]}" = 0 ]
}

@test "idmap: without a user namespace, the container sees the mount's host ids" {
  codemode_only runc11-unsupported
  mkdir -p "$TEST_DIR/src"
  touch "$TEST_DIR/src/root-file"
  set_cfg '.mounts += [{destination: "/m", type: "bind", source: $s, options: ["rbind"],
      uidMappings: [{containerID: 0, hostID: 1234, size: 1}], gidMappings: [{containerID: 0, hostID: 1234, size: 1}]}]' \
    --arg s "$TEST_DIR/src"
  set_args stat -c %u:%g /m/root-file
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$stdout" = 1234:1234 ]
  # And nothing changed on disk.
  [ "$(stat -c %u "$TEST_DIR/src/root-file")" = 0 ]
}

@test "idmap: refused clearly where it cannot be (not a bind, uid without gid mappings, idmap without a user namespace)" {
  codemode_only runc11-unsupported
  set_cfg '.mounts += [{destination: "/t", type: "tmpfs", source: "tmpfs", uidMappings: [{containerID: 0, hostID: 1, size: 1}], gidMappings: [{containerID: 0, hostID: 1, size: 1}]}]'
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *".mounts["*"(/t): idmapped mounts are bind mounts only"* ]]
  set_cfg '.mounts[-1] = {destination: "/t", type: "bind", source: "/tmp", options: ["rbind"], uidMappings: [{containerID: 0, hostID: 1, size: 1}]}'
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"uidMappings and gidMappings go together"* ]]
  set_cfg '.mounts[-1] = {destination: "/t", type: "bind", source: "/tmp", options: ["rbind", "idmap"]}'
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"has no user namespace"* ]]
  [ -z "$(ls -A "$ROOT")" ]
}
