#!/usr/bin/env bats
# linux.resources and linux.cgroupsPath, seen from the host (v1 hybrid or v2 unified).

load ../lib/helpers

teardown() {
  local rc=0 d
  # Thawed first: a test that froze a parent must not leave it (and whatever is in it) frozen.
  for d in /sys/fs/cgroup/freezer/cm-test-bats/*/ /sys/fs/cgroup/unified/cm-test-bats/*/ /sys/fs/cgroup/cm-test-bats/*/; do
    [ -f "$d/freezer.state" ] && echo THAWED >"$d/freezer.state" 2>/dev/null
    [ -f "$d/cgroup.freeze" ] && echo 0 >"$d/cgroup.freeze" 2>/dev/null
  done
  cm_teardown || rc=$?
  # cgroupsPath parents made for these tests, deepest first; rmdir only succeeds when empty, so
  # a leaked container cgroup stays for tests/run-all.sh to report.
  find /sys/fs/cgroup/*/cm-test-bats /sys/fs/cgroup/cm-test-bats -depth -type d -exec rmdir {} + 2>/dev/null
  return "$rc"
}

# in_view VIEW CMD…: CMD (killed after CM_TIMEOUT seconds) in a private mount namespace (nothing propagates back) where
# /sys/fs/cgroup is VIEW: "cgroup2" (the unified hierarchy alone: on this hybrid host it has
# hugetlb and no pids, DESIGN.md §5) or "legacy" (the v1 hierarchies, cgroup2 unmounted).
in_view() {
  local view=$1
  shift
  timeout -s KILL "$CM_TIMEOUT" unshare -m --propagation private sh -c '
    mount --make-rprivate / || exit 97
    case $0 in
      cgroup2) [ -f /sys/fs/cgroup/cgroup.controllers ] ||
        { umount -l /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup; } || exit 97 ;;
      legacy) umount -l /sys/fs/cgroup/unified || exit 97 ;;
    esac
    exec "$@"' "$view" "$@"
}

# A hybrid host (v1 controllers + cgroup2 at /sys/fs/cgroup/unified), as this machine is.
skip_unless_hybrid() {
  [ -d /sys/fs/cgroup/unified ] && [ -d /sys/fs/cgroup/freezer ] || skip "needs a hybrid cgroup host"
}

# cg_dir PID CONTROLLER: the host directory of PID's cgroup for CONTROLLER (v1), or its unified
# cgroup when the controller lives in cgroup2 (or the host is v2-only).
cg_dir() {
  local pid=$1 ctrl=$2 path
  path=$(awk -F: -v c="$ctrl" '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' "/proc/$pid/cgroup")
  if [ -n "$path" ] && [ -d "/sys/fs/cgroup/$ctrl" ]; then
    echo "/sys/fs/cgroup/$ctrl$path"
    return
  fi
  path=$(awk -F: '$1 == "0" { print $3 }' "/proc/$pid/cgroup")
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    echo "/sys/fs/cgroup$path"
  else
    echo "/sys/fs/cgroup/unified$path"
  fi
}

start_detached() {
  set_args sleep 1000
  run_cm run --detach -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  PID=$(state_field "$CID" pid)
  [ -n "$PID" ]
}

@test "memory limit lands in the container's memory cgroup" {
  set_cfg '.linux.resources.memory = {limit: 67108864}'
  start_detached
  local d
  d=$(cg_dir "$PID" memory)
  if [ -f "$d/memory.limit_in_bytes" ]; then
    [ "$(cat "$d/memory.limit_in_bytes")" = 67108864 ]
  else
    [ "$(cat "$d/memory.max")" = 67108864 ]
  fi
}

@test "pids limit lands in the pids cgroup" {
  set_cfg '.linux.resources.pids = {limit: 10}'
  start_detached
  [ "$(cat "$(cg_dir "$PID" pids)/pids.max")" = 10 ]
}

@test "the container gets a cgroup of its own, named after cgroupsPath" {
  set_cfg '.linux.cgroupsPath = "/cm-test-bats/" + $id' --arg id "$CID"
  start_detached
  grep -q ":/cm-test-bats/$CID\$" "/proc/$PID/cgroup"
}

@test "without cgroupsPath the container's cgroup is /codemode/ID, removed at delete" {
  codemode_only default-cgroup-parent
  set_cfg 'del(.linux.cgroupsPath)'
  start_detached
  grep -q ":/codemode/$CID\$" "/proc/$PID/cgroup"
  local d
  d=$(cg_dir "$PID" pids)
  [ "$d" = "${d%/codemode/$CID}/codemode/$CID" ]
  cm delete --force "$CID"
  [ ! -d "$d" ]
}

@test "delete removes the container's cgroups" {
  set_cfg '.linux.cgroupsPath = "/cm-test-bats/" + $id' --arg id "$CID"
  start_detached
  local d
  d=$(cg_dir "$PID" pids)
  [ -d "$d" ]
  cm delete --force "$CID"
  [ ! -d "$d" ]
  rmdir "${d%/*}" 2>/dev/null || true
}

@test "--cgroup-manager disabled creates no cgroup" {
  codemode_only crun-flags
  set_args cat /proc/self/cgroup
  run cm --cgroup-manager disabled run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ "$output" != *"$CID"* ]]
}

@test "the device cgroup is set up even without linux.resources.devices" {
  set_cfg 'del(.linux.resources)'
  set_args sh -c 'echo x >/dev/null && echo ok'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = ok ]
}

# runc 1.1.5 and crun 1.8.1 write nothing for a pids limit of 0, on create and on update, so it
# needs no pids controller (observed by hand in the cgroup2 view, which has none here).
@test "pids.limit 0 is not a limit: nothing is written, no pids controller is needed" {
  set_cfg '.linux.resources.pids = {limit: 50}'
  start_detached
  local d
  d=$(cg_dir "$PID" pids)
  [ "$(cat "$d/pids.max")" = 50 ]
  echo '{"pids": {"limit": 0}}' | cm update --resources - "$CID"
  [ "$(cat "$d/pids.max")" = 50 ]
  echo '{"pids": {"limit": -1}}' | cm update --resources - "$CID"
  [ "$(cat "$d/pids.max")" = max ]
  cm delete --force "$CID"

  skip_unless_hybrid
  ! grep -qw pids /sys/fs/cgroup/unified/cgroup.controllers || skip "cgroup2 has a pids controller here"
  set_args true
  set_cfg '.linux.resources.pids = {limit: 0}'
  run in_view cgroup2 "$CODEMODE" --root "$ROOT" run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  # A real limit without the controller is an error naming the field (runc and crun fail too).
  set_cfg '.linux.resources.pids = {limit: 10}'
  run in_view cgroup2 "$CODEMODE" --root "$ROOT" run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -ne 0 ]
  if codemode_part error-wording; then
    [[ $output == *"linux.resources.pids.limit"*"pids controller"* ]]
  fi
  [ ! -e "$ROOT/$CID" ]
}

@test "hugepageLimits without a hugetlb controller is an error naming the field, and leaves nothing" {
  skip_unless_hybrid
  [ ! -d /sys/fs/cgroup/hugetlb ] || skip "hugetlb is a v1 controller here"
  set_args true
  set_cfg '.linux.resources.hugepageLimits = [{pageSize: "2MB", limit: 4194304}]
    | .linux.cgroupsPath = "/cm-test-bats/" + $id' --arg id "$CID"
  # v1 alone (the cgroup2 hierarchy that holds hugetlb here unmounted): no hugetlb anywhere.
  run in_view legacy "$CODEMODE" --root "$ROOT" run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -ne 0 ]
  if codemode_part error-wording; then
    [[ $output == *"linux.resources.hugepageLimits"*"hugetlb controller"* ]]
  fi
  [ ! -e "$ROOT/$CID" ]
  [ -z "$(find /sys/fs/cgroup -maxdepth 3 -name "$CID")" ]
  # cgroup2 with hugetlb at the root but not delegated to the container: its parent holds a
  # process, so no controller can be enabled below it ("no internal processes").
  local parent=/sys/fs/cgroup/unified/cm-test-bats/busy-$CID
  mkdir -p "$parent"
  sleep 1000 3>&- &
  bg_track $!
  echo $! >"$parent/cgroup.procs"
  set_cfg '.linux.cgroupsPath = "/cm-test-bats/busy-" + $id + "/c"' --arg id "$CID"
  run in_view cgroup2 "$CODEMODE" --root "$ROOT" run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -ne 0 ]
  if codemode_part error-wording; then
    [[ $output == *"linux.resources.hugepageLimits"*"hugetlb controller"* ]]
  fi
  [ ! -e "$parent/c" ]
  kill "$(cat "$parent/cgroup.procs")"
}

# runc fills every empty level the same way; without it cgroup.procs refuses the process
# (ENOSPC) under a parent someone made and left empty, e.g. a pod cgroup.
@test "cgroup v1: empty cpuset.cpus/mems of existing parents are filled from above" {
  [ -f /sys/fs/cgroup/cpuset/cpuset.cpus ] || skip "no v1 cpuset hierarchy"
  local top=/sys/fs/cgroup/cpuset/cm-test-bats/pod-$CID
  mkdir -p "$top"
  [ -z "$(tr -d '\n' <"$top/cpuset.cpus")" ]
  set_args true
  set_cfg '.linux.cgroupsPath = "/cm-test-bats/pod-" + $id + "/" + $id' --arg id "$CID"
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(cat "$top/cpuset.cpus")" = "$(cat /sys/fs/cgroup/cpuset/cpuset.cpus)" ]
  [ "$(cat "$top/cpuset.mems")" = "$(cat /sys/fs/cgroup/cpuset/cpuset.mems)" ]
  # A cgroupsPath that is itself an existing, empty cpuset cgroup is filled too.
  local leaf=/sys/fs/cgroup/cpuset/cm-test-bats/leaf-$CID
  mkdir "$leaf"
  set_cfg '.linux.cgroupsPath = "/cm-test-bats/leaf-" + $id' --arg id "$CID"
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
}

# runc 1.1.5 and crun 1.8.1 hang (init frozen before it reports) when a parent is frozen; runc
# fails at once only when the container's own cgroup is.
@test "run and create into a frozen cgroup fail at once, naming it, and leave nothing" {
  codemode_only frozen-cgroup
  skip_unless_hybrid
  local f=/sys/fs/cgroup/freezer/cm-test-bats/frozen-$CID
  mkdir -p "$f"
  echo FROZEN >"$f/freezer.state"
  set_args echo hi
  set_cfg '.linux.cgroupsPath = "/cm-test-bats/frozen-" + $id + "/" + $id' --arg id "$CID"
  CM_TIMEOUT=20 run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ $output == *"cgroup /cm-test-bats/frozen-$CID/$CID is frozen"* ]]
  [ ! -e "$ROOT/$CID" ]
  [ -z "$(find /sys/fs/cgroup -maxdepth 4 -name "$CID")" ]
  # The container's own cgroup frozen, through create.
  set_cfg '.linux.cgroupsPath = "/cm-test-bats/frozen-" + $id' --arg id "$CID"
  CM_TIMEOUT=20 run_cm create -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ $output == *"cgroup /cm-test-bats/frozen-$CID is frozen"* ]]
  [ ! -e "$ROOT/$CID" ]
  echo THAWED >"$f/freezer.state"
  # cgroup2's freezer, in the cgroup2 view.
  local u=/sys/fs/cgroup/unified/cm-test-bats/frozen2-$CID
  mkdir -p "$u"
  echo 1 >"$u/cgroup.freeze"
  set_cfg '.linux.cgroupsPath = "/cm-test-bats/frozen2-" + $id + "/" + $id' --arg id "$CID"
  CM_TIMEOUT=20 run in_view cgroup2 "$CODEMODE" --root "$ROOT" run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ $output == *"cgroup /cm-test-bats/frozen2-$CID/$CID is frozen"* ]]
  [ ! -e "$u/$CID" ]
  echo 0 >"$u/cgroup.freeze"
}

# Observed with runc 1.1.5 (devices.list): linux.devices adds no allow rule; a default device
# the config lists itself (same path) loses its default allow; other defaults are appended after
# the config's rules, so they win over its denies.
@test "linux.devices only makes nodes: linux.resources.devices alone decides access (runc)" {
  [ -c /dev/fuse ] || skip "no /dev/fuse to open"
  set_args sh -c 'for d in fuse zero null; do if (exec 3<>/dev/$d) 2>/dev/null; then echo $d:open; else echo $d:denied; fi; done'
  set_cfg '.linux.devices = [{path: "/dev/fuse", type: "c", major: 10, minor: 229, fileMode: 438},
                             {path: "/dev/zero", type: "c", major: 1, minor: 5, fileMode: 438}]
    | .linux.resources.devices = [{allow: false, access: "rwm"},
                                  {allow: false, type: "c", major: 1, minor: 5, access: "rwm"}]'
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(echo $stdout)" = "fuse:denied zero:denied null:open" ]
  # Allowed by a rule, the node opens; /dev/zero, not listed now, keeps its default allow.
  set_cfg '.linux.devices = [.linux.devices[0]]
    | .linux.resources.devices += [{allow: true, type: "c", major: 10, minor: 229, access: "rw"}]'
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(echo $stdout)" = "fuse:open zero:open null:open" ]
}

# runc ignores access letters other than r, w and m ("rwa" in its own tests and from
# `update --resources` callers): the rule applies with the letters it knows (issue 28).
@test "a device rule's access letters beyond r, w and m are ignored, as runc does" {
  [ -c /dev/fuse ] || skip "no /dev/fuse to open"
  set_args sh -c 'if (exec 3<>/dev/fuse) 2>/dev/null; then echo fuse:rw; else echo fuse:denied; fi
    if (exec 3</dev/zero) 2>/dev/null; then echo zero:r; else echo zero:denied; fi
    if (exec 3>/dev/zero) 2>/dev/null; then echo zero:w; else echo zero:no-w; fi'
  set_cfg '.linux.devices = [{path: "/dev/fuse", type: "c", major: 10, minor: 229, fileMode: 438},
                             {path: "/dev/zero", type: "c", major: 1, minor: 5, fileMode: 438}]
    | .linux.resources.devices = [{allow: false, access: "rwm"},
                                  {allow: true, type: "c", major: 10, minor: 229, access: "rwa"},
                                  {allow: true, type: "c", major: 1, minor: 5, access: "rx"}]'
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(echo $stdout)" = "fuse:rw zero:r zero:no-w" ]
}

# cg_dirs PID: "CONTROLLERS DIR" per hierarchy PID is in (v1 lines and cgroup2's "0::").
cg_dirs() {
  local n ctrls path mnt
  while IFS=: read -r n ctrls path; do
    if [ -z "$ctrls" ]; then
      mnt=/sys/fs/cgroup
      [ -d /sys/fs/cgroup/unified ] && mnt=/sys/fs/cgroup/unified
    else
      mnt=/sys/fs/cgroup/${ctrls#name=}
    fi
    [ -d "$mnt$path" ] && echo "${ctrls:--} $mnt$path"
  done <"/proc/$1/cgroup"
}

# runc's `exec --cgroup [controller[,controller]:]path` (observed with runc 1.1.5 on this host):
# a path alone moves every hierarchy; with controllers, only theirs.
@test "exec --cgroup runs the process in an existing sub-cgroup, in every hierarchy or the named ones" {
  start_detached
  local ctrls dir f
  while read -r ctrls dir; do
    mkdir "$dir/sub"
    # A new v1 cpuset cgroup takes no task until it has cpus and mems (runc does not fill them).
    for f in cpuset.cpus cpuset.mems; do
      [ "$ctrls" = cpuset ] && cat "$dir/$f" >"$dir/sub/$f"
    done
  done < <(cg_dirs "$PID")
  run_cm exec --cgroup sub "$CID" cat /proc/self/cgroup
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(grep -c . <<<"$stdout")" -eq "$(grep -c . "/proc/$PID/cgroup")" ]
  ! grep -v '/sub$' <<<"$stdout"
  if grep -q ':memory:' "/proc/$PID/cgroup"; then
    run_cm exec --cgroup memory:sub --cgroup cpu,pids:/sub/. "$CID" cat /proc/self/cgroup
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep '/sub$' <<<"$stdout" | cut -d: -f2 | sort | tr '\n' ' ')" = "cpu memory pids " ]
  fi
  # It joins, it never makes one; and it stays inside the container's cgroup.
  run_cm exec --cgroup nosuch "$CID" true
  [ "$status" -ne 0 ]
  [[ $output == *nosuch* ]]
  run_cm exec --cgroup ../elsewhere "$CID" true
  [ "$status" -ne 0 ]
  [[ $output == *../elsewhere* ]]
  run_cm exec --cgroup bogus:sub "$CID" true
  [ "$status" -ne 0 ]
  [[ $output == *bogus* ]]
}

# runc 1.1.5 fails with ENOSPC on an empty cpuset sub-cgroup; codemode fills it from the
# container's cgroup, as it does for the container's own parents.
@test "exec --cgroup into an empty v1 cpuset sub-cgroup fills it first" {
  codemode_only exec-cgroup-cpuset
  [ -f /sys/fs/cgroup/cpuset/cpuset.cpus ] || skip "no v1 cpuset hierarchy"
  start_detached
  local ctrls dir
  while read -r ctrls dir; do mkdir "$dir/sub"; done < <(cg_dirs "$PID")
  run_cm exec --cgroup cpuset:sub "$CID" cat /proc/self/cgroup
  echo "$output"
  [ "$status" -eq 0 ]
  grep -q ':cpuset:.*/sub$' <<<"$stdout"
}
