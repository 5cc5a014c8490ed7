#!/usr/bin/env bats
# mounts[] of every type, linux.devices, rootfsPropagation.

load ../lib/helpers

# mount_line DEST: the container's /proc/self/mounts line for DEST (run inside).
mounts_of() {
  set_args sh -c "grep ' $1 ' /proc/self/mounts"
  run cm run -b "$BUNDLE" "$CID"
}

@test "a read-only bind mount shows the host dir and refuses writes" {
  mkdir "$TEST_DIR/data"
  echo host-data >"$TEST_DIR/data/file"
  bundle_add_mount "$BUNDLE" "$(jq -n --arg s "$TEST_DIR/data" '{destination: "/data", type: "bind", source: $s, options: ["rbind", "ro"]}')"
  set_args sh -c 'cat /data/file; touch /data/new 2>/dev/null && echo wrote || echo refused'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = host-data ]
  [ "${lines[1]}" = refused ]
  [ ! -e "$TEST_DIR/data/new" ]
}

@test "a read-write bind mount writes through to the host" {
  mkdir "$TEST_DIR/data"
  bundle_add_mount "$BUNDLE" "$(jq -n --arg s "$TEST_DIR/data" '{destination: "/data", type: "none", source: $s, options: ["bind"]}')"
  set_args sh -c 'echo from-container >/data/out'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$(cat "$TEST_DIR/data/out")" = from-container ]
}

@test "rro: a recursive bind is read-only in its submounts too" {
  mkdir -p "$TEST_DIR/data/sub"
  mount -t tmpfs -o size=1m cm-test-rro "$TEST_DIR/data/sub"
  mount_track "$TEST_DIR/data/sub"
  bundle_add_mount "$BUNDLE" "$(jq -n --arg s "$TEST_DIR/data" '{destination: "/data", type: "bind", source: $s, options: ["rbind", "rro"]}')"
  set_args sh -c 'touch /data/a 2>/dev/null && echo top-writable; touch /data/sub/b 2>/dev/null && echo sub-writable; echo done'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = done ]
  [ ! -e "$TEST_DIR/data/a" ]
  [ ! -e "$TEST_DIR/data/sub/b" ]
}

@test "a bind mount of a single file" {
  echo one-file >"$TEST_DIR/single"
  bundle_add_mount "$BUNDLE" "$(jq -n --arg s "$TEST_DIR/single" '{destination: "/etc/single", source: $s, options: ["bind", "ro"]}')"
  set_args cat /etc/single
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = one-file ]
}

@test "a bind mount target missing in a read-only rootfs is created" {
  mkdir "$TEST_DIR/data"
  bundle_add_mount "$BUNDLE" "$(jq -n --arg s "$TEST_DIR/data" '{destination: "/deep/new/dir", source: $s, options: ["bind"]}')"
  set_args ls -d /deep/new/dir
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
}

@test "bind mount options nosuid,nodev,noexec are applied" {
  mkdir "$TEST_DIR/data"
  bundle_add_mount "$BUNDLE" "$(jq -n --arg s "$TEST_DIR/data" '{destination: "/data", type: "bind", source: $s, options: ["bind", "nosuid", "nodev", "noexec"]}')"
  mounts_of /data
  [ "$status" -eq 0 ]
  [[ "$output" == *nosuid* && "$output" == *nodev* && "$output" == *noexec* ]]
}

@test "a bind mount with a missing source fails naming it, and leaves nothing" {
  bundle_add_mount "$BUNDLE" "$(jq -n --arg s "$TEST_DIR/missing" '{destination: "/data", type: "bind", source: $s, options: ["bind"]}')"
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"$TEST_DIR/missing"* || "$stderr" == *"/data"* ]]
  [ -z "$(cm list -q)" ]
}

@test "tmpfs with size and mode" {
  bundle_add_mount "$BUNDLE" '{"destination": "/scratch", "type": "tmpfs", "source": "tmpfs", "options": ["size=1m", "mode=1777", "nosuid"]}'
  set_args sh -c "grep ' /scratch ' /proc/self/mounts; stat -c %a /scratch; dd if=/dev/zero of=/scratch/big bs=1k count=2048 2>/dev/null && echo fit || echo full"
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == "tmpfs /scratch tmpfs "* ]]
  [[ "${lines[0]}" == *size=1024k* ]]
  [ "${lines[1]}" = 1777 ]
  [ "${lines[2]}" = full ]
}

# runc 1.1.5 on this bundle: the tmpfs root gets the covered directory's mode, setuid and setgid
# bits included, and that mode wins over a mode= option. A tmpfs on a new directory keeps 1777.
@test "a tmpfs over an existing directory keeps its mode, setuid/setgid included" {
  mkdir -p "$BUNDLE/rootfs/sgid" "$BUNDLE/rootfs/suid"
  chmod 2775 "$BUNDLE/rootfs/sgid"
  chmod 4750 "$BUNDLE/rootfs/suid"
  bundle_add_mount "$BUNDLE" '{"destination": "/sgid", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]}'
  bundle_add_mount "$BUNDLE" '{"destination": "/suid", "type": "tmpfs", "source": "tmpfs", "options": ["mode=0700"]}'
  bundle_add_mount "$BUNDLE" '{"destination": "/cm-new-tmpfs", "type": "tmpfs", "source": "tmpfs"}'
  set_args stat -c "%n %a" /sgid /suid /cm-new-tmpfs
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "/sgid 2775" ]
  [ "${lines[1]}" = "/suid 4750" ]
  [ "${lines[2]}" = "/cm-new-tmpfs 1777" ]
}

# runc 1.1.5 on this bundle: "tmpcopyup" copies the covered directory's files, subdirectories and
# symlinks, with their modes and owners, into the tmpfs (podman's default for /etc, /var/tmp...).
# Issue 14: the option was silently dropped (an empty tmpfs).
@test "tmpcopyup copies the covered directory into the tmpfs" {
  local d=$BUNDLE/rootfs/cu
  mkdir -p "$d/sub"
  echo content >"$d/f"
  chmod 0640 "$d/f"
  ln -s f "$d/link"
  echo deep >"$d/sub/g"
  chown -R 1000:1001 "$d/sub"
  chmod 0711 "$d"
  bundle_add_mount "$BUNDLE" '{"destination": "/cu", "type": "tmpfs", "source": "tmpfs", "options": ["tmpcopyup"]}'
  set_args sh -c 'grep -c " /cu tmpfs " /proc/self/mounts; stat -c "%n %a %u:%g" /cu /cu/f /cu/sub /cu/sub/g; readlink /cu/link; cat /cu/f /cu/sub/g; echo new >/cu/written && cat /cu/written'
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 1 ]
  [ "${lines[1]}" = "/cu 711 0:0" ]
  [ "${lines[2]}" = "/cu/f 640 0:0" ]
  [ "${lines[3]}" = "/cu/sub 755 1000:1001" ]
  [ "${lines[4]}" = "/cu/sub/g 644 1000:1001" ]
  [ "${lines[5]}" = f ]
  [ "${lines[6]}" = content ]
  [ "${lines[7]}" = deep ]
  [ "${lines[8]}" = new ]
  # The image's own directory is untouched.
  [ ! -e "$d/written" ]
}

@test "proc, sysfs (ro), devpts, mqueue and /dev/shm are mounted with their types" {
  set_args cat /proc/self/mounts
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ "$output" == *"proc /proc proc "* ]]
  [[ "$output" =~ sysfs\ /sys\ sysfs\ ro, ]]
  [[ "$output" == *" /dev/pts devpts "* ]]
  [[ "$output" == *" /dev/mqueue mqueue "* ]]
  [[ "$output" == *" /dev/shm tmpfs "* ]]
}

@test "devpts has its own instance: ptmxmode and gid as configured" {
  mounts_of /dev/pts
  [ "$status" -eq 0 ]
  [[ "$output" == *ptmxmode=666* ]]
  [[ "$output" == *gid=5* ]]
}

@test "the cgroup mount is there, read-only, and shows the container's own cgroup" {
  set_args sh -c "grep ' /sys/fs/cgroup' /proc/self/mounts; cat /proc/self/cgroup"
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  local first
  first=$(echo "$output" | grep ' /sys/fs/cgroup' | head -1)
  [ -n "$first" ]
  # Every controller mount under it (cgroup v1) is read-only too.
  ! echo "$output" | grep ' /sys/fs/cgroup/' | grep -v ' ro,'
  if codemode_part runc-cgroup-tmpfs-rw; then
    [[ "$first" == *" ro,"* || "$first" == *" ro "* ]]
  fi
}

# The spec (1.2, config.md): a relative destination "MUST be interpreted as relative to /";
# runc 1.1 does so with a warning. Not refused.
@test "a relative mount destination is taken relative to /, with a warning naming it" {
  set_cfg '.mounts += [{destination: "mnt/rel", type: "tmpfs", source: "tmpfs", options: ["size=1m"]}]'
  set_args sh -c "grep ' /mnt/rel ' /proc/self/mounts"
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ "$stdout" == "tmpfs /mnt/rel tmpfs "* ]]
  [[ "$stderr" == *"mnt/rel"*"not absolute"* ]]
  [ -z "$(cm list -q)" ]
}

@test "a second proc mount somewhere else" {
  bundle_add_mount "$BUNDLE" '{"destination": "/proc2", "type": "proc", "source": "proc"}'
  set_args sh -c 'cat /proc2/1/cmdline | tr "\0" " "'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ "$output" == "sh -c"* ]]
}

@test "mounts are applied in order: a tmpfs over a tmpfs subdir" {
  bundle_add_mount "$BUNDLE" '{"destination": "/a", "type": "tmpfs", "source": "tmpfs", "options": ["size=1m"]}'
  bundle_add_mount "$BUNDLE" '{"destination": "/a/b", "type": "tmpfs", "source": "tmpfs", "options": ["size=2m"]}'
  set_args sh -c "grep -E ' /a(/b)? ' /proc/self/mounts | awk '{print \$2}'"
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | tr '\n' ' ')" = "/a /a/b " ]
}

@test "linux.devices creates the node with its type, numbers, mode and owner" {
  set_cfg '.linux.devices = [{path: "/dev/cmtest-null", type: "c", major: 1, minor: 3, fileMode: 438, uid: 1000, gid: 1000}]
           | .linux.resources.devices += [{allow: true, type: "c", major: 1, minor: 3, access: "rwm"}]'
  set_args sh -c 'stat -c "%F %t:%T %a %u:%g" /dev/cmtest-null; echo x >/dev/cmtest-null && echo writable'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "character special file 1:3 666 1000:1000" ]
  [ "${lines[1]}" = writable ]
}

@test "the device cgroup denies a node that is present but not allowed" {
  # /dev/kmsg is c 1:11; the default rules deny everything but the standard devices.
  set_cfg '.linux.devices = [{path: "/dev/cmtest-kmsg", type: "c", major: 1, minor: 11, fileMode: 438}]'
  set_args sh -c 'head -c 1 /dev/cmtest-kmsg >/dev/null 2>&1 && echo opened || echo denied'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = denied ]
}

@test "linux.devices paths outside /dev are refused or kept inside the rootfs" {
  set_cfg '.linux.devices = [{path: "/dev/../../cmtest-evil", type: "c", major: 1, minor: 3}]'
  run_cm run -b "$BUNDLE" "$CID"
  [ ! -e "$TEST_DIR/cmtest-evil" ]
  [ ! -e /cmtest-evil ]
}

# runc 1.1.5 on this bundle: the node is made where the config says (the spec puts no limit on
# linux.devices[].path). Issue 14: refused ("not under /dev").
@test "linux.devices may put a node anywhere in the container" {
  set_cfg '.linux.devices = [{path: "/cmtest-devs/null2", type: "c", major: 1, minor: 3, fileMode: 438}]'
  set_args stat -c "%F %t:%T %a" /cmtest-devs/null2
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$stdout" = "character special file 1:3 666" ]
}

# runc 1.1.5 on this bundle (user namespace, /dev/full listed as Docker lists it): /dev/full is the
# host's node, bound once. Issue 14: "remove /dev/full: Device or resource busy".
@test "a linux.devices entry repeating a default device works in a user namespace" {
  bundle_add_namespace "$BUNDLE" user
  set_cfg '.linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
           | .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
           | .linux.devices = [{path: "/dev/full", type: "c", major: 1, minor: 7, fileMode: 438, uid: 0, gid: 0}]'
  chown -R 100000:100000 "$BUNDLE/rootfs"
  local d=$BUNDLE
  while [ "$d" != / ]; do
    chmod o+x "$d"
    d=$(dirname "$d")
  done
  set_args stat -c "%F %t:%T" /dev/full /dev/null
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "character special file 1:7" ]
  [ "${lines[1]}" = "character special file 1:3" ]
}

# runc 1.1.5 on this bundle: the file is read through the bind mount. The namespace's root
# (host uid 100000) cannot search the 0700 root-owned parent; runc opens the source as the
# host's root first. Issue 14: "open source: Permission denied".
@test "in a user namespace, a bind source below a directory the mapped root cannot search works" {
  bundle_add_namespace "$BUNDLE" user
  set_cfg '.linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
           | .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}]'
  chown -R 100000:100000 "$BUNDLE/rootfs"
  local d=$BUNDLE
  while [ "$d" != / ]; do
    chmod o+x "$d"
    d=$(dirname "$d")
  done
  mkdir -p "$TEST_DIR/private/shared"
  echo through-the-bind >"$TEST_DIR/private/shared/file"
  chmod 0700 "$TEST_DIR/private"
  chmod 0755 "$TEST_DIR/private/shared"
  bundle_add_mount "$BUNDLE" "$(jq -n --arg s "$TEST_DIR/private/shared" '{destination: "/data", source: $s, options: ["bind", "ro"]}')"
  set_args cat /data/file
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$stdout" = through-the-bind ]
}

@test "rootfsPropagation private: container mounts do not reach the host" {
  set_cfg '.linux.rootfsPropagation = "private" | .root.readonly = false'
  mkdir -p "$BUNDLE/rootfs/mnt/x"
  set_cfg '.process.capabilities.bounding += ["CAP_SYS_ADMIN"] | .process.capabilities.effective += ["CAP_SYS_ADMIN"] | .process.capabilities.permitted += ["CAP_SYS_ADMIN"]'
  set_args mount -t tmpfs none /mnt/x
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ -z "$(mounts_under "$BUNDLE")" ]
}

# The spec allows (r)unbindable; runc 1.1.5 fails both ("mount rootfs:rootfs … invalid argument":
# it makes / unbindable before binding the rootfs onto itself). Issue 28.
@test "rootfsPropagation unbindable and runbindable: the container starts with an unbindable root" {
  codemode_only rootfs-unbindable
  set_args sh -c 'awk '"'"'$5 == "/"'"'"' /proc/self/mountinfo; awk '"'"'$5 == "/proc"'"'"' /proc/self/mountinfo'
  set_cfg '.linux.rootfsPropagation = "unbindable"'
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == *" unbindable - "* ]]
  [[ "${lines[1]}" != *" unbindable - "* ]]
  set_cfg '.linux.rootfsPropagation = "runbindable"'
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == *" unbindable - "* ]]
  [[ "${lines[1]}" == *" unbindable - "* ]]
  [ -z "$(mounts_under "$BUNDLE")" ]
}

# A "cgroup2" mount without a cgroup namespace is a bind of the container's own cgroup2 directory
# (src/linux/mount_cgroup.c): mountinfo's root for it equals the path in /proc/self/cgroup, and
# nothing above or beside it is visible.
@test "cgroup2 mount without a cgroup namespace: the container's own directory, rooted where /proc/self/cgroup says" {
  [ -d /sys/fs/cgroup/unified ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || skip "no cgroup2 hierarchy on this host"
  set_cfg '.mounts |= map(select(.destination != "/sys/fs/cgroup"))
           | .mounts += [{destination: "/sys/fs/cgroup", type: "cgroup2", source: "cgroup2", options: ["ro", "nosuid", "nodev", "noexec"]}]'
  set_args sh -c 'grep " /sys/fs/cgroup " /proc/self/mountinfo | cut -d" " -f4; grep "^0::" /proc/self/cgroup | cut -d: -f3; cat /sys/fs/cgroup/cgroup.procs | wc -l; ls /sys/fs/cgroup | grep -c "^codemode$"; true'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ "${lines[1]}" == *"$CID" ]]
  if codemode_part cgroup2-own-dir; then
    [ "${lines[0]}" = "${lines[1]}" ]
    [[ "${lines[0]}" == *"$CID" ]]
    [ "${lines[2]}" -ge 1 ] # the container's processes, and only its
    [ "${lines[3]}" = 0 ]   # no view of the host's hierarchy
  fi
}

@test "cgroup2 mount in a cgroup namespace: a fresh mount rooted at the namespace" {
  [ -d /sys/fs/cgroup/unified ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || skip "no cgroup2 hierarchy on this host"
  bundle_add_namespace "$BUNDLE" cgroup
  set_cfg '.mounts |= map(select(.destination != "/sys/fs/cgroup"))
           | .mounts += [{destination: "/sys/fs/cgroup", type: "cgroup2", source: "cgroup2", options: ["ro", "nosuid", "nodev", "noexec"]}]'
  set_args sh -c 'grep " /sys/fs/cgroup " /proc/self/mountinfo | cut -d" " -f4; grep "^0::" /proc/self/cgroup | cut -d: -f3'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = / ]
  [ "${lines[1]}" = / ]
}
