#!/usr/bin/env bats
# linux.resources and linux.cgroupsPath, seen from the host (v1 hybrid or v2 unified).

load ../lib/helpers

teardown() {
  local rc=0
  cm_teardown || rc=$?
  # cgroupsPath parents made for these tests; rmdir only succeeds when empty, so a leaked
  # container cgroup stays for tests/run-all.sh to report.
  local d
  for d in /sys/fs/cgroup/*/cm-test-bats /sys/fs/cgroup/cm-test-bats; do
    [ -d "$d" ] && rmdir "$d" 2>/dev/null
  done
  return "$rc"
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
