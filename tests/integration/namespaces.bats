#!/usr/bin/env bats
# User namespaces with id maps, time namespaces, joining namespaces by path.

load ../lib/helpers

# userns_bundle: map container 0..65535 to host 100000.., and hand the rootfs to the mapped root,
# as Docker's userns-remap does.
userns_bundle() {
  bundle_add_namespace "$BUNDLE" user
  set_cfg '.linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
           | .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}]'
  chown -R 100000:100000 "$BUNDLE/rootfs"
  # Every directory above the rootfs must be searchable by the mapped root (Docker's
  # /var/lib/docker is 0711 for the same reason); bats' own run dir is 0700.
  local d=$BUNDLE
  while [ "$d" != / ]; do
    chmod o+x "$d"
    d=$(dirname "$d")
  done
}

@test "user namespace: uid_map/gid_map as configured, root inside" {
  userns_bundle
  set_args sh -c 'cat /proc/self/uid_map /proc/self/gid_map; id -u; id -g'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$(echo "${lines[0]}" | tr -s ' ' | sed 's/^ //')" = "0 100000 65536" ]
  [ "$(echo "${lines[1]}" | tr -s ' ' | sed 's/^ //')" = "0 100000 65536" ]
  [ "${lines[2]}" = 0 ]
  [ "${lines[3]}" = 0 ]
}

@test "user namespace: oomScoreAdj reaches init and an exec'd process" {
  # The runtime's processes are non-dumpable (CVE-2019-5736), so their /proc/self files belong to
  # our root, which the namespace's root may not write: the value is set before joining it.
  userns_bundle
  set_cfg '.process.oomScoreAdj = 500'
  set_args sh -c 'cat /proc/self/oom_score_adj; exec sleep 100'
  cm run -d -b "$BUNDLE" "$CID" </dev/null >"$TEST_DIR/out" 2>&1 || { cat "$TEST_DIR/out"; false; }
  for _ in $(seq 50); do grep -qx 500 "$TEST_DIR/out" && break; sleep 0.1; done
  grep -qx 500 "$TEST_DIR/out"
  run cm exec "$CID" cat /proc/self/oom_score_adj
  [ "$status" -eq 0 ]
  [ "$output" = 500 ]
}

@test "user namespace: the process is uid 100000 on the host" {
  userns_bundle
  set_args sleep 1000
  run_cm run --detach -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  local pid
  pid=$(state_field "$CID" pid)
  grep -E '^Uid:\s+100000\s' "/proc/$pid/status"
  grep -E '^Gid:\s+100000\s' "/proc/$pid/status"
  [ "$(readlink "/proc/$pid/ns/user")" != "$(readlink /proc/self/ns/user)" ]
}

@test "user namespace: files owned by the mapped root are root's inside, others are nobody's" {
  userns_bundle
  echo x >"$BUNDLE/rootfs/tmp/mine"
  chown 100000:100000 "$BUNDLE/rootfs/tmp/mine"
  bundle_add_mount "$BUNDLE" "$(jq -n --arg s "$TEST_DIR/hostfile" '{destination: "/hostfile", source: $s, options: ["bind", "ro"]}')"
  echo y >"$TEST_DIR/hostfile"
  set_args sh -c 'stat -c %u /tmp/mine; stat -c %u /hostfile'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 0 ]
  [ "${lines[1]}" = 65534 ]
}

@test "user namespace: a user inside maps through" {
  userns_bundle
  set_cfg '.process.user = {uid: 1000, gid: 1000}'
  set_args sleep 1000
  run_cm run --detach -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  grep -E '^Uid:\s+101000\s' "/proc/$(state_field "$CID" pid)/status"
}

@test "user namespace without mappings is refused naming uidMappings" {
  bundle_add_namespace "$BUNDLE" user
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *[Mm]apping* ]]
}

@test "time namespace: boottime and monotonic offsets shift /proc/uptime and the monotonic clock" {
  codemode_only runc11-unsupported
  [ -e /proc/self/ns/time ] || skip "kernel without time namespaces"
  bundle_add_namespace "$BUNDLE" time
  set_cfg '.linux.timeOffsets = {boottime: {secs: 864000, nanosecs: 0}, monotonic: {secs: 432000, nanosecs: 0}}'
  set_args cat /proc/uptime
  local before after
  before=$(cut -d. -f1 /proc/uptime)
  run cm run -b "$BUNDLE" "$CID"
  after=$(cut -d. -f1 /proc/uptime)
  [ "$status" -eq 0 ]
  local inside=${output%%.*}
  [ "$inside" -ge $((before + 864000)) ]
  [ "$inside" -le $((after + 864000 + 1)) ]
}

@test "timeOffsets without a time namespace are refused" {
  codemode_only runc11-unsupported
  set_cfg '.linux.timeOffsets = {boottime: {secs: 10, nanosecs: 0}}'
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *time* ]]
}

@test "joining an existing network namespace by path" {
  : >"$TEST_DIR/netns"
  unshare --net="$TEST_DIR/netns" true
  mount_track "$TEST_DIR/netns"
  local inode
  inode=$(stat -L -c %i "$TEST_DIR/netns")
  bundle_add_namespace "$BUNDLE" network "$TEST_DIR/netns"
  set_args readlink /proc/self/ns/net
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = "net:[$inode]" ]
}

@test "joining a namespace of a running process by /proc/PID/ns path" {
  unshare --uts sleep 1000 3>&- &
  local holder=$!
  bg_track "$holder"
  sleep 0.2
  local want
  want=$(readlink "/proc/$holder/ns/uts")
  bundle_add_namespace "$BUNDLE" uts "/proc/$holder/ns/uts"
  set_cfg 'del(.hostname)'
  set_args readlink /proc/self/ns/uts
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = "$want" ]
}

@test "a namespace path of the wrong type is refused" {
  : >"$TEST_DIR/netns"
  unshare --net="$TEST_DIR/netns" true
  mount_track "$TEST_DIR/netns"
  # A network namespace given as the ipc namespace.
  bundle_add_namespace "$BUNDLE" ipc "$TEST_DIR/netns"
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *ipc* ]]
  [ -z "$(cm list -q)" ]
}

@test "a namespace path that does not exist is refused naming it" {
  bundle_add_namespace "$BUNDLE" network "$TEST_DIR/no-such-ns"
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *no-such-ns* ]]
}

@test "without a network namespace the container shares the host's" {
  bundle_remove_namespace "$BUNDLE" network
  set_args readlink /proc/self/ns/net
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = "$(readlink /proc/self/ns/net)" ]
}

@test "a cgroup namespace makes the container's cgroup its root" {
  bundle_add_namespace "$BUNDLE" cgroup
  set_args readlink /proc/self/ns/cgroup
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" != "$(readlink /proc/self/ns/cgroup)" ]
}

# runc 1.1.5 on this bundle: the hostname is set in the joined namespace (the holder sees it).
# Issue 14: refused ("needs a new uts namespace").
@test "hostname with a uts namespace joined by path is set there" {
  unshare --uts sleep 1000 3>&- &
  local holder=$!
  bg_track "$holder"
  sleep 0.2
  bundle_add_namespace "$BUNDLE" uts "/proc/$holder/ns/uts"
  set_cfg '.hostname = "cm-joined-uts"'
  set_args hostname
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$stdout" = cm-joined-uts ]
  [ "$(nsenter -t "$holder" -u hostname)" = cm-joined-uts ]
  [ "$(hostname)" != cm-joined-uts ]
}

# runc 1.1.5 on this bundle: inside the joined mount namespace the rootfs is set up and pivoted
# into as usual (the process sees the bundle's rootfs, its /proc and tmpfs mounts). Issue 21: the
# process ran on the host's root file system.
@test "a mount namespace joined by path still gets the full rootfs setup" {
  unshare --mount --propagation private sleep 1000 3>&- &
  local holder=$!
  bg_track "$holder"
  sleep 0.2
  : >"$BUNDLE/rootfs/cm-rootfs-marker"
  bundle_add_namespace "$BUNDLE" mount "/proc/$holder/ns/mnt"
  set_args sh -c 'ls /cm-rootfs-marker && grep -c " / /proc " /proc/self/mountinfo && readlink /proc/self/ns/mnt'
  local before
  before=$(mounts_under "$TEST_DIR")
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = /cm-rootfs-marker ]
  [ "${lines[1]}" -ge 1 ]
  [ "${lines[2]}" = "$(readlink "/proc/$holder/ns/mnt")" ]
  # It all happened in the holder's namespace, none of it in ours.
  [ "$(mounts_under "$TEST_DIR")" = "$before" ]
}

# The runtime-spec: a namespace type not in linux.namespaces is inherited from the runtime. As
# runc 1.1.5 does, the process is in the runtime's mount namespace, chrooted into the rootfs (it
# sees the rootfs's files, not the host's). Issue 14: refused ("a mount namespace is required").
@test "without a mount namespace the container inherits the runtime's, chrooted into the rootfs" {
  codemode_only starts-without-proc
  echo host-side >"$TEST_DIR/host-file"
  echo rootfs-side >"$BUNDLE/rootfs/cm-rootfs-marker"
  bundle_remove_namespace "$BUNDLE" mount
  set_cfg '.mounts = [] | .linux.maskedPaths = [] | .linux.readonlyPaths = [] | .root.readonly = false'
  set_args sh -c 'cat /cm-rootfs-marker; cat "$0" 2>/dev/null || echo no-host-file' "$TEST_DIR/host-file"
  local before
  before=$(md5sum </proc/self/mountinfo)
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = rootfs-side ]
  [ "${lines[1]}" = no-host-file ]
  # In our mount namespace, and nothing mounted in it.
  set_args sleep 1000
  run_cm run -d --pid-file "$TEST_DIR/pid" -b "$BUNDLE" "$CID-2"
  [ "$status" -eq 0 ]
  [ "$(readlink "/proc/$(cat "$TEST_DIR/pid")/ns/mnt")" = "$(readlink /proc/self/ns/mnt)" ]
  [ "$(md5sum </proc/self/mountinfo)" = "$before" ]
}

# runc 1.1.5 on this bundle: "unable to restrict sys entries without a private MNT namespace".
@test "without a mount namespace, maskedPaths and readonlyPaths are refused" {
  bundle_remove_namespace "$BUNDLE" mount
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  [[ $stderr == *"restrict sys entries without a private"* ]]
}

# Mounts there would be made in the runtime's own mount namespace, the host's.
@test "without a mount namespace, mounts are refused and nothing is mounted" {
  codemode_only no-mntns-mounts
  bundle_remove_namespace "$BUNDLE" mount
  set_cfg '.linux.maskedPaths = [] | .linux.readonlyPaths = []'
  local before
  before=$(md5sum </proc/self/mountinfo)
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  [[ $stderr == *".mounts: needs a mount namespace"* ]]
  [[ $stderr == *"the host's initial one"*"unshare -m"* ]]
  [ "$(md5sum </proc/self/mountinfo)" = "$before" ]
}

# issue 28: from a mount namespace of the caller's own, the config's mounts are made there, as
# runc 1.1.5 does (observed: `unshare -m` then runc run); codemode also detaches them at delete.
@test "without a mount namespace, run from a private mount namespace: the mounts are made there" {
  bundle_remove_namespace "$BUNDLE" mount
  set_cfg '.linux.maskedPaths = [] | .linux.readonlyPaths = []'
  set_args sh -c 'test -c /dev/null && test -r /proc/self/status && echo mounted'
  local before
  before=$(md5sum </proc/self/mountinfo)
  cat >"$TEST_DIR/in-ns.sh" <<'SH'
#!/bin/sh
# $1 runtime, $2 root, $3 bundle, $4 id
set -e
mount --make-rprivate /
"$1" --root "$2" run -b "$3" "$4"
echo "left after run: $(grep -c " $3/rootfs" /proc/self/mountinfo || true)"
"$1" --root "$2" run -d -b "$3" "$4-d"
echo "while it exists: $(grep -c " $3/rootfs" /proc/self/mountinfo || true)"
"$1" --root "$2" delete -f "$4-d"
echo "left after delete: $(grep -c " $3/rootfs" /proc/self/mountinfo || true)"
SH
  chmod +x "$TEST_DIR/in-ns.sh"
  run timeout 60 unshare -m "$TEST_DIR/in-ns.sh" "$CODEMODE" "$ROOT" "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = mounted ]
  [[ $output == *"while it exists: "[1-9]* ]]
  if codemode_part inherited-mntns-cleanup; then
    [[ $output == *"left after run: 0"* ]]
    [[ $output == *"left after delete: 0"* ]]
  fi
  # Nothing in our own (the host's) namespace.
  [ "$(md5sum </proc/self/mountinfo)" = "$before" ]
}
